// Tensors whose bytes are made when they are written (ir::TensorData::
// Deferred, TensorEncoder::produce and produce_streamed): the artifact
// equals one written from the same bytes in memory, each tensor is asked
// for once, and a missing producer or a wrong size is an Internal error
// that leaves no output.
#include <algorithm>
#include <map>
#include <mutex>
#include <string>

#include "formats/shard/writer/artifact_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/writer/writer_test_util.h"
#include "support/status_macros.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_writer {
namespace {

using ::slimpack::shard_writer::testing::Exists;
using ::slimpack::shard_writer::testing::F32Tensor;
using ::slimpack::shard_writer::testing::HashFiles;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::slimpack::testing::TempDir;
using ::testing::HasSubstr;

ir::Model ModelOf(const std::vector<ir::Tensor>& tensors) {
  ir::Model m;
  for (const ir::Tensor& t : tensors) EXPECT_THAT(m.graph.AddInitializer(t), IsOk());
  return m;
}

std::vector<ir::Tensor> Tensors() {
  std::vector<ir::Tensor> out;
  for (int i = 0; i < 6; ++i) {
    ir::Tensor t = F32Tensor("w" + std::to_string(i), {64, 48 + i}, 11 + i);
    t.layer = i / 2;
    out.push_back(std::move(t));
  }
  return out;
}

// `real` with every tensor's data Deferred (the writer must ask for it);
// the bytes it will be asked for, by name, in *bytes.
std::vector<ir::Tensor> Deferred(const std::vector<ir::Tensor>& real,
                                 std::map<std::string, ir::TensorData>* bytes) {
  std::vector<ir::Tensor> placeholders = real;
  for (ir::Tensor& t : placeholders) {
    (*bytes)[t.name] = t.data;
    t.data = ir::TensorData::Deferred(t.data.size());
  }
  return placeholders;
}

TEST(DeferredTensorsTest, ProducedBytesGiveTheSameArtifact) {
  TempDir dir;
  const std::vector<ir::Tensor> real = Tensors();
  ArtifactOptions options;
  options.threads = 2;
  ASSERT_THAT(WriteArtifact(ModelOf(real), dir.File("in_memory"), options), IsOk());

  std::map<std::string, ir::TensorData> bytes;
  const std::vector<ir::Tensor> placeholders = Deferred(real, &bytes);
  std::mutex mu;
  std::map<std::string, int> asked;
  options.encoder.produce = [&](const ir::Tensor& t) -> absl::StatusOr<ir::TensorData> {
    std::lock_guard<std::mutex> lock(mu);
    ++asked[t.name];
    return bytes.at(t.name);
  };
  ASSERT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("deferred"), options), IsOk());
  EXPECT_EQ(HashFiles(dir.File("deferred")), HashFiles(dir.File("in_memory")));
  ASSERT_EQ(asked.size(), real.size());
  for (const auto& [name, n] : asked) EXPECT_EQ(n, 1) << name;

  // With a --dtype cast the produced bytes are cast like any tensor's.
  ArtifactOptions cast = options;
  cast.encoder = FloatCastEncoder(ir::DType::kF16);
  ArtifactOptions cast_deferred = cast;
  cast_deferred.encoder.produce = options.encoder.produce;
  ASSERT_THAT(WriteArtifact(ModelOf(real), dir.File("f16"), cast), IsOk());
  ASSERT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("f16_deferred"), cast_deferred),
              IsOk());
  EXPECT_EQ(HashFiles(dir.File("f16_deferred")), HashFiles(dir.File("f16")));
}

// produce_streamed hands the bytes over in pieces (here of 100 bytes and
// a short last one); a tensor cast by --dtype still goes through produce.
TEST(DeferredTensorsTest, StreamedPiecesGiveTheSameArtifact) {
  TempDir dir;
  const std::vector<ir::Tensor> real = Tensors();
  ArtifactOptions options;
  options.threads = 2;
  ASSERT_THAT(WriteArtifact(ModelOf(real), dir.File("in_memory"), options), IsOk());
  std::map<std::string, ir::TensorData> bytes;
  const std::vector<ir::Tensor> placeholders = Deferred(real, &bytes);
  std::mutex mu;
  std::map<std::string, int> streamed, produced;
  options.encoder.produce = [&](const ir::Tensor& t) -> absl::StatusOr<ir::TensorData> {
    std::lock_guard<std::mutex> lock(mu);
    ++produced[t.name];
    return bytes.at(t.name);
  };
  options.encoder.produce_streamed = [&](const ir::Tensor& t,
                                         const TensorEncoder::Sink& sink) -> absl::Status {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++streamed[t.name];
    }
    const ir::TensorData& d = bytes.at(t.name);
    for (uint64_t at = 0; at < d.size(); at += 100) {
      RETURN_IF_ERROR(sink(d.data() + at, std::min<uint64_t>(100, d.size() - at)));
    }
    return absl::OkStatus();
  };
  ASSERT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("streamed"), options), IsOk());
  EXPECT_EQ(HashFiles(dir.File("streamed")), HashFiles(dir.File("in_memory")));
  EXPECT_EQ(streamed.size(), real.size());
  EXPECT_TRUE(produced.empty());
  for (const auto& [name, n] : streamed) EXPECT_EQ(n, 1) << name;

  ArtifactOptions cast;
  cast.encoder = FloatCastEncoder(ir::DType::kF16);
  ArtifactOptions cast_deferred = cast;
  cast_deferred.encoder.produce = options.encoder.produce;
  cast_deferred.encoder.produce_streamed = options.encoder.produce_streamed;
  ASSERT_THAT(WriteArtifact(ModelOf(real), dir.File("f16"), cast), IsOk());
  ASSERT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("f16_deferred"), cast_deferred),
              IsOk());
  EXPECT_EQ(HashFiles(dir.File("f16_deferred")), HashFiles(dir.File("f16")));
  EXPECT_EQ(produced.size(), real.size());
}

// Too few or too many streamed bytes, or the sink's own error, fail the
// write naming the tensor and leave nothing behind.
TEST(DeferredTensorsTest, StreamedWrongSizeIsInternalAndWritesNothing) {
  TempDir dir;
  std::vector<ir::Tensor> tensors = Tensors();
  const uint64_t size = tensors[3].data.size();
  tensors[3].data = ir::TensorData::Deferred(size);
  ArtifactOptions options;
  std::vector<uint8_t> zeros(size + 8);
  options.encoder.produce_streamed = [&](const ir::Tensor&,
                                         const TensorEncoder::Sink& sink) -> absl::Status {
    return sink(zeros.data(), 16);
  };
  EXPECT_THAT(WriteArtifact(ModelOf(tensors), dir.File("short"), options),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("'w3': produced 16 bytes, planned " + std::to_string(size))));
  EXPECT_FALSE(Exists(dir.File("short")));
  options.encoder.produce_streamed = [&](const ir::Tensor&,
                                         const TensorEncoder::Sink& sink) -> absl::Status {
    RETURN_IF_ERROR(sink(zeros.data(), size));
    return sink(zeros.data(), 8);
  };
  EXPECT_THAT(WriteArtifact(ModelOf(tensors), dir.File("long"), options),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("'w3': produced more than the planned " + std::to_string(size))));
  EXPECT_FALSE(Exists(dir.File("long")));
  options.encoder.produce_streamed = [](const ir::Tensor& t,
                                        const TensorEncoder::Sink&) -> absl::Status {
    return absl::InvalidArgumentError("tensor '" + t.name + "': bad scale");
  };
  EXPECT_THAT(WriteArtifact(ModelOf(tensors), dir.File("c"), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'w3': bad scale")));
  EXPECT_FALSE(Exists(dir.File("c")));
  std::vector<std::string> left = testing::ListDir(dir.path());
  EXPECT_TRUE(left.empty()) << left.size() << " entries left";
}

TEST(DeferredTensorsTest, NoProducerOrWrongSizeIsInternalAndWritesNothing) {
  TempDir dir;
  std::vector<ir::Tensor> tensors = Tensors();
  const uint64_t size = tensors[3].data.size();
  tensors[3].data = ir::TensorData::Deferred(size);
  ArtifactOptions options;
  EXPECT_THAT(WriteArtifact(ModelOf(tensors), dir.File("a"), options),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("'w3'")));
  EXPECT_FALSE(Exists(dir.File("a")));
  options.encoder.produce = [](const ir::Tensor&) -> absl::StatusOr<ir::TensorData> {
    return ir::TensorData::Owned(std::vector<uint8_t>(16));
  };
  EXPECT_THAT(WriteArtifact(ModelOf(tensors), dir.File("b"), options),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("'w3': produced 16 bytes, planned " + std::to_string(size))));
  EXPECT_FALSE(Exists(dir.File("b")));
  // A producer's own error reaches the caller as it is.
  options.encoder.produce = [](const ir::Tensor& t) -> absl::StatusOr<ir::TensorData> {
    return absl::InvalidArgumentError("tensor '" + t.name + "': bad scale");
  };
  EXPECT_THAT(WriteArtifact(ModelOf(tensors), dir.File("c"), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'w3': bad scale")));
  EXPECT_FALSE(Exists(dir.File("c")));
  std::vector<std::string> left = testing::ListDir(dir.path());
  EXPECT_TRUE(left.empty()) << left.size() << " entries left, first " << left[0];
}

}  // namespace
}  // namespace slimpack::shard_writer

// Tensors whose bytes are made when they are written (ir::TensorData::
// Deferred, TensorEncoder::produce and produce_streamed): the artifact
// equals one written from the same bytes in memory, each tensor is asked
// for once, and a missing producer or a wrong size is an Internal error
// that leaves no output. Sparse ones are packed and checked against their
// records as they are made.
#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
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

// Sparse tensors whose bytes are made when written (sparse_tensors.h
// ProduceSparse): `n` f32 [32, 40] tensors with 2:4 sparsity (positions 1
// and 3 of every group zero, and 0 and 3 in row 5), one unstructured
// (every third element zero) and a dense one.
std::vector<ir::Tensor> SparseTensors() {
  std::vector<ir::Tensor> out;
  for (int i = 0; i < 3; ++i) {
    ir::Tensor t = F32Tensor("s" + std::to_string(i), {32, 40}, 21 + i);
    std::vector<float> w(32 * 40);
    std::memcpy(w.data(), t.data.data(), w.size() * 4);
    for (int64_t k = 0; k < 32 * 40; ++k) {
      const int64_t pos = k % 4;
      const bool zero = i == 2 ? k % 3 == 0
                               : (k / 40 == 5 ? (pos == 0 || pos == 3) : (pos == 1 || pos == 3));
      if (zero) w[static_cast<size_t>(k)] = 0.0f;
    }
    std::vector<uint8_t> raw(w.size() * 4);
    std::memcpy(raw.data(), w.data(), raw.size());
    t.data = ir::TensorData::Owned(std::move(raw));
    t.sparsity.pattern = i == 2 ? ir::SparsityPattern::kUnstructured : ir::SparsityPattern::k2of4;
    t.sparsity.criterion = "magnitude";
    t.layer = i;
    out.push_back(std::move(t));
  }
  out.push_back(F32Tensor("dense", {16, 8}, 5));
  return out;
}

uint64_t ZerosOf(const ir::TensorData& d) {
  const float* w = reinterpret_cast<const float*>(d.data());
  return static_cast<uint64_t>(std::count(w, w + d.size() / 4, 0.0f));
}

TEST(DeferredTensorsTest, SparseTensorsArePackedAndCheckedAsTheyAreMade) {
  TempDir dir;
  const std::vector<ir::Tensor> real = SparseTensors();
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
  // The dense tensor streams; the sparse ones must not reach this.
  options.encoder.produce_streamed = [&](const ir::Tensor& t, const TensorEncoder::Sink& sink) {
    EXPECT_EQ(t.name, "dense");
    const ir::TensorData& d = bytes.at(t.name);
    return sink(d.data(), d.size());
  };
  options.encoder.sparse_zeros = [&](const ir::Tensor& t) -> std::optional<uint64_t> {
    return ZerosOf(bytes.at(t.name));
  };
  ASSERT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("deferred"), options), IsOk());
  EXPECT_EQ(HashFiles(dir.File("deferred")), HashFiles(dir.File("in_memory")));
  // Each sparse tensor made once for its values and indices.
  EXPECT_EQ(asked, (std::map<std::string, int>{{"s0", 1}, {"s1", 1}, {"s2", 1}}));

  // Stored dense (no packing) too.
  ArtifactOptions dense = options;
  dense.pack_sparse_2_4 = false;
  ArtifactOptions dense_real;
  dense_real.pack_sparse_2_4 = false;
  ASSERT_THAT(WriteArtifact(ModelOf(real), dir.File("dense_in_memory"), dense_real), IsOk());
  ASSERT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("dense_deferred"), dense), IsOk());
  EXPECT_EQ(HashFiles(dir.File("dense_deferred")), HashFiles(dir.File("dense_in_memory")));
}

TEST(DeferredTensorsTest, SparseTensorsThatBreakTheirRecordWriteNothing) {
  TempDir dir;
  const std::vector<ir::Tensor> real = SparseTensors();
  std::map<std::string, ir::TensorData> bytes;
  const std::vector<ir::Tensor> placeholders = Deferred(real, &bytes);
  ArtifactOptions options;
  options.threads = 2;
  options.encoder.produce = [&](const ir::Tensor& t) { return bytes.at(t.name); };
  // No zero count for the record: refused before anything is written.
  EXPECT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("a"), options),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("'s0': sparse, its bytes made")));
  // A count the bytes do not have.
  options.encoder.sparse_zeros = [&](const ir::Tensor& t) -> std::optional<uint64_t> {
    return ZerosOf(bytes.at(t.name)) + (t.name == "s2" ? 1 : 0);
  };
  EXPECT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("b"), options),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("'s2': " + std::to_string(ZerosOf(bytes.at("s2"))) +
                                 " zeros written, its sparsity record states")));
  // Bytes with three nonzeros in a group of a 2:4 tensor.
  std::vector<uint8_t> broken(bytes.at("s1").data(), bytes.at("s1").data() + bytes.at("s1").size());
  float one = 1.0f;
  std::memcpy(broken.data() + 4 * (7 * 40 + 1), &one, 4);  // row 7, group 0: 3 nonzeros
  std::map<std::string, ir::TensorData> bad = bytes;
  bad["s1"] = ir::TensorData::Owned(broken);
  options.encoder.produce = [&](const ir::Tensor& t) { return bad.at(t.name); };
  options.encoder.sparse_zeros = [&](const ir::Tensor& t) -> std::optional<uint64_t> {
    return ZerosOf(bad.at(t.name));
  };
  EXPECT_THAT(WriteArtifact(ModelOf(placeholders), dir.File("c"), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'s1': recorded as 2:4 sparse but a group of 4 inputs holds 3")));
  std::vector<std::string> left = testing::ListDir(dir.path());
  EXPECT_TRUE(left.empty()) << left.size() << " entries left, first " << left[0];
}

}  // namespace
}  // namespace slimpack::shard_writer

// External data: zero-copy views into one mapping per file, key handling,
// checksums, Constant values in external data, models over 2 GiB, and the
// confined opener under both strategies.
#include <fcntl.h>
#include <openssl/sha.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "formats/onnx/onnx_importer.h"
#include "formats/onnx/safe_open.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/onnx/onnx_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::onnx_format {
namespace {

using ::slimpack::onnx_format::testing::AddModel;
using ::slimpack::onnx_format::testing::Bytes;
using ::slimpack::onnx_format::testing::FloatTensor;
using ::slimpack::onnx_format::testing::MakeExternal;
using ::slimpack::onnx_format::testing::ParseModel;
using ::slimpack::onnx_format::testing::ScratchDir;
using ::slimpack::onnx_format::testing::ValuesOf;
using ::slimpack::onnx_format::testing::WriteFile;
using ::slimpack::onnx_format::testing::WriteModel;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// AddModel() plus `w` (f32[4]) at offset 0 and a second consumer of `b`
// (f32[4]) at offset 64, both in `location`.
onnx::ModelProto TwoExternalWeights(const std::string& location) {
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  h = Add(x, w)
  y = Mul(h, b)
}
)ONNX");
  auto* w = proto.mutable_graph()->add_initializer();
  *w = FloatTensor("w", {4}, {});
  MakeExternal(w, {{"location", location}, {"offset", "0"}, {"length", "16"}});
  auto* b = proto.mutable_graph()->add_initializer();
  *b = FloatTensor("b", {4}, {});
  MakeExternal(b, {{"location", location}, {"offset", "64"}, {"length", "16"}});
  return proto;
}

std::string TwoWeightsFile() {
  std::string data = Bytes<float>({1, 2, 3, 4});
  data.resize(64, '\0');
  data += Bytes<float>({5, 6, 7, 8});
  return data;
}

TEST(ExternalDataTest, TensorsAreViewsIntoOneMappingPerFile) {
  ScratchDir dir;
  WriteModel(TwoExternalWeights("weights.bin"), dir.File("model.onnx"));
  WriteFile(dir.File("weights.bin"), TwoWeightsFile());
  auto model = ImportOnnx(dir.File("model.onnx"));
  ASSERT_THAT(model, IsOk());
  const ir::Tensor* w = model->graph.FindInitializer("w");
  const ir::Tensor* b = model->graph.FindInitializer("b");
  ASSERT_NE(w, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(w->data.is_view());
  EXPECT_THAT(ValuesOf<float>(w->data), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(ValuesOf<float>(b->data), ElementsAre(5, 6, 7, 8));
  // Same mapping: the views are exactly the offset difference apart.
  EXPECT_EQ(b->data.data() - w->data.data(), 64);
  EXPECT_EQ(b->provenance.file, dir.File("weights.bin"));
  EXPECT_EQ(b->provenance.offset, 64);
  EXPECT_THAT(model->input_files,
              ElementsAre(dir.File("model.onnx"), dir.File("weights.bin")));
}

TEST(ExternalDataTest, LengthMayBeOmittedAndLocationIsNormalized) {
  ScratchDir dir;
  ASSERT_EQ(::mkdir(dir.File("sub").c_str(), 0755), 0);
  onnx::ModelProto proto = AddModel();
  auto* w = proto.mutable_graph()->add_initializer();
  *w = FloatTensor("w", {4}, {});
  MakeExternal(w, {{"location", "./sub//w.data"}, {"offset", "4"}});
  WriteModel(proto, dir.File("model.onnx"));
  WriteFile(dir.File("sub/w.data"), Bytes<float>({0, 9, 8, 7, 6}));
  auto model = ImportOnnx(dir.File("model.onnx"));
  ASSERT_THAT(model, IsOk());
  EXPECT_THAT(ValuesOf<float>(model->graph.FindInitializer("w")->data),
              ElementsAre(9, 8, 7, 6));
  EXPECT_THAT(model->input_files,
              ElementsAre(dir.File("model.onnx"), dir.File("sub/w.data")));
}

std::string Sha1Hex(const std::string& bytes) {
  unsigned char digest[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(),
       digest);
  std::string hex;
  char buf[3];
  for (unsigned char c : digest) {
    std::snprintf(buf, sizeof(buf), "%02x", c);
    hex += buf;
  }
  return hex;
}

TEST(ExternalDataTest, ChecksumOfTheWholeFileIsVerified) {
  ScratchDir dir;
  std::string data = TwoWeightsFile();
  onnx::ModelProto proto = TwoExternalWeights("weights.bin");
  auto* entry = proto.mutable_graph()->mutable_initializer(1)->add_external_data();
  entry->set_key("checksum");
  entry->set_value(Sha1Hex(data));
  WriteModel(proto, dir.File("model.onnx"));
  WriteFile(dir.File("weights.bin"), data);
  EXPECT_THAT(ImportOnnx(dir.File("model.onnx")), IsOk());

  data[70] ^= 1;  // same size, different bytes
  WriteFile(dir.File("weights.bin"), data);
  EXPECT_THAT(ImportOnnx(dir.File("model.onnx")),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("weights.bin' has SHA-1")));
  OnnxImportOptions lenient;
  lenient.verify_external_checksums = false;
  EXPECT_THAT(ImportOnnx(dir.File("model.onnx"), lenient), IsOk());
}

TEST(ExternalDataTest, ConstantNodeValueMayLiveInExternalData) {
  ScratchDir dir;
  onnx::ModelProto proto = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[4] x) => (float[4] y) {
  w = Constant <value = float[4] {0.0, 0.0, 0.0, 0.0}> ()
  y = Add(x, w)
}
)ONNX");
  proto.mutable_graph()->mutable_node(0)->set_name("const_w");
  auto* value = proto.mutable_graph()->mutable_node(0)->mutable_attribute(0)
                    ->mutable_t();
  MakeExternal(value, {{"location", "c.data"}, {"offset", "8"}});
  WriteModel(proto, dir.File("model.onnx"));
  WriteFile(dir.File("c.data"), Bytes<float>({0, 0, 4, 3, 2, 1}));
  auto model = ImportOnnx(dir.File("model.onnx"));
  ASSERT_THAT(model, IsOk());
  const ir::Tensor* w = model->graph.FindInitializer("w");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->data.is_view());
  EXPECT_THAT(ValuesOf<float>(w->data), ElementsAre(4, 3, 2, 1));
  EXPECT_THAT(w->provenance.source_nodes, ElementsAre("const_w"));
  EXPECT_EQ(w->provenance.file, dir.File("c.data"));
  EXPECT_EQ(w->provenance.offset, 8);
}

// Two f32 tensors of 1.1 GiB each in a sparse 2.2 GiB file: the weights
// exceed protobuf's 2 GiB limit and the second offset exceeds 2^31. The file
// takes no disk space and nothing but two sentinels is ever read.
TEST(ExternalDataTest, WeightsOver2GiBInASparseFile) {
  ScratchDir dir;
  constexpr int64_t kElems = (1100ll << 20) / 4;
  constexpr uint64_t kBytes = kElems * 4;
  constexpr uint64_t kSecond = kBytes + 64;
  onnx::ModelProto proto = TwoExternalWeights("big.data");
  for (int i = 0; i < 2; ++i) {
    auto* t = proto.mutable_graph()->mutable_initializer(i);
    t->clear_dims();
    t->add_dims(kElems);
    t->clear_external_data();
    MakeExternal(t, {{"location", "big.data"},
                     {"offset", std::to_string(i == 0 ? 0 : kSecond)},
                     {"length", std::to_string(kBytes)}});
  }
  onnx::ModelProto dynamic = ParseModel(R"ONNX(
<ir_version: 8, opset_import: ["" : 17]>
g (float[M] x) => (float[M] y) { h = Add(x, w) y = Mul(h, b) }
)ONNX");
  *proto.mutable_graph()->mutable_input() = dynamic.graph().input();
  *proto.mutable_graph()->mutable_output() = dynamic.graph().output();
  WriteModel(proto, dir.File("model.onnx"));

  int fd = ::open(dir.File("big.data").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, static_cast<off_t>(kSecond + kBytes)), 0);
  const float first = 1.25f, last = -7.5f;
  ASSERT_EQ(::pwrite(fd, &first, 4, 0), 4);
  ASSERT_EQ(::pwrite(fd, &last, 4, static_cast<off_t>(kSecond + kBytes - 4)),
            4);
  ::close(fd);

  auto model = ImportOnnx(dir.File("model.onnx"));
  ASSERT_THAT(model, IsOk());
  const ir::Tensor* w = model->graph.FindInitializer("w");
  const ir::Tensor* b = model->graph.FindInitializer("b");
  ASSERT_EQ(w->data.size(), kBytes);
  ASSERT_EQ(b->data.size(), kBytes);
  EXPECT_EQ(b->provenance.offset, static_cast<int64_t>(kSecond));
  float v;
  std::memcpy(&v, w->data.data(), 4);
  EXPECT_EQ(v, first);
  std::memcpy(&v, b->data.data() + kBytes - 4, 4);
  EXPECT_EQ(v, last);
}

// The confined opener, with openat2 (when the kernel has it) and with the
// per-component O_NOFOLLOW walk.
class OpenBeneathTest : public ::testing::TestWithParam<OpenStrategy> {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir(dir_.File("sub").c_str(), 0755), 0);
    WriteFile(dir_.File("sub/real.bin"), "abc");
    WriteFile(outside_.File("secret.bin"), "secret");
    ASSERT_EQ(::symlink(outside_.File("secret.bin").c_str(),
                        dir_.File("link.bin").c_str()), 0);
    ASSERT_EQ(::symlink(outside_.path().c_str(), dir_.File("linkdir").c_str()),
              0);
    ASSERT_EQ(::symlink("sub", dir_.File("sublink").c_str()), 0);
    ASSERT_EQ(::link(outside_.File("secret.bin").c_str(),
                     dir_.File("hard.bin").c_str()), 0);
    ASSERT_EQ(::mkfifo(dir_.File("fifo").c_str(), 0644), 0);
    dir_fd_ = ::open(dir_.path().c_str(), O_RDONLY | O_DIRECTORY);
    ASSERT_GE(dir_fd_, 0);
  }
  void TearDown() override { ::close(dir_fd_); }

  absl::StatusOr<int> Open(const std::string& location) {
    return OpenBeneath(dir_fd_, location, GetParam());
  }

  ScratchDir dir_;
  ScratchDir outside_;
  int dir_fd_ = -1;
};

TEST_P(OpenBeneathTest, OpensARegularFileInASubdirectory) {
  auto fd = Open("./sub/real.bin");
  ASSERT_THAT(fd, IsOk());
  char buf[4] = {};
  EXPECT_EQ(::read(*fd, buf, 3), 3);
  EXPECT_STREQ(buf, "abc");
  ::close(*fd);
}

TEST_P(OpenBeneathTest, RejectsSymlinkedFile) {
  EXPECT_THAT(Open("link.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'link.bin' is or passes through a symbolic "
                                 "link")));
}

TEST_P(OpenBeneathTest, RejectsSymlinkedDirectoryEvenIfItStaysInside) {
  EXPECT_THAT(Open("linkdir/secret.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("symbolic link")));
  EXPECT_THAT(Open("sublink/real.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("symbolic link")));
}

TEST_P(OpenBeneathTest, RejectsHardLink) {
  EXPECT_THAT(Open("hard.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'hard.bin' has 2 hard links")));
}

TEST_P(OpenBeneathTest, RejectsFifoWithoutBlocking) {
  EXPECT_THAT(Open("fifo"), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("not a regular file")));
}

TEST_P(OpenBeneathTest, RejectsDirectoryAndMissingFile) {
  EXPECT_THAT(Open("sub"), StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("not a regular file")));
  EXPECT_THAT(Open("sub/none.bin"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("'sub/none.bin' does not exist")));
  EXPECT_THAT(Open("sub/real.bin/x"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("not a directory")));
}

TEST_P(OpenBeneathTest, RejectsEscapesBeforeTouchingTheFileSystem) {
  EXPECT_THAT(Open("sub/../../x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("'..' component")));
  EXPECT_THAT(Open(outside_.File("secret.bin")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is absolute")));
  EXPECT_THAT(Open("..\\secret.bin"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'..' component")));
  EXPECT_THAT(Open(std::string("sub/real.bin\0x", 14)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("NUL byte")));
}

INSTANTIATE_TEST_SUITE_P(
    Strategies, OpenBeneathTest,
    ::testing::Values(OpenStrategy::kAuto, OpenStrategy::kComponentWalk),
    [](const auto& info) {
      return info.param == OpenStrategy::kAuto ? "Openat2" : "ComponentWalk";
    });

TEST(NormalizeRelativeLocationTest, DropsEmptyAndDotComponents) {
  EXPECT_EQ(NormalizeRelativeLocation("./a//b/./c.data"), "a/b/c.data");
  EXPECT_EQ(NormalizeRelativeLocation("w.data"), "w.data");
}

}  // namespace
}  // namespace slimpack::onnx_format

// Dataset rules: directory order, batch handling, token files, random data,
// digests, and one specific error per kind of bad dataset.
#include "calibration/dataset.h"

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include "formats/numpy/numpy_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/calibration/test_data.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::calibration {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string MakeTempDir() { return calibration::test_data::NewTempDir("dataset_test"); }

ir::Tensor F32Tensor(std::string name, std::vector<int64_t> dims, float start) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = ir::DType::kF32;
  t.dims = dims;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<uint8_t> bytes(4 * n);
  for (int64_t i = 0; i < n; ++i) {
    const float v = start + i;
    std::memcpy(bytes.data() + 4 * i, &v, 4);
  }
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

ir::ValueInfo Input(std::string name, std::vector<ir::Dim> dims,
                    ir::DType dtype = ir::DType::kF32) {
  return ir::ValueInfo{std::move(name), dtype, ir::Shape(std::move(dims))};
}

// [batch, 2] f32 input "x".
std::vector<ir::ValueInfo> OneInput() {
  return {Input("x", {ir::Dim::Symbolic("batch"), ir::Dim::Static(2)})};
}

std::vector<std::string> DrainSources(Dataset& d) {
  std::vector<std::string> out;
  while (true) {
    auto s = d.Next();
    EXPECT_THAT(s.status(), IsOk());
    if (!s.ok() || !s->has_value()) break;
    out.push_back((*s)->source);
  }
  return out;
}

TEST(DatasetTest, DirectoryIsSortedByteWiseAndIgnoresOtherFiles) {
  const std::string dir = MakeTempDir();
  for (const char* name : {"b.npz", "a.npz", "B.npz", "10.npz"}) {
    ASSERT_THAT(numpy::WriteNpz(dir + "/" + name, {F32Tensor("x", {2}, 0)}), IsOk());
  }
  std::ofstream(dir + "/README.md") << "not data";
  auto d = Dataset::Open({dir}, OneInput(), {});
  ASSERT_THAT(d.status(), IsOk());
  EXPECT_EQ(DrainSources(*d), (std::vector<std::string>{"10.npz", "B.npz", "a.npz", "b.npz"}));
  ASSERT_EQ(d->files().size(), 4u);
  EXPECT_EQ(d->files()[0].name, "10.npz");
  EXPECT_EQ(d->files()[0].sha256.size(), 64u);
}

TEST(DatasetTest, BatchesAreCutIntoRunsAndRankMinusOneGetsABatchDim) {
  const std::string dir = MakeTempDir();
  ASSERT_THAT(numpy::WriteNpz(dir + "/a.npz", {F32Tensor("x", {5, 2}, 0)}), IsOk());
  ASSERT_THAT(numpy::WriteNpy(dir + "/b.npy", F32Tensor("whatever", {2}, 100)), IsOk());
  DatasetOptions o;
  o.max_batch = 2;
  auto d = Dataset::Open({dir + "/a.npz", dir + "/b.npy"}, OneInput(), o);
  ASSERT_THAT(d.status(), IsOk());
  std::vector<int64_t> rows;
  std::vector<float> first_values;
  std::vector<std::string> sources;
  while (true) {
    auto s = d->Next();
    ASSERT_THAT(s.status(), IsOk());
    if (!s->has_value()) break;
    const runtime::RtTensor& x = (*s)->inputs.at("x");
    rows.push_back((*s)->rows);
    EXPECT_EQ(x.dims(), (std::vector<int64_t>{(*s)->rows, 2}));
    first_values.push_back(x.data<float>()[0]);
    sources.push_back((*s)->source);
  }
  EXPECT_EQ(rows, (std::vector<int64_t>{2, 2, 1, 1}));
  EXPECT_EQ(first_values, (std::vector<float>{0, 4, 8, 100}));
  EXPECT_EQ(sources, (std::vector<std::string>{"a.npz[0:2]", "a.npz[2:4]", "a.npz[4:5]", "b.npy"}));
  d->Rewind();
  EXPECT_EQ(DrainSources(*d).size(), 4u);
}

TEST(DatasetTest, StaticBatchDimSetsTheRunSize) {
  const std::string dir = MakeTempDir();
  ASSERT_THAT(numpy::WriteNpz(dir + "/a.npz", {F32Tensor("x", {4, 2}, 0)}), IsOk());
  auto d = Dataset::Open({dir}, {Input("x", {ir::Dim::Static(1), ir::Dim::Static(2)})}, {});
  ASSERT_THAT(d.status(), IsOk());
  EXPECT_EQ(DrainSources(*d).size(), 4u);
  ASSERT_THAT(numpy::WriteNpz(dir + "/a.npz", {F32Tensor("x", {3, 2}, 0)}), IsOk());
  auto odd = Dataset::Open({dir}, {Input("x", {ir::Dim::Static(2), ir::Dim::Static(2)})}, {});
  ASSERT_THAT(odd.status(), IsOk());
  EXPECT_THAT(odd->Next().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("has 3 rows, not a multiple of its static batch 2")));
}

TEST(DatasetTest, RenameMapsInputsToArrays) {
  const std::string dir = MakeTempDir();
  ASSERT_THAT(numpy::WriteNpz(dir + "/a.npz", {F32Tensor("pixels", {1, 2}, 7),
                                               F32Tensor("labels", {1}, 0)}),
              IsOk());
  DatasetOptions o;
  o.rename["x"] = "pixels";
  auto d = Dataset::Open({dir}, OneInput(), o);
  ASSERT_THAT(d.status(), IsOk());
  auto s = d->Next();
  ASSERT_THAT(s.status(), IsOk());
  EXPECT_EQ((*s)->inputs.at("x").data<float>()[1], 8.0f);
}

TEST(DatasetTest, BadDatasetsGetSpecificErrors) {
  const std::string dir = MakeTempDir();
  const std::string empty = MakeTempDir();
  std::ofstream(empty + "/notes.md") << "x";
  EXPECT_THAT(Dataset::Open({empty}, OneInput(), {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr(empty), HasSubstr("has no data files"))));
  EXPECT_THAT(Dataset::Open({dir + "/missing.npz"}, OneInput(), {}).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.npz")));
  std::ofstream(dir + "/data.csv") << "1,2";
  EXPECT_THAT(Dataset::Open({dir + "/data.csv"}, OneInput(), {}).status(),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr(".npz, .npy, .safetensors")));

  auto first_error = [&](const std::string& file, std::vector<ir::ValueInfo> inputs) {
    auto d = Dataset::Open({file}, std::move(inputs), {});
    EXPECT_THAT(d.status(), IsOk());
    return d.ok() ? d->Next().status() : d.status();
  };
  ASSERT_THAT(numpy::WriteNpz(dir + "/wrong_name.npz", {F32Tensor("y", {2}, 0)}), IsOk());
  EXPECT_THAT(first_error(dir + "/wrong_name.npz", OneInput()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("wrong_name.npz: missing array 'x' for model input 'x'"),
                             HasSubstr("file has: y"))));
  ir::Tensor i64 = F32Tensor("x", {2}, 0);
  i64.dtype = ir::DType::kI32;
  ASSERT_THAT(numpy::WriteNpz(dir + "/dtype.npz", {i64}), IsOk());
  EXPECT_THAT(first_error(dir + "/dtype.npz", OneInput()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dtype.npz: input 'x': dtype i32, expected f32")));
  ASSERT_THAT(numpy::WriteNpz(dir + "/shape.npz", {F32Tensor("x", {1, 3}, 0)}), IsOk());
  EXPECT_THAT(first_error(dir + "/shape.npz", OneInput()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shape.npz: input 'x': shape [1,3] does not match [batch,2] at "
                                 "dim 1 (expected 2, found 3)")));
  ASSERT_THAT(numpy::WriteNpz(dir + "/rank.npz", {F32Tensor("x", {1, 1, 2}, 0)}), IsOk());
  EXPECT_THAT(first_error(dir + "/rank.npz", OneInput()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has rank 3, expected [batch,2]")));
  std::vector<ir::ValueInfo> two = OneInput();
  two.push_back(Input("y", {ir::Dim::Symbolic("batch")}));
  ASSERT_THAT(numpy::WriteNpz(dir + "/rows.npz", {F32Tensor("x", {2, 2}, 0), F32Tensor("y", {3}, 0)}),
              IsOk());
  EXPECT_THAT(first_error(dir + "/rows.npz", two),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 'y' has 3 rows but input 'x' has 2")));
  ASSERT_THAT(numpy::WriteNpy(dir + "/one.npy", F32Tensor("x", {2}, 0)), IsOk());
  EXPECT_THAT(first_error(dir + "/one.npy", two),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a .npy file feeds a single-input model, but the model has 2 inputs")));
}

std::vector<ir::ValueInfo> LmInputs() {
  const std::vector<ir::Dim> bt = {ir::Dim::Static(1), ir::Dim::Symbolic("seq")};
  return {Input("input_ids", bt, ir::DType::kI64), Input("attention_mask", bt, ir::DType::kI64)};
}

TEST(DatasetTest, TokenFilesFeedIdsAndMask) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/prompts.txt") << "1 2 3\n\n  40 5\n";
  auto d = Dataset::Open({dir}, LmInputs(), {});
  ASSERT_THAT(d.status(), IsOk());
  auto s1 = d->Next();
  ASSERT_THAT(s1.status(), IsOk());
  EXPECT_EQ((*s1)->inputs.at("input_ids").ToVector<int64_t>(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ((*s1)->inputs.at("attention_mask").ToVector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  auto s2 = d->Next();
  ASSERT_THAT(s2.status(), IsOk());
  EXPECT_EQ((*s2)->source, "prompts.txt:3");
  EXPECT_EQ((*s2)->inputs.at("input_ids").dims(), (std::vector<int64_t>{1, 2}));
  auto end = d->Next();
  ASSERT_THAT(end.status(), IsOk());
  EXPECT_FALSE(end->has_value());

  std::ofstream(dir + "/bad.txt") << "1 2\n3 x4\n";
  auto bad = Dataset::Open({dir + "/bad.txt"}, LmInputs(), {});
  ASSERT_THAT(bad.status(), IsOk());
  ASSERT_THAT(bad->Next().status(), IsOk());
  EXPECT_THAT(bad->Next().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bad.txt:2: token 'x4' is not an integer id")));
  EXPECT_THAT(Dataset::Open({dir + "/bad.txt"}, OneInput(), {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("a token-id file cannot provide input 'x' (f32)")));
}

// Integer array `name` of `dtype` (i64 or i32) holding `values`.
ir::Tensor IntTensor(std::string name, ir::DType dtype, std::vector<int64_t> dims,
                     const std::vector<int64_t>& values) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.dims = std::move(dims);
  const size_t width = dtype == ir::DType::kI64 ? 8 : 4;
  std::vector<uint8_t> bytes(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == ir::DType::kI64) {
      std::memcpy(bytes.data() + 8 * i, &values[i], 8);
    } else {
      const int32_t v = static_cast<int32_t>(values[i]);
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
  }
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

// A single i64 input `name` of shape [batch, seq].
std::vector<ir::ValueInfo> I64Input(const std::string& name) {
  return {Input(name, {ir::Dim::Symbolic("batch"), ir::Dim::Symbolic("seq")}, ir::DType::kI64)};
}

// The first sample's tensor for `input` when `file` is fed to `inputs`.
absl::StatusOr<runtime::RtTensor> FirstSample(const std::string& file,
                                              std::vector<ir::ValueInfo> inputs,
                                              const std::string& input,
                                              DatasetOptions options = {}) {
  auto d = Dataset::Open({file}, std::move(inputs), std::move(options));
  if (!d.ok()) return d.status();
  auto s = d->Next();
  if (!s.ok()) return s.status();
  if (!s->has_value()) return absl::NotFoundError(file + ": no sample");
  return (*s)->inputs.at(input);
}

TEST(DatasetTest, Int32TokenIdsFeedAnI64InputWithTheInt64Values) {
  const std::string dir = MakeTempDir();
  // INT32_MAX and 2^16 - 1 would show truncation or a wrong width.
  const std::vector<int64_t> ids = {0, 1, 257, 2147483647, 65535, 9};
  ASSERT_THAT(numpy::WriteNpy(dir + "/ids64.npy", IntTensor("t", ir::DType::kI64, {2, 3}, ids)),
              IsOk());
  ASSERT_THAT(numpy::WriteNpy(dir + "/ids32.npy", IntTensor("t", ir::DType::kI32, {2, 3}, ids)),
              IsOk());
  auto wide = FirstSample(dir + "/ids64.npy", I64Input("input_ids"), "input_ids");
  auto narrow = FirstSample(dir + "/ids32.npy", I64Input("input_ids"), "input_ids");
  ASSERT_THAT(wide.status(), IsOk());
  ASSERT_THAT(narrow.status(), IsOk());
  EXPECT_EQ(narrow->dtype(), ir::DType::kI64);
  EXPECT_EQ(narrow->dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(narrow->ToVector<int64_t>(), ids);
  EXPECT_EQ(narrow->ToVector<int64_t>(), wide->ToVector<int64_t>());

  // Widening is for every i64 input (it is exact); the id range check is
  // only for input_ids, so another i64 input keeps its negative values.
  ASSERT_THAT(numpy::WriteNpy(dir + "/off.npy",
                              IntTensor("t", ir::DType::kI32, {1, 2}, {-7, 3})),
              IsOk());
  auto offsets = FirstSample(dir + "/off.npy", I64Input("offsets"), "offsets");
  ASSERT_THAT(offsets.status(), IsOk());
  EXPECT_EQ(offsets->dtype(), ir::DType::kI64);
  EXPECT_EQ(offsets->ToVector<int64_t>(), (std::vector<int64_t>{-7, 3}));
  // Narrowing could change values: an i64 array for an i32 input stays an error.
  std::vector<ir::ValueInfo> i32_input = I64Input("input_ids");
  i32_input[0].dtype = ir::DType::kI32;
  EXPECT_THAT(FirstSample(dir + "/ids64.npy", i32_input, "input_ids").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("ids64.npy: input 'input_ids': dtype i64, expected i32")));
}

TEST(DatasetTest, BadTokenIdsAreRefusedNamingFilePositionAndValue) {
  const std::string dir = MakeTempDir();
  std::vector<int64_t> ids(10, 5);
  ids[1 * 5 + 3] = -7;  // [1, 3]
  for (ir::DType dtype : {ir::DType::kI32, ir::DType::kI64}) {
    const std::string file = dir + "/neg_" + std::string(ir::DTypeName(dtype)) + ".npy";
    SCOPED_TRACE(file);
    ASSERT_THAT(numpy::WriteNpy(file, IntTensor("t", dtype, {2, 5}, ids)), IsOk());
    EXPECT_THAT(FirstSample(file, I64Input("input_ids"), "input_ids").status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(file + ": input 'input_ids'"),
                               HasSubstr("token id at [1, 3] is -7"))));
  }
  // With the vocabulary known, ids must also be below it.
  ids[1 * 5 + 3] = 5;
  ids[2] = 40;  // [0, 2]
  ASSERT_THAT(numpy::WriteNpy(dir + "/big.npy", IntTensor("t", ir::DType::kI32, {2, 5}, ids)),
              IsOk());
  EXPECT_THAT(FirstSample(dir + "/big.npy", I64Input("input_ids"), "input_ids").status(), IsOk());
  DatasetOptions vocab40;
  vocab40.vocab_size = 40;
  EXPECT_THAT(FirstSample(dir + "/big.npy", I64Input("input_ids"), "input_ids", vocab40).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("big.npy: input 'input_ids'"),
                             HasSubstr("token id at [0, 2] is 40, outside the vocabulary [0, 40)"))));
  // Token text files: the same bound, by line and index in the line.
  std::ofstream(dir + "/t.txt") << "1 2 3\n1 2 40\n";
  auto d = Dataset::Open({dir + "/t.txt"}, LmInputs(), vocab40);
  ASSERT_THAT(d.status(), IsOk());
  ASSERT_THAT(d->Next().status(), IsOk());
  EXPECT_THAT(d->Next().status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("t.txt:2: token id at index 2 is 40, outside the vocabulary [0, 40)")));
}

TEST(DatasetTest, NonFiniteFloatInputsAreRefusedNamingFilePositionAndValue) {
  const std::string dir = MakeTempDir();
  ir::Tensor t = F32Tensor("x", {3, 2}, 0);
  const float values[] = {NAN, INFINITY, -INFINITY};
  const char* names[] = {"is nan", "is inf", "is -inf"};
  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(names[k]);
    std::vector<uint8_t> bytes(t.data.data(), t.data.data() + t.data.size());
    std::memcpy(bytes.data() + 4 * 3, &values[k], 4);  // [1, 1]
    ir::Tensor bad = t;
    bad.data = ir::TensorData::Owned(std::move(bytes));
    const std::string file = dir + "/bad" + std::to_string(k) + ".npz";
    ASSERT_THAT(numpy::WriteNpz(file, {bad}), IsOk());
    auto d = Dataset::Open({file}, OneInput(), {});
    ASSERT_THAT(d.status(), IsOk());
    EXPECT_THAT(d->Next().status(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(file + ": input 'x'"),
                               HasSubstr(std::string("element [1, 1] ") + names[k]),
                               HasSubstr("1 of 6 elements are not"))));
  }
  // f16 arrays for an f16 input are checked in their own encoding: 0x7e00 is
  // a f16 NaN.
  ir::Tensor half;
  half.name = "x";
  half.dtype = ir::DType::kF16;
  half.dims = {2, 2};
  half.data = ir::TensorData::Owned({0x00, 0x3c, 0x00, 0x7e, 0x00, 0x3c, 0x00, 0x3c});
  ASSERT_THAT(numpy::WriteNpz(dir + "/half.npz", {half}), IsOk());
  auto d = Dataset::Open({dir + "/half.npz"},
                         {Input("x", {ir::Dim::Symbolic("batch"), ir::Dim::Static(2)},
                                ir::DType::kF16)},
                         {});
  ASSERT_THAT(d.status(), IsOk());
  EXPECT_THAT(d->Next().status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("element [0, 1] is nan")));
}

TEST(DatasetTest, DigestIsTheFileSha256) {
  const std::string dir = MakeTempDir();
  std::ofstream(dir + "/t.txt") << "1 2 3\n";
  auto d = Dataset::Open({dir + "/t.txt"}, LmInputs(), {});
  ASSERT_THAT(d.status(), IsOk());
  ASSERT_EQ(d->files().size(), 1u);
  // sha256sum of the 6 bytes "1 2 3\n".
  EXPECT_EQ(d->files()[0].sha256, "1def07dbe06eeb097aafec8a40329937cd20c93a83634b8221ea2b41a894310c");
  EXPECT_EQ(d->files()[0].bytes, 6u);
  EXPECT_EQ(d->files()[0].name, "t.txt");
}

TEST(DatasetTest, RandomIsSeededAndInRange) {
  auto values = [](uint64_t seed) {
    auto d = Dataset::Random(3, seed, OneInput());
    EXPECT_THAT(d.status(), IsOk());
    std::vector<float> all;
    while (true) {
      auto s = d->Next();
      EXPECT_THAT(s.status(), IsOk());
      if (!s->has_value()) break;
      EXPECT_EQ((*s)->inputs.at("x").dims(), (std::vector<int64_t>{1, 2}));
      for (float v : (*s)->inputs.at("x").ToVector<float>()) all.push_back(v);
    }
    return all;
  };
  const std::vector<float> a = values(7), b = values(7), c = values(8);
  ASSERT_EQ(a.size(), 6u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  EXPECT_THAT(Dataset::Random(0, 1, OneInput()).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be >= 1")));
}

}  // namespace
}  // namespace slimpack::calibration

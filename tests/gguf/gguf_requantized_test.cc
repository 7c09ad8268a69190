// The re-encoding record in a GGUF (gguf_requantized.h) and the writer's
// deferred f32 array it is written with: values produced while the tensors
// are filled land in the header, a wrong count writes nothing, and a reader
// refuses a malformed record naming the file and key.
#include "formats/gguf/gguf_requantized.h"

#include <cmath>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "formats/gguf/gguf_writer.h"
#include "support/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::gguf {
namespace {

using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          (name + "-" + std::to_string(::getpid()) + ".gguf"))
      .string();
}

// An f32 tensor of 4 zeros named `name`.
absl::Status AddZeroTensor(GgufWriter& w, const std::string& name) {
  return w.AddTensor(name, {4}, TensorType::kF32, [](uint8_t* dst, uint64_t size) {
    std::fill(dst, dst + size, 0);
    return absl::OkStatus();
  });
}

// Two f32 tensors of 4 values; the record's values are made by the fillers.
absl::Status WriteWithRecord(const std::string& path, uint64_t reserved,
                             std::vector<std::string> names, std::vector<float>* errors) {
  GgufWriter w;  // alignment 64, which the file must then say
  w.AddString("general.architecture", "llama");
  w.AddU32("general.alignment", 64);
  for (const char* t : {"a.weight", "b.weight"}) {
    RETURN_IF_ERROR(w.AddTensor(t, {4}, TensorType::kF32,
                                [errors, t](uint8_t* dst, uint64_t size) {
                                  std::fill(dst, dst + size, 0);
                                  errors->push_back(t[0] == 'a' ? 0.25f : 0.125f);
                                  return absl::OkStatus();
                                }));
  }
  w.AddStringArray(std::string(kRequantizedTensorsKey), names);
  w.AddDeferredF32Array(std::string(kRequantizedRelL2Key), reserved, [errors] { return *errors; });
  w.AddU32("general.after", 7);  // a key behind the reserved values
  return w.Write(path).status();
}

TEST(GgufRequantizedTest, ValuesMadeWhileFillingLandInTheHeader) {
  const std::string path = TempPath("requantized");
  std::vector<float> errors;
  ASSERT_THAT(WriteWithRecord(path, 2, {"a.weight", "b.weight"}, &errors), IsOk());
  auto file = OpenGgufFile(path);
  ASSERT_THAT(file, IsOk());
  auto records = ReadRequantizedTensors(*file);
  ASSERT_THAT(records, IsOk());
  ASSERT_EQ(records->size(), 2u);
  EXPECT_EQ((*records)[0].name, "a.weight");
  EXPECT_EQ((*records)[0].type, "f32");
  EXPECT_EQ((*records)[0].rel_l2, 0.25);
  EXPECT_EQ((*records)[1].name, "b.weight");
  EXPECT_EQ((*records)[1].rel_l2, 0.125);
  ASSERT_NE(file->FindValue("general.after"), nullptr);  // the key behind is intact
  EXPECT_EQ(file->FindValue("general.after")->GetUInt(), 7u);
  std::remove(path.c_str());
}

TEST(GgufRequantizedTest, AWrongCountWritesNothing) {
  const std::string path = TempPath("requantized-count");
  std::remove(path.c_str());
  std::vector<float> errors;
  EXPECT_THAT(WriteWithRecord(path, 3, {"a.weight", "b.weight", "b.weight"}, &errors),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("'slimpack.requantized.rel_l2': 2 values for the 3 reserved")));
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(GgufRequantizedTest, MetadataOnlyFileFillsTheValuesAtOnce) {
  GgufWriter w;
  w.AddDeferredF32Array("k", 2, [] { return std::vector<float>{1.5f, 2.5f}; });
  auto bytes = w.MetadataOnlyFile();
  ASSERT_THAT(bytes, IsOk());
  auto file = ParseGguf(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), "m");
  ASSERT_THAT(file, IsOk());
  ASSERT_NE(file->FindValue("k"), nullptr);
  EXPECT_EQ(file->FindValue("k")->GetFloat(1), 2.5);
}

// An encoding that overflowed (f16 past 65504) is recorded as +inf, read as it is.
TEST(GgufRequantizedTest, AnInfiniteErrorIsReadAsItIs) {
  const std::string path = TempPath("requantized-inf");
  GgufWriter w;
  ASSERT_THAT(AddZeroTensor(w, "t"), IsOk());
  w.AddStringArray(std::string(kRequantizedTensorsKey), {"t"});
  w.AddF32Array(std::string(kRequantizedRelL2Key), {std::numeric_limits<float>::infinity()});
  ASSERT_THAT(w.Write(path).status(), IsOk());
  auto file = OpenGgufFile(path);
  ASSERT_THAT(file, IsOk());
  auto records = ReadRequantizedTensors(*file);
  ASSERT_THAT(records, IsOk());
  ASSERT_EQ(records->size(), 1u);
  EXPECT_TRUE(std::isinf((*records)[0].rel_l2));
  std::remove(path.c_str());
}

TEST(GgufRequantizedTest, AFileWithoutTheRecordHasNone) {
  GgufWriter w;
  w.AddString("general.architecture", "llama");
  auto bytes = w.MetadataOnlyFile();
  ASSERT_THAT(bytes, IsOk());
  auto file = ParseGguf(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size(), "m");
  ASSERT_THAT(file, IsOk());
  auto records = ReadRequantizedTensors(*file);
  ASSERT_THAT(records, IsOk());
  EXPECT_TRUE(records->empty());
}

// Each malformed record is refused naming the file and the key.
TEST(GgufRequantizedTest, MalformedRecordsAreRefusedByName) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  struct Case {
    const char* label;
    void (*add)(GgufWriter&, float);
    float value;
    const char* message;
  };
  const Case cases[] = {
      {"names only", [](GgufWriter& w, float) {
         w.AddStringArray(std::string(kRequantizedTensorsKey), {"t"});
       }, 0, "metadata 'slimpack.requantized.tensors' without 'slimpack.requantized.rel_l2'"},
      {"errors only", [](GgufWriter& w, float v) {
         w.AddF32Array(std::string(kRequantizedRelL2Key), {v});
       }, 0, "metadata 'slimpack.requantized.rel_l2' without 'slimpack.requantized.tensors'"},
      {"lengths differ", [](GgufWriter& w, float v) {
         w.AddStringArray(std::string(kRequantizedTensorsKey), {"t"});
         w.AddF32Array(std::string(kRequantizedRelL2Key), {v, v});
       }, 0, "names 1 tensors but 'slimpack.requantized.rel_l2' has 2 values"},
      {"errors as i32", [](GgufWriter& w, float) {
         w.AddStringArray(std::string(kRequantizedTensorsKey), {"t"});
         w.AddI32Array(std::string(kRequantizedRelL2Key), {1});
       }, 0, "'slimpack.requantized.rel_l2' is arr[i32] of 1, expected an array of f32"},
      {"no such tensor", [](GgufWriter& w, float v) {
         w.AddStringArray(std::string(kRequantizedTensorsKey), {"nope"});
         w.AddF32Array(std::string(kRequantizedRelL2Key), {v});
       }, 0.5f, "names tensor 'nope', which the file does not hold"},
      {"NaN error", [](GgufWriter& w, float v) {
         w.AddStringArray(std::string(kRequantizedTensorsKey), {"t"});
         w.AddF32Array(std::string(kRequantizedRelL2Key), {v});
       }, nan, "gives tensor 't' the error nan"},
      {"negative error", [](GgufWriter& w, float v) {
         w.AddStringArray(std::string(kRequantizedTensorsKey), {"t"});
         w.AddF32Array(std::string(kRequantizedRelL2Key), {v});
       }, -1.0f, "gives tensor 't' the error -1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.label);
    const std::string path = TempPath("requantized-bad");
    GgufWriter w;
    ASSERT_THAT(AddZeroTensor(w, "t"), IsOk());
    c.add(w, c.value);
    ASSERT_THAT(w.Write(path).status(), IsOk());
    auto file = OpenGgufFile(path);
    ASSERT_THAT(file, IsOk());
    EXPECT_THAT(ReadRequantizedTensors(*file),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr(path), HasSubstr(c.message))));
    std::remove(path.c_str());
  }
}

}  // namespace
}  // namespace slimpack::gguf

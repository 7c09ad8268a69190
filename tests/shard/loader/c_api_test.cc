// The C API: handles, status codes, per-thread error messages, views and
// dequantization, exercised the way a JNI or Swift binding would.
#include "formats/shard/loader/slimpack_loader.h"

#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"
#include "tests/shard/loader/sample_artifacts.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;

TEST(CApiTest, OpenFailureReportsCodeAndMessage) {
  slimpack_artifact* a = reinterpret_cast<slimpack_artifact*>(0x1);
  EXPECT_EQ(slimpack_artifact_open("/nonexistent/dir", nullptr, &a), SLIMPACK_NOT_FOUND);
  EXPECT_EQ(a, nullptr);
  EXPECT_THAT(slimpack_last_error_message(), HasSubstr("/nonexistent/dir"));
  EXPECT_STREQ(slimpack_status_name(SLIMPACK_NOT_FOUND), "NOT_FOUND");
  EXPECT_EQ(slimpack_artifact_open(nullptr, nullptr, &a), SLIMPACK_INVALID_ARGUMENT);
}

TEST(CApiTest, ReadsTensorsViewsAndDequantizes) {
  testing::TempDir dir;
  auto art = testing::TestArtifact::Build(testing::SampleSpec());
  ASSERT_THAT(art.Write(dir.path()), IsOk());

  slimpack_open_options options;
  slimpack_open_options_init(&options);
  options.memory_budget_bytes = 1;
  slimpack_artifact* a = nullptr;
  ASSERT_EQ(slimpack_artifact_open(dir.path().c_str(), &options, &a), SLIMPACK_OK)
      << slimpack_last_error_message();
  EXPECT_EQ(slimpack_artifact_tensor_count(a), 9u);

  uint64_t index = 0;
  ASSERT_EQ(slimpack_artifact_find_tensor(a, "q4", &index), SLIMPACK_OK);
  slimpack_tensor_info info;
  ASSERT_EQ(slimpack_artifact_tensor_info(a, index, &info), SLIMPACK_OK);
  EXPECT_STREQ(info.name, "q4");
  EXPECT_EQ(info.dtype, SLIMPACK_DTYPE_I4);
  EXPECT_STREQ(slimpack_dtype_name(info.dtype), "i4");
  EXPECT_EQ(info.layout, SLIMPACK_LAYOUT_INT4_GROUPWISE);
  ASSERT_EQ(info.rank, 2u);
  EXPECT_EQ(info.shape[1], 10u);
  EXPECT_EQ(info.group_size, 4u);
  EXPECT_EQ(info.scale_index, testing::kQ4Scale);

  EXPECT_EQ(slimpack_artifact_find_tensor(a, "nope", &index), SLIMPACK_NOT_FOUND);
  EXPECT_THAT(slimpack_last_error_message(), HasSubstr("no tensor named 'nope'"));
  EXPECT_EQ(slimpack_artifact_tensor_info(a, 99, &info), SLIMPACK_OUT_OF_RANGE);

  slimpack_tensor_view* view = nullptr;
  ASSERT_EQ(slimpack_artifact_map_tensor(a, testing::kA, &view), SLIMPACK_OK);
  ASSERT_EQ(slimpack_tensor_view_size(view), 64u);
  float a5;
  std::memcpy(&a5, static_cast<const uint8_t*>(slimpack_tensor_view_data(view)) + 20, 4);
  EXPECT_EQ(a5, 5.0f);

  // With a 1-byte budget, using shard 1 evicts shard 0 from the cache; the
  // view keeps its own mapping alive.
  std::vector<float> q4(40);
  ASSERT_EQ(slimpack_artifact_dequantize_f32(a, testing::kQ4, q4.data(), q4.size()),
            SLIMPACK_OK);
  std::memcpy(&a5, static_cast<const uint8_t*>(slimpack_tensor_view_data(view)) + 20, 4);
  EXPECT_EQ(a5, 5.0f);
  slimpack_tensor_view_release(view);

  EXPECT_EQ(slimpack_artifact_dequantize_f32(a, testing::kQ4, q4.data(), 3),
            SLIMPACK_INVALID_ARGUMENT);
  EXPECT_THAT(slimpack_last_error_message(), HasSubstr("tensor 'q4'"));

  EXPECT_EQ(slimpack_artifact_verify(a), SLIMPACK_OK);
  ASSERT_EQ(slimpack_artifact_carried_file_count(a), 1u);
  EXPECT_STREQ(slimpack_artifact_carried_file_name(a, 0), "tokenizer.json");
  EXPECT_EQ(slimpack_artifact_carried_file_name(a, 1), nullptr);
  slimpack_artifact_close(a);
}

TEST(CApiTest, CorruptShardIsAnErrorNotACrash) {
  testing::TempDir dir;
  auto art = testing::TestArtifact::Build(testing::SampleSpec());
  art.shard_bytes[1].resize(16400);  // truncated below the manifest's size
  ASSERT_THAT(art.Write(dir.path()), IsOk());
  slimpack_artifact* a = nullptr;
  ASSERT_EQ(slimpack_artifact_open(dir.path().c_str(), nullptr, &a), SLIMPACK_OK);
  slimpack_tensor_view* view = nullptr;
  EXPECT_EQ(slimpack_artifact_map_tensor(a, testing::kD, &view), SLIMPACK_OUT_OF_RANGE);
  EXPECT_EQ(view, nullptr);
  EXPECT_THAT(slimpack_last_error_message(), HasSubstr("truncated"));
  EXPECT_EQ(slimpack_artifact_verify(a), SLIMPACK_OUT_OF_RANGE);
  slimpack_artifact_close(a);
}

}  // namespace
}  // namespace slimpack::loader

// Special files planted in a valid artifact: a FIFO (named pipe) as
// manifest.json, as a shard or as a carried file must be refused with an
// error naming the file and what it is, never waited on. A plain open() of
// a FIFO blocks until a writer appears, so every call that opens a file
// runs under a deadline here: a regression fails the test instead of
// hanging the suite.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <string>
#include <utility>

#include "formats/shard/loader/artifact.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/shard/loader/loader_matchers.h"
#include "tests/shard/loader/sample_artifacts.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace slimpack::loader {
namespace {

using ::testing::HasSubstr;
using testing::IsOk;
using testing::StatusIs;
using testing::TestArtifact;

constexpr auto kDeadline = std::chrono::seconds(10);

// Runs `fn` on another thread and returns its result. If it has not
// returned after kDeadline it is blocked for good (in open() of the FIFO),
// and a std::async future would join it on destruction, so the process
// reports and exits instead (ctest runs each test in its own process, so
// only this test fails).
template <typename Fn>
auto WithDeadline(const char* what, Fn fn) -> decltype(fn()) {
  auto result = std::async(std::launch::async, std::move(fn));
  if (result.wait_for(kDeadline) == std::future_status::timeout) {
    std::fprintf(stderr,
                 "FATAL: %s did not return within 10 s (blocked opening a "
                 "FIFO?)\n",
                 what);
    std::fflush(stderr);
    std::_Exit(1);
  }
  return result.get();
}

// Replaces `file` of the written artifact with a FIFO of the same name.
void PlantFifo(const std::string& dir, const std::string& file) {
  const std::string path = dir + "/" + file;
  ASSERT_EQ(::unlink(path.c_str()), 0) << path;
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path;
}

class SpecialFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TestArtifact art = TestArtifact::Build(testing::SampleSpec());
    ASSERT_THAT(art.Write(dir_.path()), IsOk());
  }
  Result<std::unique_ptr<Artifact>> Open() {
    const std::string dir = dir_.path();
    return WithDeadline("Artifact::Open", [dir] { return Artifact::Open(dir); });
  }

  testing::TempDir dir_;
};

TEST_F(SpecialFileTest, FifoManifestIsRefusedAtOpen) {
  PlantFifo(dir_.path(), "manifest.json");
  EXPECT_THAT(Open(), StatusIs(StatusCode::kInvalidArgument,
                               HasSubstr(dir_.File("manifest.json") +
                                         ": is a FIFO, not a regular file")));
}

TEST_F(SpecialFileTest, FifoShardIsRefusedOnAccessAndByVerify) {
  PlantFifo(dir_.path(), "shard-00001.bin");
  auto opened = Open();
  ASSERT_THAT(opened, IsOk()) << "open must not touch shards";
  Artifact* a = opened->get();
  // Shard 0 is untouched and still maps.
  EXPECT_THAT(WithDeadline("GetTensor(a)", [a] { return a->GetTensor("a"); }), IsOk());
  const std::string want = dir_.File("shard-00001.bin") + ": is a FIFO, not a regular file";
  EXPECT_THAT(WithDeadline("GetTensor(d)", [a] { return a->GetTensor("d"); }),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'd': " + want)));
  EXPECT_THAT(WithDeadline("VerifyShard(1)", [a] { return a->VerifyShard(1); }),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(want)));
  EXPECT_THAT(WithDeadline("Verify", [a] { return a->Verify(); }),
              StatusIs(StatusCode::kInvalidArgument, HasSubstr(want)));
}

TEST_F(SpecialFileTest, FifoCarriedFileIsRefusedByVerify) {
  PlantFifo(dir_.path(), "tokenizer.json");
  auto opened = Open();
  ASSERT_THAT(opened, IsOk());
  Artifact* a = opened->get();
  for (size_t i = 0; i < a->num_tensors(); ++i) {
    EXPECT_THAT(WithDeadline("GetTensor", [a, i] { return a->GetTensor(i); }), IsOk());
  }
  EXPECT_THAT(WithDeadline("Verify", [a] { return a->Verify(); }),
              StatusIs(StatusCode::kInvalidArgument,
                       HasSubstr(dir_.File("tokenizer.json") +
                                 ": is a FIFO, not a regular file")));
}

}  // namespace
}  // namespace slimpack::loader

// Atomicity under SIGKILL and a full disk (spec.md section 8): a child
// process converts and is killed at each phase of the commit protocol, or
// runs out of file-size budget (RLIMIT_FSIZE, the ENOSPC stand-in); the
// output must then be absent, the previous artifact, or the complete new
// one, and no leftover may load.
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "formats/shard/writer/staging_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/shard/writer/convert_helpers.h"
#include "tests/shard/writer/writer_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::shard_writer {
namespace {

using ::slimpack::shard_writer::testing::Args;
using ::slimpack::shard_writer::testing::Convert;
using ::slimpack::shard_writer::testing::ConvertArgs;
using ::slimpack::shard_writer::testing::Exists;
using ::slimpack::shard_writer::testing::HashFiles;
using ::slimpack::shard_writer::testing::ListDir;
using ::slimpack::shard_writer::testing::OpenAndVerify;
using ::slimpack::shard_writer::testing::OpenArtifact;
using ::slimpack::shard_writer::testing::TempDir;
using ::slimpack::testing::IsOk;
using ::slimpack::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kMiB = 1 << 20;

struct ChildResult {
  bool killed = false;
  int exit_code = -1;
  std::string message;  // the child's Status, if it returned one
};

// Converts in a forked child (threads and all) so it can be killed or
// resource-limited without touching the test process.
ChildResult ConvertInChild(const std::string& in, const std::string& out,
                           ConvertArgs args, uint64_t fsize_limit = 0) {
  int pipe_fds[2];
  EXPECT_EQ(::pipe(pipe_fds), 0);
  fflush(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(pipe_fds[0]);
    if (fsize_limit) {
      struct rlimit rl = {fsize_limit, fsize_limit};
      ::setrlimit(RLIMIT_FSIZE, &rl);
      ::signal(SIGXFSZ, SIG_IGN);  // get EFBIG from write() instead
    }
    auto s = Convert(in, out, args);
    const std::string msg = s.ok() ? "OK" : s.status().ToString();
    ssize_t ignored = ::write(pipe_fds[1], msg.data(), msg.size());
    (void)ignored;
    ::_exit(s.ok() ? 0 : 1);
  }
  ::close(pipe_fds[1]);
  ChildResult r;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buf, sizeof(buf))) > 0) r.message.append(buf, n);
  ::close(pipe_fds[0]);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  r.killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  return r;
}

std::function<void(std::string_view, uint64_t)> KillAt(std::string phase) {
  return [phase](std::string_view p, uint64_t) {
    if (p == phase) ::raise(SIGKILL);
  };
}

std::function<void(std::string_view, uint64_t)> KillAfterBytes(uint64_t limit) {
  return [limit](std::string_view p, uint64_t bytes) {
    if (p == "bytes" && bytes >= limit) ::raise(SIGKILL);
  };
}

std::string RecipeDType(const std::string& artifact) {
  auto a = OpenArtifact(artifact);
  if (!a.ok()) return "<" + a.status().ToString() + ">";
  auto r = nlohmann::json::parse((*a)->manifest().recipe_json);
  return r.contains("dtype") ? r["dtype"].get<std::string>() : "keep";
}

// Every staging directory left beside `output`, checked to be unloadable
// at its top level (the loader finds no manifest.json there).
std::vector<std::string> CheckLeftoverStaging(const std::string& parent) {
  std::vector<std::string> staging;
  for (const std::string& name : ListDir(parent)) {
    if (!IsStagingNameFor(name, "art")) continue;
    staging.push_back(name);
    EXPECT_THAT(OpenArtifact(parent + "/" + name),
                StatusIs(absl::StatusCode::kNotFound, HasSubstr("manifest.json")))
        << name;
  }
  return staging;
}

struct Phase {
  const char* name;
  bool new_artifact_visible;  // killed after the swap
};

class KillTest : public ::testing::TestWithParam<Phase> {
 protected:
  void SetUp() override {
    testing::TinyLlama spec;
    spec.layers = 4;
    spec.hidden = 128;
    spec.intermediate = 256;
    testing::WriteTinyLlamaCheckpoint(in_.path(), spec);
  }
  ConvertArgs KillingArgs() {
    ConvertArgs args = Args(ir::DType::kF16, kMiB);
    args.force = true;
    const std::string phase = GetParam().name;
    args.fault_hook = phase == "bytes" ? KillAfterBytes(300 * 1024) : KillAt(phase);
    return args;
  }
  TempDir in_;
  TempDir out_;
};

TEST_P(KillTest, FreshOutputIsAbsentOrComplete) {
  const std::string dst = out_.File("art");
  ChildResult r = ConvertInChild(in_.path(), dst, KillingArgs());
  ASSERT_TRUE(r.killed) << "child was not killed at " << GetParam().name
                        << "; said " << r.message;
  if (GetParam().new_artifact_visible) {
    EXPECT_THAT(OpenAndVerify(dst), IsOk());
    EXPECT_EQ(RecipeDType(dst), "f16");
  } else {
    EXPECT_FALSE(Exists(dst));
  }
  CheckLeftoverStaging(out_.path());
  // The next run succeeds and removes what the killed one left.
  ConvertArgs again = Args(ir::DType::kBF16, kMiB);
  again.force = true;
  ASSERT_THAT(Convert(in_.path(), dst, again), IsOk());
  EXPECT_THAT(ListDir(out_.path()), ::testing::ElementsAre("art"));
  EXPECT_EQ(RecipeDType(dst), "bf16");
}

TEST_P(KillTest, PreviousArtifactSurvivesUntilTheSwap) {
  const std::string dst = out_.File("art");
  ASSERT_THAT(Convert(in_.path(), dst, Args(std::nullopt, kMiB)), IsOk());
  const auto old_files = HashFiles(dst);
  ChildResult r = ConvertInChild(in_.path(), dst, KillingArgs());
  ASSERT_TRUE(r.killed) << r.message;
  ASSERT_THAT(OpenAndVerify(dst), IsOk());
  if (GetParam().new_artifact_visible) {
    EXPECT_EQ(RecipeDType(dst), "f16");
  } else {
    EXPECT_EQ(HashFiles(dst), old_files);
    EXPECT_EQ(RecipeDType(dst), "keep");
  }
  for (const std::string& s : CheckLeftoverStaging(out_.path())) {
    // Inside the staging directory there is at most one artifact, and it is
    // either incomplete (rejected) or complete (old or new), never mixed.
    const std::string inner = out_.path() + "/" + s + "/artifact";
    if (Exists(inner + "/manifest.json")) {
      EXPECT_THAT(OpenAndVerify(inner), IsOk()) << inner;
    } else if (Exists(inner)) {
      EXPECT_THAT(OpenArtifact(inner), Not(IsOk())) << inner;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Phases, KillTest,
    ::testing::Values(Phase{"staging-created", false}, Phase{"bytes", false},
                      Phase{"shard-written", false},
                      Phase{"carried-written", false},
                      Phase{"manifest-written", false},
                      Phase{"before-swap", false}, Phase{"swapped", true}),
    [](const auto& info) {
      std::string n = info.param.name;
      for (char& c : n) {
        if (c == '-') c = '_';
      }
      return n;
    });

TEST(DiskFullTest, FileSizeLimitFailsCleanlyAndKeepsTheOldArtifact) {
  TempDir in, out;
  testing::TinyLlama spec;
  spec.hidden = 128;
  spec.intermediate = 256;
  testing::WriteTinyLlamaCheckpoint(in.path(), spec);
  const std::string dst = out.File("art");

  // No previous artifact: non-zero exit, a message naming the file and the
  // byte count, nothing left behind.
  ChildResult fresh = ConvertInChild(in.path(), dst, Args(std::nullopt, kMiB), 200 * 1024);
  EXPECT_FALSE(fresh.killed);
  EXPECT_EQ(fresh.exit_code, 1);
  EXPECT_THAT(fresh.message,
              AllOf(HasSubstr("RESOURCE_EXHAUSTED"), HasSubstr("shard-0000"),
                    HasSubstr("bytes"), HasSubstr("File too large")));
  EXPECT_FALSE(Exists(dst));
  EXPECT_TRUE(ListDir(out.path()).empty());

  // With a previous artifact: it stays intact.
  ASSERT_THAT(Convert(in.path(), dst, Args(ir::DType::kF16, kMiB)), IsOk());
  const auto old_files = HashFiles(dst);
  ConvertArgs force = Args(std::nullopt, kMiB);
  force.force = true;
  ChildResult replace = ConvertInChild(in.path(), dst, force, 200 * 1024);
  EXPECT_EQ(replace.exit_code, 1);
  EXPECT_THAT(replace.message, HasSubstr("File too large"));
  EXPECT_EQ(HashFiles(dst), old_files);
  EXPECT_THAT(OpenAndVerify(dst), IsOk());
  EXPECT_THAT(ListDir(out.path()), ::testing::ElementsAre("art"));
}

}  // namespace
}  // namespace slimpack::shard_writer

// ThreadPool when the system refuses threads (`--threads 1024` under a
// process or memory limit used to abort with an uncaught
// std::system_error): the pool keeps the workers that started, every task
// still runs once, and the interpreter's results stay bitwise identical to
// one thread. Refusals come from support/threads.h's test hook, which fails
// a start through the same catch as pthread_create's EAGAIN (RLIMIT_NPROC
// cannot refuse root; tests/support/threads_test.cc uses it when not root).
#include "runtime/thread_pool.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/interpreter.h"
#include "support/threads.h"
#include "tests/runtime/op_test_util.h"
#include "tests/testing/status_matchers.h"

namespace slimpack::runtime {
namespace {

using ::slimpack::runtime::testing::F32;
using ::slimpack::runtime::testing::IrTensor;
using ::slimpack::runtime::testing::Random;
using ::slimpack::testing::IsOk;

// Lifts the start limit however the test ends.
struct StartLimit {
  explicit StartLimit(int allowed) { support::LimitThreadStartsForTesting(allowed); }
  ~StartLimit() { support::LimitThreadStartsForTesting(-1); }
};

TEST(ThreadPoolTest, KeepsTheWorkersThatStartedAndRunsEveryTaskOnce) {
  for (int allowed : {0, 3}) {
    SCOPED_TRACE(std::to_string(allowed) + " thread starts allowed");
    StartLimit limit(allowed);
    ThreadPool pool(1024);
    EXPECT_EQ(pool.num_threads(), allowed + 1);
    for (int loop = 0; loop < 3; ++loop) {
      const int64_t n = 10000;
      std::vector<std::atomic<int>> calls(n);
      pool.ParallelFor(n, [&](int64_t i) { calls[static_cast<size_t>(i)].fetch_add(1); });
      int64_t wrong = 0;
      for (const auto& c : calls) wrong += c.load() != 1;
      EXPECT_EQ(wrong, 0) << "loop " << loop;
    }
  }
}

TEST(ThreadPoolTest, InterpreterWithRefusedThreadsMatchesOneThreadBitwise) {
  // Large enough that the GEMMs are tiled and the pool runs parallel tasks.
  const int64_t n = 2, c = 16, h = 24, wd = 24;
  ir::Graph g;
  g.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({n, c, h, wd})});
  ASSERT_THAT(g.AddInitializer(IrTensor<float>("w1", {64, c, 3, 3}, Random(64 * c * 9, 1))),
              IsOk());
  ASSERT_THAT(g.AddInitializer(IrTensor<float>("w2", {32, 64, 1, 1}, Random(32 * 64, 2))),
              IsOk());
  ir::Node conv1;
  conv1.name = "conv1";
  conv1.op_type = "Conv";
  conv1.inputs = {"x", "w1"};
  conv1.outputs = {"a"};
  conv1.attributes["pads"] = ir::Attribute::Ints({1, 1, 1, 1});
  ir::Node conv2 = conv1;
  conv2.name = "conv2";
  conv2.inputs = {"a", "w2"};
  conv2.outputs = {"y"};
  conv2.attributes.clear();
  g.nodes = {conv1, conv2};
  g.outputs.push_back({"y", ir::DType::kF32, ir::Shape::FromDims({n, 32, h, wd})});
  const RtTensor x = F32({n, c, h, wd}, Random(n * c * h * wd, 3));
  auto run = [&](int threads) {
    InterpreterOptions opts;
    opts.num_threads = threads;
    auto interp = Interpreter::Create(g, opts);
    EXPECT_THAT(interp, IsOk());
    if (!interp.ok()) return std::vector<float>();
    auto out = interp->Run({{"x", x}});
    EXPECT_THAT(out, IsOk());
    return out.ok() ? (*out)[0].ToVector<float>() : std::vector<float>();
  };
  const std::vector<float> one = run(1);
  ASSERT_FALSE(one.empty());
  for (int allowed : {0, 2}) {
    StartLimit limit(allowed);
    const std::vector<float> many = run(1024);
    ASSERT_EQ(many.size(), one.size());
    EXPECT_EQ(std::memcmp(many.data(), one.data(), one.size() * sizeof(float)), 0)
        << "1024 threads with " << allowed << " starts allowed differ from 1 thread";
  }
}

}  // namespace
}  // namespace slimpack::runtime

// Helpers for interpreter tests: build a one-node graph from runtime
// tensors and attributes, run it, and compare results with tolerances.
#ifndef SLIMPACK_TESTS_RUNTIME_OP_TEST_UTIL_H_
#define SLIMPACK_TESTS_RUNTIME_OP_TEST_UTIL_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/interpreter.h"
#include "runtime/kernels/int8_dot.h"
#include "ir/graph.h"
#include "gtest/gtest.h"

namespace slimpack::runtime::testing {

// An IR tensor holding `values` (for initializers and attributes).
template <typename T>
ir::Tensor IrTensor(std::string name, std::vector<int64_t> dims,
                    const std::vector<T>& values) {
  ir::Tensor t;
  t.name = std::move(name);
  t.dtype = DTypeOf<T>();
  t.dims = std::move(dims);
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

// A node for hand-built graphs (the default ONNX domain unless `domain`).
inline ir::Node MakeNode(std::string name, std::string op, std::vector<std::string> in,
                         std::vector<std::string> out,
                         std::map<std::string, ir::Attribute> attrs = {},
                         std::string domain = "") {
  ir::Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.domain = std::move(domain);
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  n.attributes = std::move(attrs);
  return n;
}

inline RtTensor F32(std::vector<int64_t> dims, const std::vector<float>& v) {
  return RtTensor::FromVector<float>(std::move(dims), v);
}
inline RtTensor I64(std::vector<int64_t> dims, const std::vector<int64_t>& v) {
  return RtTensor::FromVector<int64_t>(std::move(dims), v);
}

// Deterministic pseudo-random values in [lo, hi).
inline std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.0f,
                                 float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  return v;
}

// One node of `op` with the given inputs (an empty name = omitted input),
// attributes and output count, run through the interpreter.
struct OpTest {
  OpTest(std::string op_type,
         std::vector<std::pair<std::string, RtTensor>> ins,
         std::map<std::string, ir::Attribute> attributes = {}, int outputs = 1,
         int64_t opset_version = 17)
      : op(std::move(op_type)),
        inputs(std::move(ins)),
        attrs(std::move(attributes)),
        num_outputs(outputs),
        opset(opset_version) {}

  std::string op;
  std::vector<std::pair<std::string, RtTensor>> inputs;
  std::map<std::string, ir::Attribute> attrs;
  int num_outputs = 1;
  int64_t opset = 17;
  int num_threads = 1;

  ir::Graph BuildGraph() const {
    ir::Graph g;
    g.name = "test_" + op;
    ir::Node n;
    n.name = "n0";
    n.op_type = op;
    for (const auto& [name, t] : inputs) {
      n.inputs.push_back(name);
      if (name.empty()) continue;
      g.inputs.push_back({name, t.dtype(), ir::Shape()});
    }
    for (int i = 0; i < num_outputs; ++i) {
      n.outputs.push_back("y" + std::to_string(i));
      g.outputs.push_back({"y" + std::to_string(i), ir::DType::kUndefined, ir::Shape()});
    }
    n.attributes = attrs;
    g.nodes.push_back(std::move(n));
    return g;
  }

  absl::StatusOr<std::vector<RtTensor>> Run() const {
    InterpreterOptions opts;
    opts.opset_version = opset;
    opts.num_threads = num_threads;
    auto interp = Interpreter::Create(BuildGraph(), opts);
    if (!interp.ok()) return interp.status();
    std::map<std::string, RtTensor> feed;
    for (const auto& [name, t] : inputs) {
      if (!name.empty()) feed[name] = t;
    }
    return interp->Run(feed);
  }
};

// Values followed by `readable_after` more (set to 0x5a bytes), the last of
// them the last before a page the process may not read: a kernel reading
// past them ends the test with SIGSEGV. (Not under qemu-x86_64: its TCG
// faults on the masked-off lanes of VMASKMOVPS, which CPUs do not;
// cross_cpu_bytes_test.sh runs only the FixedOrder tests there.)
template <typename T>
class GuardedBuffer {
 public:
  explicit GuardedBuffer(const std::vector<T>& values, int64_t readable_after = 0) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t bytes = (values.size() + readable_after) * sizeof(T);
    size_ = (bytes + page - 1) / page * page + page;
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    base_ = static_cast<char*>(p);
    EXPECT_EQ(mprotect(base_ + size_ - page, page, PROT_NONE), 0);
    data_ = reinterpret_cast<T*>(base_ + size_ - page - bytes);
    if (!values.empty()) std::memcpy(data_, values.data(), values.size() * sizeof(T));
    std::memset(data_ + values.size(), 0x5a, readable_after * sizeof(T));
  }
  ~GuardedBuffer() { munmap(base_, size_); }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;
  const T* data() const { return data_; }

 private:
  char* base_ = nullptr;
  size_t size_ = 0;
  T* data_ = nullptr;
};

// A tensor whose bytes end at an unreadable page (GuardedBuffer), for
// kernels whose vector loads run past a row but must stop at the tensor's
// end.
template <typename T>
RtTensor GuardedTensor(std::vector<int64_t> dims, const std::vector<T>& values) {
  auto owner = std::make_shared<GuardedBuffer<T>>(values);
  const auto* data = reinterpret_cast<const uint8_t*>(owner->data());
  return RtTensor::Borrow(DTypeOf<T>(), std::move(dims), std::move(owner), data);
}

// n uniformly random bytes of type T (uint8_t or int8_t).
template <typename T>
std::vector<T> RandomBytes(int64_t n, std::mt19937& rng) {
  std::vector<T> v(n);
  for (T& x : v) x = static_cast<T>(rng());
  return v;
}

inline int64_t Elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// A tensor of RandomBytes.
template <typename T>
RtTensor Bytes(std::vector<int64_t> dims, std::mt19937& rng) {
  return RtTensor::FromVector<T>(dims, RandomBytes<T>(Elements(dims), rng));
}

// Bytes<T>'s values in a GuardedTensor.
template <typename T>
RtTensor GuardedBytes(std::vector<int64_t> dims, std::mt19937& rng) {
  return GuardedTensor<T>(dims, RandomBytes<T>(Elements(dims), rng));
}

// Element i of a u8 or i8 tensor.
inline int64_t Value(const RtTensor& t, int64_t i) {
  return t.dtype() == ir::DType::kU8 ? int64_t{t.data<uint8_t>()[i]}
                                     : int64_t{t.data<int8_t>()[i]};
}

// Within its scope the W8A8 kernels take the byte dot product path (on)
// or their float-exact / pmaddwd paths (off), whatever this CPU has; the
// choice before it comes back at the end of the scope.
class BytePath {
 public:
  explicit BytePath(bool on) : before_(kernels::int8dot::Fast()) { kernels::int8dot::SetFast(on); }
  ~BytePath() { kernels::int8dot::SetFast(before_); }
  BytePath(const BytePath&) = delete;
  BytePath& operator=(const BytePath&) = delete;

 private:
  const bool before_;
};

// Runs `t` and returns its first output; fails the test on error.
inline RtTensor RunOne(const OpTest& t) {
  auto out = t.Run();
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok() || out->empty()) return RtTensor();
  return (*out)[0];
}

inline void ExpectFloats(const RtTensor& t, const std::vector<int64_t>& dims,
                         const std::vector<float>& want, float atol = 1e-5f,
                         float rtol = 1e-5f) {
  ASSERT_EQ(t.dtype(), ir::DType::kF32) << t.DebugString();
  ASSERT_EQ(t.dims(), dims) << t.DebugString();
  ASSERT_EQ(static_cast<size_t>(t.num_elements()), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const float got = t.data<float>()[i];
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got)) << "element " << i;
      continue;
    }
    if (std::isinf(want[i])) {
      EXPECT_EQ(got, want[i]) << "element " << i;
      continue;
    }
    EXPECT_NEAR(got, want[i], atol + rtol * std::fabs(want[i])) << "element " << i;
  }
}

template <typename T>
void ExpectValues(const RtTensor& t, const std::vector<int64_t>& dims,
                  const std::vector<T>& want) {
  ASSERT_EQ(t.dtype(), DTypeOf<T>()) << t.DebugString();
  ASSERT_EQ(t.dims(), dims) << t.DebugString();
  EXPECT_EQ(t.ToVector<T>(), want);
}

}  // namespace slimpack::runtime::testing

#endif  // SLIMPACK_TESTS_RUNTIME_OP_TEST_UTIL_H_

// Reference CPU interpreter for the graph IR: runs a graph in FP32 (and the
// integer types shape arithmetic needs) node by node, with shapes computed
// from the actual inputs. Calibration attaches an observer to see every
// node's outputs.
//
// Memory: each intermediate value is released right after its last reader
// (planned from use-def at Create), and its buffer is reused by later nodes;
// an elementwise last reader may write its result over it in place
// (KernelContext::AllocateUninitializedOrReuse).
// Threads: GEMM/conv/pool work is split into tasks whose shapes depend only
// on the problem, so results are bitwise identical for any num_threads.
#ifndef SLIMPACK_RUNTIME_INTERPRETER_H_
#define SLIMPACK_RUNTIME_INTERPRETER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/kernel_registry.h"
#include "runtime/rt_tensor.h"
#include "runtime/thread_pool.h"
#include "runtime/widen_f16.h"
#include "ir/graph.h"

namespace slimpack::runtime {

struct InterpreterOptions {
  // Threads used by one Run, counting the caller.
  int num_threads = 1;
  // Opset of the default ONNX domain; it picks semantics that changed
  // between versions (Softmax axis at 13, Resize at 11). Create(Model)
  // takes it from the model.
  int64_t opset_version = 17;
  // Largest single tensor a kernel may allocate.
  uint64_t max_tensor_bytes = uint64_t{8} << 30;
  // Kernels to use; null means BuiltinKernels().
  std::shared_ptr<const KernelRegistry> kernels;
  // Run each DequantizeLinear -> elementwise op -> QuantizeLinear chain of
  // per-tensor quantized values as one byte lookup
  // (runtime/quantized_lookup.h): the same output bytes, but the float
  // values in the middle are never computed, so an observer does not see
  // them. For runs that only want the outputs (run, eval, benchmarks).
  bool fuse_quantized_lookups = false;
};

// Called after each node (subgraph nodes included) with its outputs; an
// error stops the run and is returned from Run.
using NodeObserver = std::function<absl::Status(
    const ir::Node& node, const std::vector<RtTensor>& outputs)>;

struct RunStats {
  uint64_t bytes_allocated = 0;  // fresh allocations
  uint64_t bytes_reused = 0;     // served from released buffers
  int64_t nodes_run = 0;
};

class Interpreter {
 public:
  // Plans `graph` (copied; subgraphs are shared). A graph holding f16
  // values is planned in f32 with exact casts at its f16 inputs, outputs
  // and Casts (runtime/widen_f16.h; f16_widening() says what changed).
  // Unimplemented listing
  // every unsupported op with its node and the supported ops;
  // InvalidArgument naming the node when a value is read before any node,
  // input or initializer defines it; FailedPrecondition on a cycle.
  static absl::StatusOr<Interpreter> Create(const ir::Graph& graph,
                                            const InterpreterOptions& options);
  // As above, with the opset taken from the model's default-domain import.
  static absl::StatusOr<Interpreter> Create(const ir::Model& model,
                                            InterpreterOptions options);

  Interpreter(Interpreter&&) noexcept;
  Interpreter& operator=(Interpreter&&) noexcept;
  ~Interpreter();

  // Runs the graph. `inputs` must hold every graph input that is not an
  // initializer (an input that is also an initializer may override it).
  // Returns the graph outputs in order. InvalidArgument for a missing,
  // unknown or mistyped input; kernel errors name the node. Concurrent Run
  // calls are safe (they share the thread pool).
  absl::StatusOr<std::vector<RtTensor>> Run(
      const std::map<std::string, RtTensor>& inputs,
      RunStats* stats = nullptr) const;

  void SetObserver(NodeObserver observer);

  // What the f16 plan rewrite changed (all zero for an f32 graph).
  const F16Widening& f16_widening() const;
  // Chains the quantized-lookup rewrite fused (0 unless asked for).
  int64_t quantized_lookups() const;
  // The pool Run's kernels use: an observer may split its own work on it
  // (between nodes it is idle; a ParallelFor made while it is busy runs
  // inline).
  ThreadPool* thread_pool() const;

  // Graph inputs the caller must provide, and the outputs Run returns.
  const std::vector<std::string>& input_names() const;
  const std::vector<std::string>& output_names() const;

 private:
  struct Impl;
  explicit Interpreter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_INTERPRETER_H_

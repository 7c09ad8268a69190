// What a kernel sees: its node (attributes), typed input tensors, a way to
// allocate outputs, the thread pool, and a runner for subgraphs. Kernels are
// plain functions `absl::Status(KernelContext&)`, looked up by
// (domain, op_type) in a KernelRegistry; a quantized kernel is one more
// entry beside the float one.
#ifndef SLIMPACK_RUNTIME_KERNEL_H_
#define SLIMPACK_RUNTIME_KERNEL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/allocator.h"
#include "runtime/node_cache.h"
#include "runtime/rt_tensor.h"
#include "runtime/thread_pool.h"
#include "ir/graph.h"

namespace slimpack::runtime {

class KernelContext;
using KernelFn = absl::Status (*)(KernelContext& ctx);

// Runs `graph` (a subgraph of the current node) with `inputs` bound to its
// graph inputs and the current scope visible as its outer scope.
using SubgraphRunner = std::function<absl::StatusOr<std::vector<RtTensor>>(
    const ir::Graph& graph, const std::vector<RtTensor>& inputs)>;

class KernelContext {
 public:
  // `inputs[i]` is null for an omitted optional input.
  KernelContext(const ir::Node& node, int64_t opset,
                std::vector<const RtTensor*> inputs,
                TensorAllocator* allocator, ThreadPool* pool,
                const SubgraphRunner* subgraphs);

  const ir::Node& node() const { return node_; }
  // Opset version of the node's domain.
  int64_t opset() const { return opset_; }

  size_t num_inputs() const { return inputs_.size(); }
  // Null when input `i` is omitted or beyond the node's inputs.
  const RtTensor* input(size_t i) const {
    return i < inputs_.size() ? inputs_[i] : nullptr;
  }
  // InvalidArgument naming the input if it is omitted.
  absl::StatusOr<const RtTensor*> RequiredInput(size_t i) const;
  // InvalidArgument unless input `i` (if present) has dtype `want`.
  absl::Status ExpectDType(size_t i, ir::DType want) const;

  size_t num_outputs() const { return node_.outputs.size(); }
  // True if output `i` exists and is named (consumed or a graph output).
  bool wants_output(size_t i) const {
    return i < node_.outputs.size() && !node_.outputs[i].empty();
  }
  void SetOutput(size_t i, RtTensor t);
  std::vector<RtTensor>& outputs() { return outputs_; }

  // Output storage: zero-filled, or uninitialized where the kernel writes
  // every element.
  absl::StatusOr<RtTensor> Allocate(ir::DType dtype, std::vector<int64_t> dims);
  absl::StatusOr<RtTensor> AllocateUninitialized(ir::DType dtype,
                                                 std::vector<int64_t> dims);
  // Output storage for an elementwise result (each output element written
  // only after the input element at its index is read): input `input`'s
  // own buffer when this
  // node is its last reader, it owns that buffer whole and nothing else
  // holds it (SetLastReaders), so the result is written where the input
  // still sits in cache; otherwise AllocateUninitialized.
  absl::StatusOr<RtTensor> AllocateUninitializedOrReuse(size_t input, ir::DType dtype,
                                                        std::vector<int64_t> dims);
  // Per input, true when this node is the last reader of its value (the
  // plan's NodeStep::last_reader), so it may hand its buffer over.
  void SetLastReaders(const std::vector<bool>* last_readers) { last_readers_ = last_readers; }
  // Gives scratch storage back for reuse by later allocations.
  void Recycle(RtTensor t) { allocator_->Release(std::move(t)); }
  // The run's allocator, for kernels that run other kernels inside them
  // (runtime/kernels/fused_kernels.cc), so their intermediates are pooled
  // with the run's buffers.
  TensorAllocator& allocator() const { return *allocator_; }
  ThreadPool* pool() const { return pool_; }
  // The node's cache (node_cache.h) and which inputs are constants, when
  // the interpreter runs it from a plan; a fused kernel's base op (the Conv
  // or Gemm of a FusedConv/FusedGemm) shares its node's; kernels run
  // elsewhere (tests, other inner ops) have none.
  void SetNodeCache(NodeCache* cache, const std::vector<bool>* constant_inputs) {
    cache_ = cache;
    constant_inputs_ = constant_inputs;
  }
  NodeCache* node_cache() const { return cache_; }
  const std::vector<bool>* constant_inputs() const { return constant_inputs_; }
  // True when input `i` holds the same initializer on every run.
  bool input_is_constant(size_t i) const {
    return constant_inputs_ != nullptr && i < constant_inputs_->size() &&
           (*constant_inputs_)[i];
  }
  absl::StatusOr<std::vector<RtTensor>> RunSubgraph(
      const ir::Graph& graph, const std::vector<RtTensor>& inputs) const;

  // Attributes: the default when absent, InvalidArgument naming the
  // attribute when present with another kind.
  bool HasAttr(const std::string& name) const;
  absl::StatusOr<int64_t> IntAttr(const std::string& name, int64_t def) const;
  absl::StatusOr<float> FloatAttr(const std::string& name, float def) const;
  absl::StatusOr<std::string> StringAttr(const std::string& name,
                                         std::string def) const;
  absl::StatusOr<std::vector<int64_t>> IntsAttr(
      const std::string& name, std::vector<int64_t> def = {}) const;
  absl::StatusOr<std::vector<float>> FloatsAttr(
      const std::string& name, std::vector<float> def = {}) const;
  absl::StatusOr<std::vector<std::string>> StringsAttr(
      const std::string& name, std::vector<std::string> def = {}) const;
  // InvalidArgument if absent or not a graph.
  absl::StatusOr<const ir::Graph*> GraphAttr(const std::string& name) const;

 private:
  absl::StatusOr<const ir::Attribute*> Find(const std::string& name,
                                           ir::Attribute::Kind kind) const;

  const ir::Node& node_;
  int64_t opset_;
  std::vector<const RtTensor*> inputs_;
  std::vector<RtTensor> outputs_;
  TensorAllocator* allocator_;
  ThreadPool* pool_;
  const SubgraphRunner* subgraphs_;
  NodeCache* cache_ = nullptr;
  const std::vector<bool>* constant_inputs_ = nullptr;
  const std::vector<bool>* last_readers_ = nullptr;
};

// Helpers shared by kernels.

// Normalizes `axis` for `rank` (negative counts from the end);
// InvalidArgument when out of [-rank, rank).
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int64_t rank);
// Reads a 0-d or 1-d integer tensor (i64 or i32) as int64 values.
absl::StatusOr<std::vector<int64_t>> ReadInts(const RtTensor& t,
                                              const std::string& what);
// Reads a one-element numeric tensor as double.
absl::StatusOr<double> ReadScalar(const RtTensor& t, const std::string& what);
// "Unimplemented: <op> does not support dtype X; supported: a, b".
absl::Status UnsupportedDType(const KernelContext& ctx, ir::DType dtype,
                              const std::string& supported);

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_KERNEL_H_

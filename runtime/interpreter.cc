#include "runtime/interpreter.h"

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "runtime/allocator.h"
#include "runtime/gemm.h"
#include "runtime/graph_plan.h"
#include "runtime/quantized_lookup.h"
#include "runtime/thread_pool.h"
#include "support/status_macros.h"

namespace slimpack::runtime {
namespace {

// Idle activation memory an interpreter keeps between runs (per concurrent
// run): a CNN's whole working set, a decoder's largest few activations;
// more would pin memory that a long-lived interpreter of a large model
// does not give back.
constexpr uint64_t kIdleBytesKeptBetweenRuns = uint64_t{64} << 20;

// Values of one running graph; `parent` is the enclosing graph's frame.
struct Frame {
  const GraphPlan* plan;
  std::vector<RtTensor> slots;
  const Frame* parent;
};

std::string NodeLabel(const ir::Node& n) {
  return "node '" + n.name + "' (" + n.op_type + ")";
}

absl::Status CheckInput(const GraphPlan::Input& in, const RtTensor& t) {
  const ir::ValueInfo& info = *in.info;
  if (info.dtype != ir::DType::kUndefined && info.dtype != t.dtype()) {
    return absl::InvalidArgumentError("input '" + in.name + "' has dtype " +
                                      std::string(ir::DTypeName(t.dtype())) + ", expected " +
                                      std::string(ir::DTypeName(info.dtype)));
  }
  if (!info.shape.rank_known()) return absl::OkStatus();
  bool ok = info.shape.rank() == t.rank();
  for (size_t i = 0; ok && i < t.rank(); ++i) {
    const ir::Dim& d = info.shape.dim(i);
    ok = !d.is_static() || d.value == t.dim(i);
  }
  if (!ok) {
    return absl::InvalidArgumentError("input '" + in.name + "' has shape " +
                                      DimsToString(t.dims()) + ", expected " +
                                      info.shape.ToString());
  }
  return absl::OkStatus();
}

}  // namespace

struct Interpreter::Impl {
  std::shared_ptr<const ir::Graph> graph;
  std::shared_ptr<const KernelRegistry> kernels;
  InterpreterOptions options;
  std::unique_ptr<GraphPlan> plan;
  std::unique_ptr<ThreadPool> pool;
  NodeObserver observer;
  std::vector<std::string> input_names;
  F16Widening f16;  // what the f16 plan rewrite changed
  int64_t quantized_lookups = 0;  // chains the lookup rewrite fused
  // Allocators of finished runs with their idle buffers: a Run takes one
  // (concurrent runs each take their own) and gives it back. A
  // MobileNet-style run spent an eighth of its time faulting in the pages of
  // fresh activation buffers before this.
  mutable std::mutex allocators_mu;
  mutable std::vector<std::unique_ptr<TensorAllocator>> idle_allocators;

  absl::StatusOr<std::vector<RtTensor>> RunGraph(const GraphPlan& plan,
                                                 std::vector<RtTensor> slots,
                                                 const Frame* parent,
                                                 TensorAllocator& allocator,
                                                 RunStats& stats) const;
};

absl::StatusOr<std::vector<RtTensor>> Interpreter::Impl::RunGraph(
    const GraphPlan& gp, std::vector<RtTensor> slots, const Frame* parent,
    TensorAllocator& allocator, RunStats& stats) const {
  Frame frame{&gp, std::move(slots), parent};
  for (const auto& [slot, t] : gp.constants) {
    if (!frame.slots[slot].defined()) frame.slots[slot] = t;
  }
  for (const auto& [name, slot] : gp.outer_refs) {
    const RtTensor* found = nullptr;
    for (const Frame* f = parent; f != nullptr && found == nullptr; f = f->parent) {
      auto it = f->plan->slot_of.find(name);
      if (it != f->plan->slot_of.end() && f->slots[it->second].defined()) {
        found = &f->slots[it->second];
      }
    }
    if (found == nullptr) {
      return absl::InternalError("outer-scope value '" + name + "' is not available");
    }
    frame.slots[slot] = *found;
  }
  const SubgraphRunner runner = [&](const ir::Graph& g, const std::vector<RtTensor>& ins)
      -> absl::StatusOr<std::vector<RtTensor>> {
    auto it = gp.subgraphs.find(&g);
    if (it == gp.subgraphs.end()) return absl::InternalError("subgraph was not planned");
    const GraphPlan& sub = *it->second;
    if (ins.size() != sub.inputs.size()) {
      return absl::InvalidArgumentError("subgraph '" + g.name + "' takes " +
                                        std::to_string(sub.inputs.size()) + " inputs, got " +
                                        std::to_string(ins.size()));
    }
    std::vector<RtTensor> sub_slots(sub.num_slots);
    for (size_t i = 0; i < ins.size(); ++i) sub_slots[sub.inputs[i].slot] = ins[i];
    return RunGraph(sub, std::move(sub_slots), &frame, allocator, stats);
  };
  for (const NodeStep& step : gp.steps) {
    const ir::Node& node = *step.node;
    std::vector<const RtTensor*> inputs;
    inputs.reserve(step.inputs.size());
    for (int slot : step.inputs) {
      if (slot < 0) {
        inputs.push_back(nullptr);
        continue;
      }
      if (!frame.slots[slot].defined()) {
        return absl::InternalError(NodeLabel(node) + ": an input has no value");
      }
      inputs.push_back(&frame.slots[slot]);
    }
    const bool default_domain = node.domain.empty() || node.domain == "ai.onnx";
    KernelContext ctx(node, default_domain ? options.opset_version : 1, std::move(inputs),
                      &allocator, pool.get(), &runner);
    ctx.SetNodeCache(step.cache.get(), &step.constant_inputs);
    ctx.SetLastReaders(&step.last_reader);
    absl::Status status = step.fn(ctx);
    if (!status.ok()) return Annotate(status, NodeLabel(node));
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      if (!ctx.outputs()[i].defined()) {
        return absl::InternalError(NodeLabel(node) + " produced no value for output '" +
                                   node.outputs[i] + "'");
      }
    }
    ++stats.nodes_run;
    if (observer) {
      absl::Status s = observer(node, ctx.outputs());
      if (!s.ok()) return Annotate(s, "observer after " + NodeLabel(node));
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] >= 0) frame.slots[step.outputs[i]] = std::move(ctx.outputs()[i]);
    }
    for (int slot : step.release_after) {
      allocator.Release(std::move(frame.slots[slot]));
      frame.slots[slot] = RtTensor();
    }
  }
  std::vector<RtTensor> outputs;
  outputs.reserve(gp.outputs.size());
  for (size_t i = 0; i < gp.outputs.size(); ++i) {
    const RtTensor& t = frame.slots[gp.outputs[i]];
    if (!t.defined()) {
      return absl::InvalidArgumentError("graph output '" + gp.output_names[i] +
                                        "' has no value (an input left unset?)");
    }
    // A graph's declared output types are the contract its users were
    // typed (and quantized) against; an If branch computing i64 where it
    // declares f32 must not flow on as f32.
    const ir::DType declared =
        i < gp.graph->outputs.size() ? gp.graph->outputs[i].dtype : ir::DType::kUndefined;
    if (declared != ir::DType::kUndefined && t.dtype() != declared) {
      return absl::InvalidArgumentError(
          std::string(parent == nullptr ? "graph" : "subgraph '" + gp.graph->name + "'") +
          " output '" + gp.output_names[i] + "' is " + std::string(ir::DTypeName(t.dtype())) +
          " but the graph declares " + std::string(ir::DTypeName(declared)));
    }
    outputs.push_back(t);
  }
  return outputs;
}

Interpreter::Interpreter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Interpreter::Interpreter(Interpreter&&) noexcept = default;
Interpreter& Interpreter::operator=(Interpreter&&) noexcept = default;
Interpreter::~Interpreter() = default;

absl::StatusOr<Interpreter> Interpreter::Create(const ir::Graph& graph,
                                                const InterpreterOptions& options) {
  if (options.num_threads < 1) {
    return absl::InvalidArgumentError("num_threads must be >= 1, got " +
                                      std::to_string(options.num_threads));
  }
  auto impl = std::make_unique<Impl>();
  auto copy = std::make_shared<ir::Graph>(graph);
  if (HoldsF16(*copy)) {
    auto widened = WidenF16ToF32(*copy);
    if (!widened.ok()) return widened.status();
    impl->f16 = *widened;
  }
  impl->kernels = options.kernels ? options.kernels
                                  : std::make_shared<const KernelRegistry>(BuiltinKernels());
  if (options.fuse_quantized_lookups) {
    ASSIGN_OR_RETURN(impl->quantized_lookups,
                     FuseQuantizedLookups(*copy, impl->kernels, options.opset_version));
  }
  impl->graph = std::move(copy);
  impl->options = options;
  auto plan = BuildGraphPlan(*impl->graph, *impl->kernels, {});
  if (!plan.ok()) return plan.status();
  impl->plan = *std::move(plan);
  for (const auto& in : impl->plan->inputs) {
    if (!in.has_default) impl->input_names.push_back(in.name);
  }
  impl->pool = std::make_unique<ThreadPool>(options.num_threads);
  return Interpreter(std::move(impl));
}

absl::StatusOr<Interpreter> Interpreter::Create(const ir::Model& model,
                                                InterpreterOptions options) {
  for (const auto& [domain, version] : model.opset_imports) {
    if (domain.empty() || domain == "ai.onnx") options.opset_version = version;
  }
  return Create(model.graph, options);
}

absl::StatusOr<std::vector<RtTensor>> Interpreter::Run(
    const std::map<std::string, RtTensor>& inputs, RunStats* stats) const {
  const GraphPlan& gp = *impl_->plan;
  std::vector<RtTensor> slots(gp.num_slots);
  size_t used = 0;
  for (const auto& in : gp.inputs) {
    auto it = inputs.find(in.name);
    if (it == inputs.end()) {
      if (in.has_default) continue;
      return absl::InvalidArgumentError("missing input '" + in.name + "'");
    }
    RETURN_IF_ERROR(CheckInput(in, it->second));
    slots[in.slot] = it->second;
    ++used;
  }
  if (used != inputs.size()) {
    for (const auto& [name, t] : inputs) {
      bool known = false;
      for (const auto& in : gp.inputs) known = known || in.name == name;
      if (!known) {
        std::string expected;
        for (const auto& n : impl_->input_names) expected += (expected.empty() ? "" : ", ") + n;
        return absl::InvalidArgumentError("unknown input '" + name + "'; graph inputs: " +
                                          expected);
      }
    }
  }
  std::unique_ptr<TensorAllocator> allocator;
  {
    std::lock_guard<std::mutex> lock(impl_->allocators_mu);
    if (!impl_->idle_allocators.empty()) {
      allocator = std::move(impl_->idle_allocators.back());
      impl_->idle_allocators.pop_back();
    }
  }
  if (allocator == nullptr) {
    allocator = std::make_unique<TensorAllocator>(impl_->options.max_tensor_bytes);
  }
  RunStats local;
  auto out = impl_->RunGraph(gp, std::move(slots), nullptr, *allocator, local);
  local.bytes_allocated = allocator->bytes_allocated();
  local.bytes_reused = allocator->bytes_reused();
  if (stats != nullptr) *stats = local;
  allocator->StartNextRun(kIdleBytesKeptBetweenRuns);
  {
    std::lock_guard<std::mutex> lock(impl_->allocators_mu);
    impl_->idle_allocators.push_back(std::move(allocator));
  }
  return out;
}

void Interpreter::SetObserver(NodeObserver observer) {
  impl_->observer = std::move(observer);
}

const F16Widening& Interpreter::f16_widening() const { return impl_->f16; }

int64_t Interpreter::quantized_lookups() const { return impl_->quantized_lookups; }

ThreadPool* Interpreter::thread_pool() const { return impl_->pool.get(); }

const std::vector<std::string>& Interpreter::input_names() const {
  return impl_->input_names;
}

const std::vector<std::string>& Interpreter::output_names() const {
  return impl_->plan->output_names;
}

}  // namespace slimpack::runtime

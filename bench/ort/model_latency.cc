// Latency of slimpack's interpreter on an ONNX model with fixed inputs: the
// counterpart of ort_bench.mjs for scripts/ort_latency.sh. Times
// Interpreter::Run only (model import and planning happen once, before),
// after warm-up runs, and prints one JSON line with the median and min in ms.
// --profile adds a per-op-type breakdown measured through the observer hook
// (time from the previous node's end to this node's end, so interpreter
// overhead between nodes is charged to the next node).
//
// --profile-nodes prints the same per node, in graph order.
//
// --passes default runs slimpack's default pass pipeline for the model (what
// `slimpack convert` would apply: fusions, constant folding, ...) before
// timing, the counterpart of ORT's graph optimisation level 'all';
// --passes SPEC runs the given comma-separated pipeline instead. Without it
// the imported graph runs as is. The pass time is not part of the latency.
//
// --no-byte-dot keeps the W8A8 kernels off their byte dot product path
// (runtime/kernels/int8_dot.h), to time the float-exact / pmaddwd paths
// SSE2-only CPUs take (the sums are the same); --byte-dot puts them on it
// (the portable loop where the CPU has no vector kernel). The vector
// requantisation of integer sums and the lookups stay on.
//
// Usage: model_latency MODEL --inputs IN.npz [--threads N] [--warmup W]
//                      [--iters I] [--profile] [--profile-nodes]
//                      [--passes default|SPEC] [--out OUT.npz]
//                      [--no-byte-dot | --byte-dot]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "eval/named_tensors.h"
#include "eval/runnable_model.h"
#include "runtime/interpreter.h"
#include "runtime/kernels/int8_dot.h"
#include "formats/numpy/numpy_io.h"
#ifdef SLIMPACK_HAVE_PASSES
#include "runtime/kernels/fused_kernels.h"
#include "support/cpu_features.h"
#include "passes/pipeline.h"
#endif

namespace slimpack {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string model, inputs, out;
  std::string passes;  // "" = none, "default", or a pass pipeline spec
  int threads = 1, warmup = 3, iters = 20;
  bool profile = false;
  bool profile_nodes = false;
  int byte_dot = -1;  // -1: the default for this CPU; 0 off, 1 on
};

constexpr char kUsage[] =
    "usage: model_latency MODEL --inputs IN.npz [--threads N] [--warmup W] "
    "[--iters I] [--profile] [--profile-nodes] [--passes default|SPEC] "
    "[--out OUT.npz] [--no-byte-dot | --byte-dot]\n";

bool ParseInt(const char* s, int min, int* v) {
  char* end = nullptr;
  const long x = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || x < min || x > 1000000) return false;
  *v = static_cast<int>(x);
  return true;
}

bool Parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--profile") {
      o->profile = true;
    } else if (a == "--no-byte-dot") {
      o->byte_dot = 0;
    } else if (a == "--byte-dot") {
      o->byte_dot = 1;
    } else if (a == "--profile-nodes") {
      o->profile_nodes = true;
    } else if (a == "--inputs" && has_value) {
      o->inputs = argv[++i];
    } else if (a == "--passes" && has_value) {
      o->passes = argv[++i];
      if (o->passes.empty()) return false;
    } else if (a == "--out" && has_value) {
      o->out = argv[++i];
    } else if (a == "--threads" && has_value) {
      if (!ParseInt(argv[++i], 1, &o->threads)) return false;
    } else if (a == "--warmup" && has_value) {
      if (!ParseInt(argv[++i], 0, &o->warmup)) return false;
    } else if (a == "--iters" && has_value) {
      if (!ParseInt(argv[++i], 1, &o->iters)) return false;
    } else if (a.rfind("--", 0) != 0 && o->model.empty()) {
      o->model = a;
    } else {
      return false;
    }
  }
  return !o->model.empty() && !o->inputs.empty();
}

double Ms(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

int Fail(const std::string& what, const absl::Status& s) {
  std::fprintf(stderr, "model_latency: %s: %s\n", what.c_str(),
               std::string(s.message()).c_str());
  return 1;
}

int Main(int argc, char** argv) {
  Options o;
  if (!Parse(argc, argv, &o)) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  auto model = eval::LoadRunnableModel(o.model);
  if (!model.ok()) return Fail(o.model, model.status());
  const int64_t nodes_before = static_cast<int64_t>(model->graph.nodes.size());
  if (!o.passes.empty()) {
#ifndef SLIMPACK_HAVE_PASSES
    return Fail(o.model, absl::UnimplementedError(
                             "--passes needs the slimpack_passes library, absent from this build"));
#else
    passes::PipelineRequest req;
    req.use_default = o.passes == "default";
    if (!req.use_default) req.passes = {o.passes};
    auto result = passes::RunPipeline(*model, req);
    if (!result.ok()) return Fail(o.model + " --passes " + o.passes, result.status());
#endif
  }
  const int64_t nodes_run = static_cast<int64_t>(model->graph.nodes.size());
  auto tensors = numpy::ReadNpyOrNpz(o.inputs);
  if (!tensors.ok()) return Fail(o.inputs, tensors.status());
  auto inputs = eval::MatchGraphInputs(model->graph, *tensors, o.inputs);
  if (!inputs.ok()) return Fail(o.inputs, inputs.status());
  if (o.byte_dot >= 0) runtime::kernels::int8dot::SetFast(o.byte_dot == 1);
  runtime::InterpreterOptions iopts;
  iopts.num_threads = o.threads;
  // As `slimpack run`: W8A8 activation chains as byte lookups.
  iopts.fuse_quantized_lookups = true;
#ifdef SLIMPACK_HAVE_PASSES
  // The passes emit slimpack-domain fused ops (FusedConv, Attention, ...).
  
#endif
  auto interp = runtime::Interpreter::Create(*model, iopts);
  if (!interp.ok()) return Fail(o.model, interp.status());

  // Per op type: accumulated ms and node count over the timed runs.
  std::map<std::string, std::pair<double, int64_t>> by_op;
  // Per node name: accumulated ms, and the order nodes first ran in.
  std::map<std::string, double> by_node;
  std::vector<std::pair<std::string, std::string>> node_order;
  Clock::time_point last;
  bool timing = false;
  if (o.profile || o.profile_nodes) {
    interp->SetObserver([&](const ir::Node& node,
                            const std::vector<runtime::RtTensor>&) {
      const Clock::time_point now = Clock::now();
      if (timing) {
        auto& e = by_op[node.op_type];
        e.first += Ms(now - last);
        ++e.second;
        auto [it, fresh] = by_node.emplace(node.name, 0.0);
        if (fresh) node_order.push_back({node.name, node.op_type});
        it->second += Ms(now - last);
      }
      last = now;
      return absl::OkStatus();
    });
  }
  for (int i = 0; i < o.warmup; ++i) {
    auto out = interp->Run(*inputs);
    if (!out.ok()) return Fail(o.model, out.status());
  }
  timing = true;
  std::vector<double> ms;
  for (int i = 0; i < o.iters; ++i) {
    const Clock::time_point t0 = Clock::now();
    last = t0;
    auto out = interp->Run(*inputs);
    ms.push_back(Ms(Clock::now() - t0));
    if (!out.ok()) return Fail(o.model, out.status());
    if (i + 1 == o.iters && !o.out.empty()) {
      std::vector<ir::Tensor> named;
      for (size_t j = 0; j < out->size(); ++j) {
        std::string name = interp->output_names()[j];
        while (!name.empty() && name[0] == '/') name.erase(0, 1);
        named.push_back(eval::IrTensorFromRt(name, (*out)[j]));
      }
      absl::Status s = numpy::WriteNpz(o.out, named);
      if (!s.ok()) return Fail(o.out, s);
    }
  }
  std::sort(ms.begin(), ms.end());
  const size_t n = ms.size();
  const double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  std::printf(
      "{\"runtime\":\"slimpack\",\"model\":\"%s\",\"threads\":%d,\"iters\":%d,"
      "\"median_ms\":%.3f,\"min_ms\":%.3f,\"passes\":\"%s\",\"nodes\":%lld,"
      "\"nodes_imported\":%lld}\n",
      o.model.c_str(), o.threads, o.iters, median, ms.front(),
      o.passes.empty() ? "none" : o.passes.c_str(), static_cast<long long>(nodes_run),
      static_cast<long long>(nodes_before));
  if (o.profile) {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto& [op, e] : by_op) {
      rows.push_back({e.first / o.iters, op});
      total += e.first / o.iters;
    }
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "%-24s %10s %7s %6s\n", "op_type", "ms/run", "share", "nodes");
    for (const auto& [t, op] : rows) {
      std::fprintf(stderr, "%-24s %10.3f %6.1f%% %6lld\n", op.c_str(), t,
                   100.0 * t / total,
                   static_cast<long long>(by_op[op].second / o.iters));
    }
  }
  if (o.profile_nodes) {
    for (const auto& [name, op] : node_order) {
      std::fprintf(stderr, "%-40s %-20s %10.3f\n", name.c_str(), op.c_str(),
                   by_node[name] / o.iters);
    }
  }
  return 0;
}

}  // namespace
}  // namespace slimpack

int main(int argc, char** argv) {
  slimpack::support::CpuCapInForce();  // SLIMPACK_CPU_MAX, before any thread
  return slimpack::Main(argc, argv);
}

#include "quantize/gptq_layers.h"

#include <climits>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "calibration/linear_stats.h"
#include "hf/llama_graph_builder.h"
#include "ir/graph_slice.h"
#include "quantize/layer_cache.h"
#include "quantize/layer_cut.h"
#include "quantize/weight_matrix.h"
#include "support/input_pages.h"
#include "support/status_macros.h"

namespace slimpack::quantize {
absl::StatusOr<ir::Model> RunnableModel(const ir::Model& model) {
  if (!model.graph.nodes.empty()) return model;
  return hf::BuildDecoderGraph(model);
}

std::map<int, std::vector<std::string>> WeightGroupsByLayer(const ir::Model& model,
                                                            const std::vector<std::string>& weights) {
  std::map<int, std::vector<std::string>> groups;
  for (const std::string& w : weights) {
    const ir::Tensor* t = model.graph.FindInitializer(w);
    const int layer = model.graph.nodes.empty() && t != nullptr && t->layer >= 0 ? t->layer
                                                                                  : INT_MAX;
    groups[layer].push_back(w);
  }
  return groups;
}

absl::Status RunLayerwiseGptq(const ir::Model& model, const std::vector<std::string>& weights,
                              calibration::Dataset& data, const LayerwiseGptqOptions& options,
                              const QuantizeLinearFn& quantize) {
  auto log = [&options](const std::string& line) {
    if (options.log) options.log(line);
  };
  const std::map<int, std::vector<std::string>> groups = WeightGroupsByLayer(model, weights);
  std::vector<std::vector<std::string>> weight_groups;
  for (const auto& entry : groups) weight_groups.push_back(entry.second);
  std::vector<std::vector<std::string>> cut;
  {
    ASSIGN_OR_RETURN(ir::Model runnable, RunnableModel(model));
    ASSIGN_OR_RETURN(cut, CachedValuesPerGroup(runnable.graph, weight_groups));
  }
  ASSIGN_OR_RETURN(const int64_t runs, CountRuns(data, options.max_runs));
  RunValues cache(runs);  // cut[g] per run; empty maps: run from the inputs
  bool caching = true;
  bool released = false;  // stand-ins of groups behind the cache dropped
  const support::InputPages pages = support::InputPages::Snapshot(model.input_files);
  // Dequantized stand-ins for already-quantized weights, by name.
  std::map<std::string, ir::Tensor> stand_ins;
  support::ProgressEvent layers{options.stage, 0, static_cast<int64_t>(groups.size()), "layers", ""};
  if (options.progress) options.progress(layers);
  size_t g = 0;
  for (const auto& [layer, members] : groups) {
    ASSIGN_OR_RETURN(ir::Model runnable, RunnableModel(model));
    for (const auto& entry : stand_ins) {
      if (runnable.graph.FindInitializer(entry.first)) {
        RETURN_IF_ERROR(ReplaceInitializer(runnable.graph, entry.second));
      }
    }
    if (g > 0 && caching) {
      ASSIGN_OR_RETURN(std::optional<RunValues> next,
                       AdvanceCachedValues(runnable, cache, cut[g - 1], cut[g], data,
                                           options.threads, options.cache_bytes));
      caching = next.has_value();
      cache = caching ? *std::move(next) : RunValues(runs);
      if (!caching) {
        if (released) {
          // Every layer's cached values have the residual stream's shape,
          // so this follows a first advance that fitted only if the
          // budget was met by one layer and not the next.
          return absl::InternalError(absl::StrCat(
              "quantize: ", options.stage, ": values between layers exceeded ",
              options.cache_bytes, " bytes at layer ", layer,
              " after earlier layers' did not, and the quantized weights before it "
              "were already released"));
        }
        log(absl::StrCat("quantize: ", options.stage, ": values between layers exceed ", options.cache_bytes,
                         " bytes; each later layer runs from the model inputs"));
      } else {
        // Later runs start from the values just cached, past group g-1:
        // its stand-ins (f32 copies, the model's size over all groups)
        // are read no more.
        for (const std::string& name : weight_groups[g - 1]) stand_ins.erase(name);
        released = true;
      }
    }
    const std::vector<std::string> fed_names = caching ? cut[g] : std::vector<std::string>();
    // The linears of the whole graph: the slice stops at their inputs.
    const std::vector<calibration::LinearLayer> linears =
        calibration::FindLinearLayers(runnable.graph);
    ASSIGN_OR_RETURN(runnable.graph,
                     ir::SliceGraph(runnable.graph,
                                    CaptureTargets(runnable.graph, linears, weight_groups[g]),
                                    std::set<std::string>(fed_names.begin(), fed_names.end())));
    log(absl::StrCat("quantize: ", options.stage, ": capturing X^T X for ", members.size(), " linear layers",
                     layer == INT_MAX ? "" : absl::StrCat(" of layer ", layer), " (",
                     runnable.graph.nodes.size(), " nodes from ",
                     fed_names.empty() ? std::string("the model inputs")
                                       : absl::StrJoin(fed_names, ", "),
                     ")"));
    CaptureRequest cr;
    cr.hessian = true;
    cr.progress = options.progress;
    cr.context = layer == INT_MAX ? options.stage : absl::StrCat(options.stage, " layer ", layer);
    cr.fed = &cache;
    cr.layers = &linears;
    ASSIGN_OR_RETURN(auto captured, CaptureLinearInputs(runnable, weight_groups[g], data,
                                                        options.max_runs, cr, options.threads));
    ++g;
    for (const std::string& name : members) {
      ASSIGN_OR_RETURN(ir::Tensor stand_in, quantize(name, captured.at(name)));
      stand_ins[name] = std::move(stand_in);
    }
    // The group's weights are read and quantized: their file pages leave
    // this process's memory (float_walk.cc does the same).
    for (const ir::Tensor& t : runnable.graph.initializers()) pages.Release(t.data.data(), t.data.size());
    for (const std::string& name : members) {
      if (const ir::Tensor* t = model.graph.FindInitializer(name)) {
        pages.Release(t->data.data(), t->data.size());
      }
    }
    ++layers.done;
    layers.context = cr.context;
    if (options.progress) options.progress(layers);
  }
  return absl::OkStatus();
}

}  // namespace slimpack::quantize

#include "quantize/float_walk.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "calibration/linear_stats.h"
#include "ir/graph_slice.h"
#include "quantize/gptq_layers.h"
#include "quantize/layer_cache.h"
#include "quantize/layer_cut.h"
#include "support/input_pages.h"
#include "support/status_macros.h"

namespace slimpack::quantize {

absl::Status WalkFloatModel(
    const ir::Model& model, const std::vector<std::string>& weights, calibration::Dataset& data,
    const FloatWalkOptions& options,
    const std::function<absl::Status(const std::string& weight, CapturedInput& input)>& sink) {
  auto log = [&options](const std::string& line) {
    if (options.log) options.log(absl::StrCat("quantize: ", options.stage, ": ", line));
  };
  const std::map<int, std::vector<std::string>> groups = WeightGroupsByLayer(model, weights);
  std::vector<std::vector<std::string>> weight_groups;
  for (const auto& entry : groups) weight_groups.push_back(entry.second);
  ASSIGN_OR_RETURN(const ir::Model runnable, RunnableModel(model));
  ASSIGN_OR_RETURN(const std::vector<std::vector<std::string>> cut,
                   CachedValuesPerGroup(runnable.graph, weight_groups));
  ASSIGN_OR_RETURN(const int64_t runs, CountRuns(data, options.max_runs));
  const std::vector<calibration::LinearLayer> linears =
      calibration::FindLinearLayers(runnable.graph);
  const support::InputPages pages = support::InputPages::Snapshot(model.input_files);
  RunValues cache(runs);  // cut[g] per run; empty maps: run from the inputs
  bool caching = true;
  support::ProgressEvent layers{options.stage, 0, static_cast<int64_t>(groups.size()), "layers",
                                ""};
  if (options.progress) options.progress(layers);
  size_t g = 0;
  for (const auto& [layer, members] : groups) {
    const std::vector<std::string> fed = caching ? cut[g] : std::vector<std::string>();
    std::vector<std::string> targets = CaptureTargets(runnable.graph, linears, members);
    // The values group g+1 starts from come out of this run too.
    const bool advance = caching && g + 1 < groups.size() && !cut[g + 1].empty();
    if (advance) {
      for (const std::string& v : cut[g + 1]) {
        if (std::find(targets.begin(), targets.end(), v) == targets.end()) targets.push_back(v);
      }
    }
    ir::Model slice = runnable;  // initializers share their bytes
    ASSIGN_OR_RETURN(slice.graph, ir::SliceGraph(runnable.graph, targets,
                                                 std::set<std::string>(fed.begin(), fed.end())));
    log(absl::StrCat(options.capture.hessian ? "capturing X^T X for " : "capturing the inputs of ",
                     members.size(), " linear layers",
                     layer == INT_MAX ? "" : absl::StrCat(" of layer ", layer), " (",
                     slice.graph.nodes.size(), " nodes from ",
                     fed.empty() ? std::string("the model inputs") : absl::StrJoin(fed, ", "),
                     ")"));
    CaptureRequest cr = options.capture;
    cr.progress = options.progress;
    cr.context = layer == INT_MAX ? options.stage : absl::StrCat(options.stage, " layer ", layer);
    cr.fed = &cache;
    cr.layers = &linears;
    std::optional<RunValues> next;
    if (advance) {
      cr.keep = cut[g + 1];
      cr.keep_max_bytes = options.cache_bytes;
      cr.kept = &next;
    }
    ASSIGN_OR_RETURN(auto captured, CaptureLinearInputs(slice, members, data, options.max_runs,
                                                        cr, options.threads));
    // The group's weights are read: their file pages leave this process's
    // memory (the page cache keeps them), or a walk over a mapped 7B
    // checkpoint would end holding all of it.
    for (const ir::Tensor& t : slice.graph.initializers()) pages.Release(t.data.data(), t.data.size());
    if (advance && !next) {
      log(absl::StrCat("values between layers exceed ", options.cache_bytes,
                       " bytes; each later layer runs from the model inputs"));
    }
    caching = advance && next.has_value();
    cache = caching ? *std::move(next) : RunValues(runs);
    for (const std::string& name : members) RETURN_IF_ERROR(sink(name, captured.at(name)));
    ++g;
    ++layers.done;
    layers.context = cr.context;
    if (options.progress) options.progress(layers);
  }
  return absl::OkStatus();
}

}  // namespace slimpack::quantize

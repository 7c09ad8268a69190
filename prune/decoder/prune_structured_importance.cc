// Weight-based group importance (GroupImportance, prune_structured.h): the
// l1 / l2 / activation scores. The loss criterion is scored elsewhere
// (RemovalErrors, prune_loss.h) because it needs X^T X, not the weights alone.
#include "prune/decoder/prune_structured.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "quantize/weight_matrix.h"
#include "support/status_macros.h"

namespace slimpack::prune {
namespace {

using quantize::ToF32;

// f32 values of the named initializers, loaded once.
class WeightCache {
 public:
  explicit WeightCache(const ir::Model& m) : m_(m) {}
  absl::StatusOr<const std::vector<float>*> Get(const std::string& name) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return &it->second;
    const ir::Tensor* t = m_.graph.FindInitializer(name);
    if (t == nullptr) return absl::NotFoundError("no tensor '" + name + "'");
    ASSIGN_OR_RETURN(std::vector<float> v, ToF32(*t));
    return &cache_.emplace(name, std::move(v)).first->second;
  }

 private:
  const ir::Model& m_;
  std::map<std::string, std::vector<float>> cache_;
};

int64_t Cols(const ir::Model& m, const std::string& name) {
  const ir::Tensor* t = m.graph.FindInitializer(name);
  return t->dims.size() == 2 ? t->dims[1] : 1;
}

}  // namespace

absl::StatusOr<std::vector<double>> GroupImportance(const ir::Model& m, const DecoderGroups& g,
                                                    int64_t layer, GroupKind kind, Criterion c,
                                                    const InputNorms& norms) {
  const int64_t n = kind == GroupKind::kMlpChannel ? g.intermediate_size : g.num_kv_heads;
  const LayerTensors& lt = g.layers[layer];
  // Input norms per weight: k/v/q share q's input, up shares gate's.
  auto norm_of = [&](const std::string& w) -> const std::vector<double>* {
    if (c != Criterion::kActivation) return nullptr;
    std::string key = w;
    if (w == lt.k || w == lt.v) key = lt.q;
    if (w == lt.up) key = lt.gate;
    auto it = norms.find(key);
    return it == norms.end() ? nullptr : &it->second;
  };
  if (c == Criterion::kLoss) {
    return absl::InvalidArgumentError("GroupImportance: the loss criterion needs X^T X "
                                      "(prune/decoder/prune_loss.h)");
  }
  WeightCache cache(m);
  std::vector<double> score(n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    const PruneGroup grp = kind == GroupKind::kMlpChannel ? MlpChannelGroup(g, layer, i)
                                                          : KvHeadGroup(g, layer, i);
    double acc = 0;
    for (const TensorSlice& s : grp.members) {
      ASSIGN_OR_RETURN(const std::vector<float>* w, cache.Get(s.tensor));
      const int64_t cols = Cols(m, s.tensor);
      const int64_t rows = static_cast<int64_t>(w->size()) / cols;
      const bool is_bias = m.graph.FindInitializer(s.tensor)->dims.size() == 1;
      const std::vector<double>* norm = is_bias ? nullptr : norm_of(s.tensor);
      if (c == Criterion::kActivation && !is_bias && norm == nullptr) {
        return absl::InternalError("no calibration input norms for '" + s.tensor + "'");
      }
      auto add = [&](int64_t r, int64_t col) {
        const double v = (*w)[r * cols + col];
        switch (c) {
          case Criterion::kL1: acc += std::fabs(v); break;
          case Criterion::kL2: acc += v * v; break;
          case Criterion::kActivation: acc += std::fabs(v) * (norm ? (*norm)[col] : 1.0); break;
          case Criterion::kLoss: break;
        }
      };
      if (s.axis == 0) {
        for (int64_t r = s.begin; r < s.end; ++r)
          for (int64_t col = 0; col < cols; ++col) add(r, col);
      } else {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t col = s.begin; col < s.end; ++col) add(r, col);
      }
    }
    score[i] = c == Criterion::kL2 ? std::sqrt(acc) : acc;
  }
  return score;
}

}  // namespace slimpack::prune

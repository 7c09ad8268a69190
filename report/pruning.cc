// Reads the prune record of a candidate artifact (report/pruning.h).
#include "report/pruning.h"

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

namespace slimpack::report {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& source, const std::string& key, const json& found) {
  return absl::InvalidArgumentError(source + ": producer.passes prune record: '" + key +
                                    "' is missing or not a non-negative integer, found " +
                                    found.dump());
}

// A non-negative integer field; `optional` ones default to 0 when absent.
absl::StatusOr<uint64_t> Count(const json& j, const char* key, const std::string& source,
                               bool optional) {
  auto it = j.find(key);
  if (it == j.end() && optional) return 0;
  // Parsed JSON holds non-negative integers as unsigned, in-memory records
  // as signed.
  if (it == j.end() || !it->is_number_integer() ||
      (!it->is_number_unsigned() && it->get<int64_t>() < 0)) {
    return Bad(source, key, it == j.end() ? json(nullptr) : *it);
  }
  return it->get<uint64_t>();
}

double Ratio(int64_t kept, int64_t total) {
  return total > 0 ? static_cast<double>(kept) / static_cast<double>(total)
                   : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

double PrunedLayer::MlpKeptRatio() const { return Ratio(mlp_kept, mlp_total); }
double PrunedLayer::HeadsKeptRatio() const { return Ratio(heads_kept, heads_total); }
double PrunedGroup::KeptRatio() const { return Ratio(kept, channels); }

absl::StatusOr<std::optional<PruningSummary>> PruningFromPasses(const json& passes,
                                                                const std::string& source) {
  if (!passes.is_array()) return std::optional<PruningSummary>();
  const json* rec = nullptr;
  for (const json& p : passes) {
    if (p.is_object() && p.value("name", "") == "prune") rec = &p;
  }
  if (rec == nullptr) return std::optional<PruningSummary>();
  const json stats = rec->value("stats", json::object());
  const json options = rec->value("options", json::object());
  if (!stats.is_object() || !stats.value("changed", false)) return std::optional<PruningSummary>();
  PruningSummary s;
  if (options.is_object()) {
    s.criterion = options.value("criterion", "");
    s.target = options.value("target", "");
    s.refit = options.value("refit", false);
  }
  auto count = [&](const json& j, const char* key, bool optional, auto* out) -> absl::Status {
    auto v = Count(j, key, source, optional);
    if (!v.ok()) return v.status();
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(*v);
    return absl::OkStatus();
  };
  for (auto [key, out] : {std::pair{"parameters_before", &s.params_before},
                          std::pair{"parameters_after", &s.params_after}}) {
    if (absl::Status st = count(stats, key, false, out); !st.ok()) return st;
  }
  if (absl::Status st = count(stats, "bytes_removed", true, &s.bytes_removed); !st.ok()) return st;
  // An ONNX graph's record lists channel groups instead of decoder layers.
  if (auto groups = stats.find("groups"); groups != stats.end() && !stats.contains("layers")) {
    if (!groups->is_array()) {
      return absl::InvalidArgumentError(source +
                                        ": producer.passes prune record: 'groups' is not a list");
    }
    for (const json& g : *groups) {
      if (!g.is_object() || !g.contains("group") || !g["group"].is_string()) {
        return absl::InvalidArgumentError(
            source + ": producer.passes prune record: groups[] entry without a 'group' name: " +
            g.dump());
      }
      PrunedGroup pg;
      pg.name = g["group"].get<std::string>();
      pg.prunable = g.value("prunable", true);
      if (absl::Status st = count(g, "channels", false, &pg.channels); !st.ok()) return st;
      if (absl::Status st = count(g, "kept", false, &pg.kept); !st.ok()) return st;
      if (pg.kept > pg.channels) return Bad(source, "kept", g["kept"]);
      s.groups.push_back(std::move(pg));
    }
    return std::optional<PruningSummary>(std::move(s));
  }
  auto layers = stats.find("layers");
  if (layers == stats.end() || !layers->is_array()) {
    return absl::InvalidArgumentError(source +
                                      ": producer.passes prune record: 'layers' is not a list");
  }
  for (const json& l : *layers) {
    if (!l.is_object()) return Bad(source, "layers[]", l);
    PrunedLayer p;
    struct Field {
      const char* key;
      bool optional;
      int64_t* out;
    };
    for (const Field& f : {Field{"layer", false, &p.layer},
                           Field{"intermediate_kept", false, &p.mlp_kept},
                           Field{"intermediate_size", true, &p.mlp_total},
                           Field{"heads_kept", false, &p.heads_kept},
                           Field{"num_attention_heads", true, &p.heads_total},
                           Field{"kv_heads_kept", false, &p.kv_heads_kept},
                           Field{"num_key_value_heads", true, &p.kv_heads_total}}) {
      if (absl::Status st = count(l, f.key, f.optional, f.out); !st.ok()) return st;
    }
    if (absl::Status st = count(l, "parameters_removed", true, &p.params_removed); !st.ok()) {
      return st;
    }
    if (absl::Status st = count(l, "bytes_removed", true, &p.bytes_removed); !st.ok()) return st;
    s.layers.push_back(p);
  }
  return std::optional<PruningSummary>(std::move(s));
}

absl::StatusOr<std::optional<PruningSummary>> ReadCandidatePruning(const std::string& candidate) {
  struct stat st;
  if (stat(candidate.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return std::optional<PruningSummary>();
  }
  const std::string path = candidate + "/manifest.json";
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::optional<PruningSummary>();  // not an artifact
  std::stringstream text;
  text << f.rdbuf();
  const json m = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (m.is_discarded() || !m.is_object()) {
    return absl::InvalidArgumentError(path + ": not a JSON object");
  }
  auto producer = m.find("producer");
  if (producer == m.end() || !producer->is_object() || !producer->contains("passes")) {
    return std::optional<PruningSummary>();
  }
  return PruningFromPasses((*producer)["passes"], path);
}

}  // namespace slimpack::report

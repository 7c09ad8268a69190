#include "formats/shard/reader/quant_records.h"

#include "nlohmann/json.hpp"

namespace slimpack::shard_reader {

absl::StatusOr<std::map<std::string, QuantRecord>> ParseQuantRecords(
    const std::string& manifest_text, const std::string& file) {
  using nlohmann::json;
  const json root = json::parse(manifest_text, nullptr, false);
  if (root.is_discarded() || !root.is_object()) {
    return absl::InvalidArgumentError(file + ": not a JSON object");
  }
  auto tensors = root.find("tensors");
  if (tensors == root.end() || !tensors->is_array()) {
    return absl::InvalidArgumentError(file + ": has no \"tensors\" array");
  }
  std::map<std::string, QuantRecord> out;
  for (const json& t : *tensors) {
    if (!t.is_object()) continue;  // the loader has already rejected these
    auto q = t.find("quant");
    auto name = t.find("name");
    if (q == t.end() || name == t.end() || !name->is_string()) continue;
    const std::string n = name->get<std::string>();
    auto bad = [&](const std::string& key, const char* want) {
      return absl::InvalidArgumentError(file + ": tensor '" + n + "': quant." +
                                        key + " must be " + want + ", found " +
                                        (q->is_object() && q->contains(key)
                                             ? (*q)[key].dump()
                                             : q->dump()));
    };
    if (!q->is_object()) return bad("", "an object");
    QuantRecord r;
    for (const auto& [key, v] : q->items()) {
      if (key == "algorithm") {
        if (!v.is_string()) return bad(key, "a string");
        r.algorithm = v.get<std::string>();
      } else if (key == "bits" || key == "group_size") {
        if (!v.is_number_integer()) return bad(key, "an integer");
        (key == "bits" ? r.bits : r.group_size) = v.get<int64_t>();
      } else if (key == "symmetric") {
        if (!v.is_boolean()) return bad(key, "true or false");
        r.symmetric = v.get<bool>();
      }
    }
    out[n] = std::move(r);
  }
  return out;
}

}  // namespace slimpack::shard_reader

#include "converter/imatrix_stats.h"

#include "formats/gguf/llama_names.h"
#include "support/status_macros.h"

namespace slimpack::converter {
namespace {

// The key a weight has in an imatrix file.
std::string KeyOf(const ir::Model& model, const std::string& weight) {
  if (model.graph.nodes.empty() && model.architecture) return gguf::GgufNameFromHf(weight);
  return weight;
}

}  // namespace

absl::StatusOr<gguf::ImatrixFile> ImatrixOf(const ir::Model& model,
                                            const quantize::ImportanceMatrix& m,
                                            const std::string& dataset) {
  gguf::ImatrixFile file;
  for (const auto& [name, columns] : m.columns) {
    const std::string key = KeyOf(model, name);
    if (key.empty()) {
      return absl::InternalError("linear layer weight '" + name + "' has no GGUF name");
    }
    gguf::ImatrixEntry& e = file.entries[key];
    e.ncall = 1;
    e.values = columns;
  }
  file.last_call = static_cast<int32_t>(m.samples);
  file.dataset = dataset;
  return file;
}

absl::StatusOr<std::map<std::string, std::vector<float>>> ReadImatrixStats(
    const ir::Model& model, const std::string& path) {
  ASSIGN_OR_RETURN(gguf::ImatrixFile file, gguf::ReadImatrixFile(path));
  std::map<std::string, std::string> weight_of;  // key -> weight name
  for (const ir::Tensor& t : model.graph.initializers()) {
    const std::string key = KeyOf(model, t.name);
    if (!key.empty()) weight_of.emplace(key, t.name);
  }
  std::map<std::string, std::vector<float>> out;
  for (const auto& [key, entry] : file.entries) {
    auto it = weight_of.find(key);
    if (it == weight_of.end()) {
      return absl::InvalidArgumentError(path + ": entry '" + key + "' names no weight of " +
                                        model.source_path +
                                        " (an imatrix made for another model?)");
    }
    out[it->second] = gguf::MeanSquares(entry);
  }
  return out;
}

}  // namespace slimpack::converter

// What `slimpack inspect` reports about a model: computed here, rendered by
// the CLI, so reports and tests can reuse the numbers.
#ifndef SLIMPACK_CONVERTER_MODEL_SUMMARY_H_
#define SLIMPACK_CONVERTER_MODEL_SUMMARY_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace slimpack::converter {

struct DTypeTotals {
  uint64_t tensors = 0;
  uint64_t elements = 0;
  uint64_t bytes = 0;
};

struct ModelSummary {
  // Ops of the main graph and every subgraph, by "domain.op" ("" domain
  // printed bare). Constant nodes holding weights were turned into
  // initializers by the importer and are counted as parameters instead.
  std::map<std::string, uint64_t> op_histogram;
  uint64_t node_count = 0;
  uint64_t subgraph_count = 0;
  // Every initializer of every graph (weights and small constants alike).
  uint64_t tensor_count = 0;
  uint64_t parameter_count = 0;
  uint64_t parameter_bytes = 0;
  std::map<std::string, DTypeTotals> by_dtype;  // dtype name -> totals
  std::map<std::string, uint64_t> by_role;      // HF weight roles
  uint64_t zero_copy_bytes = 0;                 // bytes viewed, not copied
};

ModelSummary Summarize(const ir::Model& model);

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_MODEL_SUMMARY_H_

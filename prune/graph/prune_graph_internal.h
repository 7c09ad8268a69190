// Internals of BuildChannelGroups (prune_graph.h), shared by prune_graph.cc
// (the walk: space bookkeeping, shape facts, op dispatch, the result) and
// prune_graph_ops.cc (the per-op rules). Analyzer is declared here only
// because its members are defined in both files; nothing outside those two
// files should include this header.
#ifndef SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_INTERNAL_H_
#define SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_INTERNAL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "prune/graph/prune_graph.h"

namespace slimpack::prune::internal {

using Role = ChannelMember::Role;

std::string NodeLabel(const ir::Node& n);

struct Space {
  std::string name;
  int64_t channels = 0;
  std::vector<ChannelMember> members;
  std::vector<std::string> reasons;
};

class Analyzer {
 public:
  explicit Analyzer(const ir::Graph& g);

  absl::StatusOr<ChannelGroups> Run();

 private:
  // Spaces, union-find, value bookkeeping and shape facts (prune_graph.cc).
  int Find(int s);
  void Union(int a, int b);
  int NewSpace(std::string name, int64_t channels);
  void MarkSpace(int s, const std::string& reason);
  void Mark(const ValueChannels& v, const std::string& reason);
  const ValueChannels* Tracked(const std::string& name) const;
  static int64_t Extent(const ValueChannels& v);
  static int AxisFromEnd(const ValueChannels& v);
  static int AxisFromStart(const ValueChannels& v);
  void AddMembers(const ValueChannels& v, const std::string& tensor, int axis, Role role,
                  int64_t scale = 1);
  void AddSpaceMember(int space, const std::string& tensor, int axis, Role role);
  void FillFromShape(const std::string& name, ValueChannels& v);
  std::optional<int64_t> StaticDim(const std::string& name, int axis_from_end);
  void Set(const std::string& name, ValueChannels v);
  void MarkExtraOutputs(const ir::Node& n, const ValueChannels& v);
  const ir::Tensor* Weight(const ir::Node& n, size_t index, size_t rank_min, size_t rank_max,
                           std::string* why);
  void AddBias(const ir::Node& n, size_t index, int space, int64_t channels);

  // Per-op rules (prune_graph_ops.cc).
  void VisitConv(const ir::Node& n);
  void VisitGemm(const ir::Node& n);
  void VisitMatMul(const ir::Node& n);
  void VisitBatchNorm(const ir::Node& n, const ValueChannels& x);
  bool Couple(const ir::Node& n, const ValueChannels& a, const ValueChannels& b);
  void VisitBinary(const ir::Node& n);
  void VisitConcat(const ir::Node& n);
  void VisitSplit(const ir::Node& n, const ValueChannels& x);
  void VisitFlatten(const ir::Node& n, const ValueChannels& x);

  // Op dispatch and the result (prune_graph.cc).
  void Visit(const ir::Node& n);
  absl::StatusOr<ChannelGroups> Finish();

  const ir::Graph& g_;
  std::map<std::string, int> init_readers_;
  std::set<std::string> graph_inputs_;
  std::vector<Space> spaces_;
  std::vector<int> parent_;
  std::map<std::string, ValueChannels> values_;
  std::vector<ChannelAttribute> attributes_;
  std::vector<ChannelSplit> splits_;
  std::map<std::string, size_t> weight_nodes_;
  size_t current_ = 0;  // index of the node being visited
};

}  // namespace slimpack::prune::internal

#endif  // SLIMPACK_PRUNE_GRAPH_PRUNE_GRAPH_INTERNAL_H_

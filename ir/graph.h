// The graph IR: values, nodes with attributes and subgraphs, initializers,
// use-def queries and topological ordering. Nodes refer to values by name,
// as ONNX does; an empty input name is an omitted optional input.
// This header must not include protobuf or ONNX headers.
#ifndef SLIMPACK_IR_GRAPH_H_
#define SLIMPACK_IR_GRAPH_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace slimpack::ir {

class Graph;

struct Attribute {
  enum class Kind : uint8_t {
    kFloat, kInt, kString, kTensor, kGraph,
    kFloats, kInts, kStrings, kTensors, kGraphs,
  };
  Kind kind = Kind::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;  // may hold arbitrary bytes
  std::shared_ptr<Tensor> t;
  std::shared_ptr<Graph> g;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::vector<std::shared_ptr<Tensor>> tensors;
  std::vector<std::shared_ptr<Graph>> graphs;

  static Attribute Float(float v);
  static Attribute Int(int64_t v);
  static Attribute String(std::string v);
  static Attribute Floats(std::vector<float> v);
  static Attribute Ints(std::vector<int64_t> v);
  static Attribute Strings(std::vector<std::string> v);
  static Attribute TensorValue(Tensor v);
  static Attribute GraphValue(std::shared_ptr<Graph> g);
};
std::string_view AttributeKindName(Attribute::Kind k);

// Type and shape of a graph input, output or intermediate value.
struct ValueInfo {
  std::string name;
  DType dtype = DType::kUndefined;
  Shape shape;
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" is the default ONNX domain
  std::vector<std::string> inputs;
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;  // sorted: deterministic
  Provenance provenance;

  const Attribute* FindAttribute(const std::string& n) const;
  // The int attribute `n`, or `dflt` when it is absent or not an int.
  int64_t IntAttrOr(const std::string& n, int64_t dflt) const;
  bool HasSubgraphs() const;
};

// "'<name>' (<op_type>)", or "#<index> (<op_type>)" for an unnamed node
// (`index` is its position in Graph::nodes), for error messages.
std::string DescribeNode(const Node& node, size_t index);

// All value names `node` reads: explicit inputs then outer-scope references
// of its subgraphs, without duplicates.
std::vector<std::string> NodeReads(const Node& node);

// Producer and consumers of every value name in one graph. Consumers include
// nodes whose subgraphs reference the value from the outer scope.
struct UseDefIndex {
  std::unordered_map<std::string, size_t> producer;  // value -> node index
  std::unordered_map<std::string, std::vector<size_t>> consumers;
};

class Graph {
 public:
  std::string name;
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::map<std::string, ValueInfo> value_info;  // inferred intermediates
  std::vector<Node> nodes;

  // Initializers, in insertion order.
  const std::vector<Tensor>& initializers() const { return initializers_; }
  const Tensor* FindInitializer(const std::string& n) const;
  Tensor* FindMutableInitializer(const std::string& n);
  // AlreadyExists naming the tensor if the name is taken.
  absl::Status AddInitializer(Tensor t);
  // Returns false if there was none.
  bool RemoveInitializer(const std::string& n);

  UseDefIndex BuildUseDefIndex() const;
  // Names read by nodes of this graph (recursively into subgraphs) that no
  // node, input or initializer of the graph defines: its outer-scope refs.
  std::vector<std::string> OuterScopeReferences() const;
  // Node indices in a topological order that keeps the existing order
  // where dependencies allow. FailedPrecondition naming a node on a cycle.
  absl::StatusOr<std::vector<size_t>> TopologicalOrder() const;
  absl::Status SortTopologically();
  // Type/shape of a value if known (input, output, value_info, initializer).
  std::optional<ValueInfo> FindValueInfo(const std::string& n) const;

 private:
  std::vector<Tensor> initializers_;
  std::unordered_map<std::string, size_t> initializer_index_;
};

// Architecture metadata read from a Hugging Face config.json (or from an
// artifact's manifest, which stores the same numbers).
struct ArchitectureInfo {
  // Where the numbers below were read, so errors blame the right file
  // (hf::ArchitectureSourceLabel): a checkpoint's config.json, or the
  // "architecture" object of an artifact's manifest.json.
  enum class Source : uint8_t { kConfigJson, kManifest };
  Source source = Source::kConfigJson;
  std::string model_type;                  // "llama", "mistral", "qwen2"
  std::vector<std::string> architectures;  // "LlamaForCausalLM"
  bool known = false;                      // a family we tag roles for
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rope_theta = 10000.0;
  double norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  std::string torch_dtype;
  std::string config_json;  // config.json text as read, for carrying
};

// kSafetensors and kGguf are both weights-only Hugging Face style decoder
// checkpoints (the graph is built from config/metadata by hf/).
enum class SourceFormat : uint8_t { kOnnx, kSafetensors, kGguf };
inline bool IsDecoderCheckpoint(SourceFormat f) {
  return f == SourceFormat::kSafetensors || f == SourceFormat::kGguf;
}

struct Model {
  SourceFormat source_format = SourceFormat::kOnnx;
  std::string source_path;
  Graph graph;
  // ONNX model-level fields (kept for round-tripping).
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;  // domain -> version
  std::string producer_name;
  std::string producer_version;
  std::string model_domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::map<std::string, std::string> metadata_props;
  // HF checkpoints.
  std::optional<ArchitectureInfo> architecture;
  // Every file read to build the model (model file, external data, shards).
  std::vector<std::string> input_files;
  // Files beside the input to carry into the artifact unchanged
  // (tokenizer.json, tokenizer.model, config.json, vocab files).
  std::vector<std::string> carried_files;
  // Carried file name (as stored in the artifact, e.g. "config.json") ->
  // bytes the artifact writer stores instead of copying the carried file of
  // that name from disk (added when no carried file has that name). A pass
  // that rewrites a side file (pruning's config.json) sets it here rather
  // than writing a temporary file.
  std::map<std::string, std::string> carried_overrides;
  // Non-fatal problems found during import (shown by inspect).
  std::vector<std::string> warnings;
};

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_GRAPH_H_

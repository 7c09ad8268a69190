// The parsed and validated contents of an artifact's manifest.json
// (formats/shard/spec.md). Plain data: ParseManifest builds it only after
// every check in spec.md section 9 that needs no shard bytes has passed.
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "formats/shard/format.h"
#include "formats/shard/loader/status.h"

namespace slimpack::loader {

using shard::DType;
using shard::LayoutKind;

struct ShardInfo {
  std::string file;  // "shard-00000.bin"
  uint32_t index = 0;
  uint64_t size = 0;
  std::string sha256;  // 64 lowercase hex digits
};

struct FileDigest {
  std::string file;
  uint64_t size = 0;
  std::string sha256;
};

// How a tensor's payload is to be read (spec.md section 5, "Layouts").
struct Layout {
  LayoutKind kind = LayoutKind::kPlain;
  int32_t axis = -1;         // quantized layouts
  uint64_t group_size = 0;   // int4_groupwise, int8_groupwise, fp8_e4m3_groupwise
  uint64_t block_rows = 1;   // fp8_e4m3_groupwise: rows sharing a scale (>= 1)
  int32_t scale = -1;        // index into Manifest::tensors (f32 or f16), or -1
  int32_t zero_point = -1;   // index into Manifest::tensors, or -1
  int32_t indices = -1;      // sparse_2_4: the u4 index tensor, or -1
  uint32_t block_type = 0;   // ggml_blocks: ggml's type number (shard::kGgmlBlockTypes)
};

// The optional per-tensor "sparsity" record (spec.md section 5,
// "Sparsity"), validated against the tensor's shape and layout.
struct SparsityInfo {
  bool present = false;
  bool two_of_four = false;  // pattern "2:4"; else "unstructured"
  uint32_t axis = 1;         // the axis the groups of 4 run along
  std::string criterion;     // "magnitude", "wanda", ... ("" if not said)
  uint64_t zeros = 0;        // elements stored as exactly zero
  double ratio = 0;          // zeros / numel
  bool packed = false;       // storage "sparse_2_4" (== the layout kind)
};

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<uint64_t> shape;
  uint64_t numel = 1;
  uint32_t shard = 0;
  uint64_t offset = 0;  // absolute, in the shard file
  uint64_t nbytes = 0;
  Layout layout;
  SparsityInfo sparsity;
  int64_t layer = -1;   // -1 when absent
  std::string role;     // "" when absent
  std::string source;   // "" when absent
};

// One dimension of a graph value's shape: static (value >= 0), symbolic, or
// unknown (value < 0, empty symbol).
struct GraphDim {
  int64_t value = -1;
  std::string symbol;
};

struct GraphValue {
  std::string name;
  std::string dtype;  // a dtype name or "undefined"
  bool rank_known = false;
  std::vector<GraphDim> dims;
};

struct Graph;

struct Attribute {
  enum class Kind : uint8_t {
    kFloat, kInt, kString, kTensor, kGraph,
    kFloats, kInts, kStrings, kTensors, kGraphs,
  };
  Kind kind = Kind::kInt;
  std::vector<double> floats;        // kFloat (one element) and kFloats
  std::vector<int64_t> ints;         // kInt (one element) and kInts
  std::vector<std::string> strings;  // kString / kStrings, raw bytes
  std::vector<int32_t> tensors;      // kTensor / kTensors: tensor indices
  std::vector<std::shared_ptr<const Graph>> graphs;  // kGraph / kGraphs
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;
  std::vector<std::string> inputs;  // "" is an omitted optional input
  std::vector<std::string> outputs;
  std::map<std::string, Attribute> attributes;
  std::vector<std::string> source;
};

struct Graph {
  std::string name;
  std::vector<GraphValue> inputs;
  std::vector<GraphValue> outputs;
  std::vector<GraphValue> value_info;
  std::vector<int32_t> initializers;  // tensor indices
  std::vector<Node> nodes;
};

struct OnnxModelInfo {
  int64_t ir_version = 0;
  std::map<std::string, int64_t> opset_imports;
  std::string producer_name;
  std::string producer_version;
  std::string domain;
  int64_t model_version = 0;
  std::string doc_string;
  std::map<std::string, std::string> metadata_props;
  Graph graph;
};

struct ArchitectureInfo {
  std::string model_type;
  std::vector<std::string> architectures;
  std::string config_file;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t vocab_size = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rope_theta = 0;
  double norm_eps = 0;
  bool tie_word_embeddings = false;
  std::string torch_dtype;
};

// Tensor name -> index, open addressing: one allocation for the whole table
// and probes over one contiguous array (Artifact::Open builds it for every
// tensor, so it matters more than usual). Keys view names owned elsewhere.
class NameIndex {
 public:
  // Sizes the table for `n` names.
  void Reserve(size_t n);
  // Adds `name`; false (and *existing set) if it is already present.
  bool Insert(std::string_view name, int32_t index, int32_t* existing);
  // The index of `name`, or -1.
  int32_t Find(std::string_view name) const;

 private:
  struct Slot {
    size_t hash = 0;
    std::string_view name;
    int32_t index = -1;
  };
  void Grow();
  std::vector<Slot> slots_;
  size_t size_ = 0;
};

struct Manifest {
  bool Requires(std::string_view feature) const {
    for (const std::string& f : required_features) {
      if (f == feature) return true;
    }
    return false;
  }

  uint32_t version_major = 0;
  uint32_t version_minor = 0;
  // "required_features", each a name this loader knows (shard::kFeature*).
  std::vector<std::string> required_features;
  std::string producer_name;
  std::string producer_version;
  std::string recipe_json;  // the recipe's JSON text exactly as stored
  std::vector<FileDigest> inputs;
  std::string source_format;  // "onnx" or "safetensors"
  std::optional<OnnxModelInfo> onnx;
  std::optional<ArchitectureInfo> architecture;
  std::vector<ShardInfo> shards;
  std::vector<TensorInfo> tensors;  // storage order (shard, offset, ...)
  std::vector<FileDigest> carried_files;
  std::string manifest_sha256;

  // O(1) name lookup; keys view into `tensors`, so a Manifest is not
  // copyable (moving keeps the strings in place).
  NameIndex tensor_index;

  Manifest() = default;
  Manifest(const Manifest&) = delete;
  Manifest& operator=(const Manifest&) = delete;
  Manifest(Manifest&&) = default;
  Manifest& operator=(Manifest&&) = default;

  // Index of the tensor named `name`, or -1.
  int32_t FindTensor(std::string_view name) const {
    return tensor_index.Find(name);
  }
};

struct ManifestOptions {
  // Check manifest_sha256 while parsing (cheap with SHA-NI / Armv8 SHA2).
  bool check_self_hash = true;
};

// Parses and validates manifest text. `file_for_errors` prefixes messages.
// Codes are those of spec.md section 9.
Result<Manifest> ParseManifest(std::string_view text,
                               const std::string& file_for_errors,
                               const ManifestOptions& options = {});

// Hex SHA-256 of manifest text with the manifest_sha256 value zeroed, the
// way spec.md section 8 defines the self-hash. InvalidArgument if the text
// has no manifest_sha256 string of 64 characters at the top level.
Result<std::string> ComputeManifestSelfHash(std::string_view text);

// True if `name` is allowed as a file name in an artifact (spec.md 1).
bool IsSafeArtifactFileName(std::string_view name);

}  // namespace slimpack::loader

#endif  // SLIMPACK_FORMATS_SHARD_LOADER_MANIFEST_H_

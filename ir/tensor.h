// Constant tensors (initializers, Constant-node values, attribute tensors)
// and the provenance every IR object carries.
#ifndef SLIMPACK_IR_TENSOR_H_
#define SLIMPACK_IR_TENSOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/dtype.h"
#include "ir/ggml_blocks.h"

namespace slimpack::ir {

// Where an IR object came from. Passes that rewrite a node merge the
// provenance of every node they consume, so errors and reports can point
// back to the user's original layer names.
struct Provenance {
  std::vector<std::string> source_nodes;  // original node names, in order
  std::string file;                       // source file, if known
  int64_t offset = -1;                    // byte offset in `file`, or -1

  static Provenance FromNode(std::string node_name);
  static Provenance FromFile(std::string file, int64_t offset);
  // Union of both, keeping order and dropping duplicates.
  static Provenance Merge(const Provenance& a, const Provenance& b);
  // "conv1", "fused[conv1,bn1]", "model.safetensors@4096".
  std::string ToString() const;
  bool operator==(const Provenance& o) const {
    return source_nodes == o.source_nodes && file == o.file &&
           offset == o.offset;
  }
};

// Immutable bytes of a tensor: either owned, or a zero-copy view into memory
// kept alive by `owner` (an mmapped file, or a parsed protobuf).
class TensorData {
 public:
  TensorData() = default;
  static TensorData Owned(std::vector<uint8_t> bytes);
  // `size` bytes of uninitialised memory owned by the tensor, for a
  // producer that writes every byte (a vector would zero them first); the
  // bytes are filled through the returned pointer before the tensor is used.
  static TensorData OwnedUninitialized(uint64_t size, uint8_t** bytes);
  // A view of [data, data+size) valid while `owner` lives.
  static TensorData View(std::shared_ptr<const void> owner,
                         const uint8_t* data, uint64_t size);
  // `size` bytes that do not exist yet: the shard writer asks its encoder
  // for them when it writes the tensor (TensorEncoder::produce), so a
  // conversion need not hold every quantized tensor until it is written.
  // data() is null; only the converter's write path may see such tensors.
  static TensorData Deferred(uint64_t size);

  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // True when the bytes are a view into something else (mmap, proto).
  bool is_view() const { return is_view_; }
  bool deferred() const { return data_ == nullptr && size_ > 0; }

 private:
  std::shared_ptr<const void> owner_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool is_view_ = false;
};

// Coarse role of a weight inside a known architecture (HF checkpoints).
enum class WeightRole : uint8_t {
  kUnknown = 0,
  kEmbedding,
  kQProj,
  kKProj,
  kVProj,
  kOProj,
  kGateProj,
  kUpProj,
  kDownProj,
  kAttnNorm,
  kMlpNorm,
  kFinalNorm,
  kLmHead,
  kBias,
};
std::string_view WeightRoleName(WeightRole r);

// How a quantized tensor's integer elements map back to real values
// (formats/shard/spec.md, "Layouts"): x = float32(q - zp) * float32(scale),
// with the scale / zero point looked up along `axis`. The scale and
// zero-point tensors are ordinary tensors of the same graph, named here.
enum class QuantKind : uint8_t {
  kNone = 0,           // not quantized: elements are the values
  kInt8PerChannel = 1, // i8/u8, one scale (and zp) per index along axis
  kInt4GroupWise = 2,  // i4/u4, one scale (and zp) per group_size indices
  kInt8GroupWise = 3,  // i8/u8, one scale (and zp) per group_size indices
  // u8 bytes of ggml blocks (ir/ggml_blocks.h) along the last axis; each
  // block carries its own f16 scales, so there is no scale tensor. dims
  // stay the logical shape; the bytes are rows x GgmlRowBytes(last dim).
  kGgmlBlocks = 4,
  // u8 OCP E4M3 floats (FP8 checkpoints), one scale per group_size indices
  // along the axis, no zero point: x = F8E4M3ToF32(q) * scale.
  kFp8E4M3GroupWise = 5,
};
// True for the kinds with a group_size (one parameter per group of indices
// along the axis) rather than one per index. fp8 is one of them: callers
// that read integer codes check the kind, not just this.
inline bool IsGroupWise(QuantKind k) {
  return k == QuantKind::kInt4GroupWise || k == QuantKind::kInt8GroupWise ||
         k == QuantKind::kFp8E4M3GroupWise;
}
struct QuantLayout {
  QuantKind kind = QuantKind::kNone;
  int axis = 0;
  int64_t group_size = 0;  // group-wise and fp8 kinds; ggml_blocks: the block size
  GgmlType block_type = GgmlType::kNone;  // ggml_blocks only
  std::string scale;       // plain f32 or f16 tensor (none for ggml_blocks)
  std::string zero_point;  // empty: zero point 0; else same dtype as q
  // fp8_e4m3_groupwise of an [out, in] matrix only: rows that share one
  // scale (a checkpoint's 128 x 128 blocks keep their one scale per block);
  // 0 or 1: one scale per row, as every other layout.
  int64_t block_rows = 0;
  // How the integers were chosen ("rtn", "rtn-mse", "imatrix", "gptq",
  // "awq", "static"): recorded in the manifest, not needed to dequantize.
  std::string algorithm;

  bool quantized() const { return kind != QuantKind::kNone; }
  int64_t BlockRows() const { return block_rows > 1 ? block_rows : 1; }
  bool operator==(const QuantLayout& o) const {
    return kind == o.kind && axis == o.axis && group_size == o.group_size &&
           block_type == o.block_type && scale == o.scale && zero_point == o.zero_point &&
           BlockRows() == o.BlockRows() && algorithm == o.algorithm;
  }
};

// Sparsity a pruning pass recorded on a weight (prune/sparsify.h; spec.md
// section 5, "Sparsity"). The elements stay dense in the IR; the shard
// writer stores a float 2:4 tensor packed (layout sparse_2_4) and records
// the measured zero count in the manifest.
enum class SparsityPattern : uint8_t {
  kNone = 0,
  kUnstructured = 1,  // any positions; ratio per output row
  k2of4 = 2,          // at most 2 nonzeros in every 4 consecutive inputs
};
struct SparsityInfo {
  SparsityPattern pattern = SparsityPattern::kNone;
  // 1: groups of 4 run along the flattened trailing dims of each row of the
  // [dims[0], numel / dims[0]] view (HF [out, in], Conv [O, I, kh, kw]);
  // 0: along dim 0 of a rank-2 [in, out] weight (ONNX MatMul B).
  int axis = 1;
  std::string criterion;  // "magnitude" | "wanda"

  bool sparse() const { return pattern != SparsityPattern::kNone; }
  bool operator==(const SparsityInfo& o) const {
    return pattern == o.pattern && axis == o.axis && criterion == o.criterion;
  }
};

struct Tensor {
  std::string name;
  DType dtype = DType::kUndefined;
  std::vector<int64_t> dims;
  TensorData data;
  Provenance provenance;
  WeightRole role = WeightRole::kUnknown;
  int layer = -1;  // decoder layer index for HF checkpoints, else -1
  QuantLayout quant;  // kind kNone unless a quantizer produced it
  SparsityInfo sparsity;  // pattern kNone unless a sparsifier produced it

  // Checked element count; InvalidArgument on negative dim or overflow.
  absl::StatusOr<uint64_t> NumElements() const;
  // Checked byte size for dtype and dims (for the ggml_blocks layout, of
  // its blocks: InvalidArgument when the last dim is not a whole number of
  // blocks).
  absl::StatusOr<uint64_t> ExpectedBytes() const;
};

// Element `i` of an i32 or i64 tensor (token ids, g_idx), widened to i64.
// The caller has checked the dtype is one of those and i is in range.
int64_t IndexElementAt(const Tensor& t, uint64_t i);

}  // namespace slimpack::ir

#endif  // SLIMPACK_IR_TENSOR_H_

// The slimpack shard artifact format, version 1.0, as constants and the
// on-disk shard header. spec.md is the prose; this header is normative for
// every number. Standard library only: both the converter's writer and the
// standalone runtime loader include it.
#ifndef SLIMPACK_FORMATS_SHARD_FORMAT_H_
#define SLIMPACK_FORMATS_SHARD_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace slimpack::shard {

// ---------------------------------------------------------------------------
// Versioning. A reader accepts every minor version of the major versions it
// knows (unknown optional manifest keys are ignored) and rejects a newer
// major version as "made by a newer tool".
inline constexpr uint16_t kFormatVersionMajor = 1;
inline constexpr uint16_t kFormatVersionMinor = 0;

// Value of the manifest's "format" key.
inline constexpr std::string_view kFormatName = "slimpack-shard";

// ---------------------------------------------------------------------------
// Artifact directory.
inline constexpr std::string_view kManifestFileName = "manifest.json";
// Shard i is named printf("shard-%05u.bin", i) (more digits past 99999).
inline constexpr std::string_view kShardFilePrefix = "shard-";
inline constexpr std::string_view kShardFileSuffix = ".bin";
// Staging files/directories left by an interrupted writer end in this; a
// reader never treats them as part of an artifact.
inline constexpr std::string_view kStagingSuffix = ".tmp";

// ---------------------------------------------------------------------------
// Shard files.
//
//   [0, 64)                 ShardHeader
//   [64, kDataRegionOffset) zero bytes
//   [kDataRegionOffset, file_size)
//                           tensor payloads, each at an offset that is a
//                           multiple of kTensorAlignment, zero padding between
//                           them and after the last one up to file_size.
//
// All offsets in the manifest are absolute byte offsets from the start of
// the shard file. All multi-byte values (header fields and tensor elements)
// are little-endian; tensors are in C order (row-major).

// Every tensor payload starts at a multiple of this (one cache line, and
// enough for any SIMD load the runtime does).
inline constexpr uint64_t kTensorAlignment = 64;
// First payload byte of every shard. 16 KiB is a multiple of both the 4 KiB
// pages of x86-64/arm64 Linux and the 16 KiB pages of recent Android and
// Apple arm64, so the payload region can be mapped from its own page on all
// of them and never shares a page with the header (spec.md, "Alignment").
inline constexpr uint64_t kDataRegionOffset = 16384;
// A shard file is always a multiple of this (its last payload is padded).
inline constexpr uint64_t kShardSizeAlignment = kTensorAlignment;

inline constexpr char kShardMagic[8] = {'S', 'L', 'I', 'M', 'S', 'H', 'R', 'D'};

// The fixed header at offset 0 of every shard. Readers use the fields they
// know and skip up to header_size; bytes [header_size, kDataRegionOffset)
// are zero.
struct ShardHeader {
  char magic[8];           // kShardMagic
  uint16_t version_major;  // kFormatVersionMajor
  uint16_t version_minor;  // kFormatVersionMinor
  uint32_t header_size;    // sizeof(ShardHeader) == 64 in 1.0; never above
                           // kDataRegionOffset
  uint32_t shard_index;    // equals the manifest's shards[i].index
  uint32_t reserved0;      // 0
  uint64_t file_size;      // total bytes of this file == manifest size
  uint8_t reserved[32];    // 0
};
static_assert(sizeof(ShardHeader) == 64, "ShardHeader is 64 bytes");
static_assert(offsetof(ShardHeader, magic) == 0, "layout");
static_assert(offsetof(ShardHeader, version_major) == 8, "layout");
static_assert(offsetof(ShardHeader, version_minor) == 10, "layout");
static_assert(offsetof(ShardHeader, header_size) == 12, "layout");
static_assert(offsetof(ShardHeader, shard_index) == 16, "layout");
static_assert(offsetof(ShardHeader, reserved0) == 20, "layout");
static_assert(offsetof(ShardHeader, file_size) == 24, "layout");
static_assert(offsetof(ShardHeader, reserved) == 32, "layout");
inline constexpr uint32_t kShardHeaderSize = sizeof(ShardHeader);

// ---------------------------------------------------------------------------
// Manifest limits a reader enforces (writers must stay inside them).
inline constexpr uint64_t kMaxManifestBytes = 16ull << 20;  // 16 MiB
inline constexpr int kMaxJsonDepth = 64;
// Offsets, sizes, nbytes and dims are JSON integers in [0, kMaxSafeInteger]
// so that any JSON implementation (JavaScript, Python, nlohmann) reads them
// exactly.
inline constexpr uint64_t kMaxSafeInteger = 1ull << 53;
inline constexpr size_t kMaxTensorRank = 32;
inline constexpr size_t kMaxNameBytes = 1024;  // tensor, node, value names
inline constexpr size_t kMaxFileNameBytes = 255;

// The range rule behind kMaxSafeInteger, shared so writer and loader cannot
// drift apart: true if `v` may be stored where the manifest holds an
// offset, size, nbytes, tensor or graph dim, layer, axis or architecture
// count. The loader refuses any other value; the writer checks every such
// value with this before it writes anything.
constexpr bool IsManifestUint(int64_t v) {
  return v >= 0 && static_cast<uint64_t>(v) <= kMaxSafeInteger;
}

// ---------------------------------------------------------------------------
// Element types. Names are the manifest's "dtype" strings and match
// ir/dtype.h. Numeric values are stable: the C API uses them.
enum class DType : uint8_t {
  kF32 = 1,
  kF16 = 2,
  kBF16 = 3,
  kF64 = 4,
  kI64 = 5,
  kI32 = 6,
  kI16 = 7,
  kI8 = 8,
  kU64 = 9,
  kU32 = 10,
  kU16 = 11,
  kU8 = 12,
  kBool = 13,  // one byte, 0 or 1
  kI4 = 14,    // packed two per byte, element 2k in the low nibble
  kU4 = 15,    // packed two per byte, element 2k in the low nibble
};

struct DTypeEntry {
  DType dtype;
  std::string_view name;
  uint32_t bits;
};
inline constexpr DTypeEntry kDTypes[] = {
    {DType::kF32, "f32", 32}, {DType::kF16, "f16", 16},
    {DType::kBF16, "bf16", 16}, {DType::kF64, "f64", 64},
    {DType::kI64, "i64", 64}, {DType::kI32, "i32", 32},
    {DType::kI16, "i16", 16}, {DType::kI8, "i8", 8},
    {DType::kU64, "u64", 64}, {DType::kU32, "u32", 32},
    {DType::kU16, "u16", 16}, {DType::kU8, "u8", 8},
    {DType::kBool, "bool", 8}, {DType::kI4, "i4", 4},
    {DType::kU4, "u4", 4},
};

// nbytes of a tensor = ceil(numel * bits / 8).
constexpr uint32_t DTypeBits(DType t) {
  for (const auto& e : kDTypes) {
    if (e.dtype == t) return e.bits;
  }
  return 0;
}
constexpr std::string_view DTypeName(DType t) {
  for (const auto& e : kDTypes) {
    if (e.dtype == t) return e.name;
  }
  return "undefined";
}
// Returns false for an unknown name.
constexpr bool DTypeFromName(std::string_view name, DType* out) {
  for (const auto& e : kDTypes) {
    if (e.name == name) {
      *out = e.dtype;
      return true;
    }
  }
  return false;
}

// ---------------------------------------------------------------------------
// Tensor layouts (the manifest's tensors[].layout.kind). spec.md, "Layouts",
// defines each one exactly.
enum class LayoutKind : uint8_t {
  kPlain = 0,           // elements of dtype, C order
  kInt8PerChannel = 1,  // i8/u8 with one scale (and zero point) per
                        // index along `axis`
  kInt4GroupWise = 2,   // i4/u4 with one scale (and zero point) per
                        // `group_size` consecutive indices along `axis`
  kSparse2of4 = 3,      // f32/f16/bf16 2:4 sparse: the kept half of the
                        // values plus a u4 index tensor (spec.md, "Sparsity")
  kInt8GroupWise = 4,   // i8/u8 with one scale (and zero point) per
                        // `group_size` consecutive indices along `axis`
  kGgmlBlocks = 5,      // u8: ggml's block bytes (`block_type`) along the
                        // last axis, each block with its own f16 scales
  kFp8E4M3GroupWise = 6,  // u8 E4M3 floats with one scale per `group_size`
                          // consecutive indices along `axis`, no zero point
};
// Scales are f32, or f16 with feature kFeatureF16Scales.
inline constexpr std::string_view kLayoutPlain = "plain";
inline constexpr std::string_view kLayoutInt8PerChannel = "int8_per_channel";
inline constexpr std::string_view kLayoutInt4GroupWise = "int4_groupwise";
inline constexpr std::string_view kLayoutInt8GroupWise = "int8_groupwise";
inline constexpr std::string_view kLayoutGgmlBlocks = "ggml_blocks";
inline constexpr std::string_view kLayoutFp8E4M3GroupWise = "fp8_e4m3_groupwise";

// The only packing order of 4-bit types in 1.0 (layout.packing).
inline constexpr std::string_view kPackingLowNibbleFirst = "low_nibble_first";
inline constexpr std::string_view kLayoutSparse2of4 = "sparse_2_4";

// The manifest's layout.kind string of a layout.
constexpr std::string_view LayoutKindName(LayoutKind k) {
  switch (k) {
    case LayoutKind::kPlain: return kLayoutPlain;
    case LayoutKind::kInt8PerChannel: return kLayoutInt8PerChannel;
    case LayoutKind::kInt4GroupWise: return kLayoutInt4GroupWise;
    case LayoutKind::kSparse2of4: return kLayoutSparse2of4;
    case LayoutKind::kInt8GroupWise: return kLayoutInt8GroupWise;
    case LayoutKind::kGgmlBlocks: return kLayoutGgmlBlocks;
    case LayoutKind::kFp8E4M3GroupWise: return kLayoutFp8E4M3GroupWise;
  }
  return "?";
}

// Block types of layout ggml_blocks (spec.md, "ggml_blocks"): the manifest's
// layout.block_type, ggml's type number, weights and bytes per block. The
// values are ggml's (ggml-common.h) and never change.
struct GgmlBlockType {
  std::string_view name;
  uint32_t ggml_type;
  uint32_t block_size;
  uint32_t block_bytes;
  bool has_min;  // values are d*q - m (asymmetric), else d*q
};
inline constexpr GgmlBlockType kGgmlBlockTypes[] = {
    {"q4_0", 2, 32, 18, false},    {"q4_1", 3, 32, 20, true},    {"q5_0", 6, 32, 22, false},
    {"q5_1", 7, 32, 24, true},     {"q8_0", 8, 32, 34, false},   {"q2_k", 10, 256, 84, true},
    {"q3_k", 11, 256, 110, false}, {"q4_k", 12, 256, 144, true}, {"q5_k", 13, 256, 176, true},
    {"q6_k", 14, 256, 210, false},
};
// nullptr for an unknown name or number.
constexpr const GgmlBlockType* FindGgmlBlockType(std::string_view name) {
  for (const GgmlBlockType& t : kGgmlBlockTypes) {
    if (t.name == name) return &t;
  }
  return nullptr;
}
constexpr const GgmlBlockType* FindGgmlBlockType(uint32_t ggml_type) {
  for (const GgmlBlockType& t : kGgmlBlockTypes) {
    if (t.ggml_type == ggml_type) return &t;
  }
  return nullptr;
}

// True for the layouts with a group_size.
constexpr bool IsGroupWise(LayoutKind k) {
  return k == LayoutKind::kInt4GroupWise || k == LayoutKind::kInt8GroupWise;
}

// ---------------------------------------------------------------------------
// Sparsity (spec.md section 5, "Sparsity"): the optional per-tensor
// "sparsity" record. pattern is one of these; storage is "dense" or
// kLayoutSparse2of4 (then it equals the tensor's layout kind).
inline constexpr std::string_view kSparsityUnstructured = "unstructured";
inline constexpr std::string_view kSparsity2of4 = "2:4";
inline constexpr std::string_view kSparseStorageDense = "dense";
// A packed 2:4 index nibble: bits 0-1 the first kept position, bits 2-3 the
// second, first < second; group 2k in the low nibble of byte k.
inline constexpr uint32_t kSparseGroup = 4;
inline constexpr uint32_t kSparseKept = 2;

// Features a reader must understand to load the artifact. A manifest lists
// the ones it uses in "required_features" (sorted, each once); a reader that
// meets a name it does not know rejects the artifact as made by a newer
// tool. A writer lists each exactly when the artifact uses it, so readers
// that predate it fail at open with a clear message; an artifact using none
// has an empty list and stays readable by every 1.x reader:
//   kFeatureF16Scales    some quantized tensor's scale tensor is f16
//   kFeatureInt8GroupWise some tensor has layout int8_groupwise
//   kFeatureSparse2of4   some tensor has layout sparse_2_4
//   kFeatureGgmlBlocks   some tensor has layout ggml_blocks
//   kFeatureFp8E4M3      some tensor has layout fp8_e4m3_groupwise
//   kFeatureFp8BlockRows some fp8_e4m3_groupwise tensor has block_rows > 1
//                        (one scale per block of rows and columns)
inline constexpr std::string_view kFeatureF16Scales = "f16_scales";
inline constexpr std::string_view kFeatureFp8BlockRows = "fp8_block_rows";
inline constexpr std::string_view kFeatureFp8E4M3 = "fp8_e4m3";
inline constexpr std::string_view kFeatureGgmlBlocks = "ggml_blocks";
inline constexpr std::string_view kFeatureInt8GroupWise = "int8_groupwise";
inline constexpr std::string_view kFeatureSparse2of4 = "sparse_2_4";

}  // namespace slimpack::shard

#endif  // SLIMPACK_FORMATS_SHARD_FORMAT_H_

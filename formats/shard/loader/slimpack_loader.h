/* C API of the slimpack shard loader, for JNI, Swift and other FFI users.
 * Opaque handles, integer status codes (absl numbering: 0 is OK) and a
 * per-thread last-error message. No function throws or aborts. */
#ifndef SLIMPACK_FORMATS_SHARD_LOADER_SLIMPACK_LOADER_H_
#define SLIMPACK_FORMATS_SHARD_LOADER_SLIMPACK_LOADER_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int32_t slimpack_status;
enum {
  SLIMPACK_OK = 0,
  SLIMPACK_INVALID_ARGUMENT = 3,
  SLIMPACK_NOT_FOUND = 5,
  SLIMPACK_PERMISSION_DENIED = 7,
  SLIMPACK_RESOURCE_EXHAUSTED = 8,
  SLIMPACK_FAILED_PRECONDITION = 9,
  SLIMPACK_OUT_OF_RANGE = 11,
  SLIMPACK_UNIMPLEMENTED = 12,
  SLIMPACK_INTERNAL = 13,
  SLIMPACK_DATA_LOSS = 15
};

/* dtype codes: the values of slimpack::shard::DType (format.h). */
enum {
  SLIMPACK_DTYPE_F32 = 1, SLIMPACK_DTYPE_F16 = 2, SLIMPACK_DTYPE_BF16 = 3,
  SLIMPACK_DTYPE_F64 = 4, SLIMPACK_DTYPE_I64 = 5, SLIMPACK_DTYPE_I32 = 6,
  SLIMPACK_DTYPE_I16 = 7, SLIMPACK_DTYPE_I8 = 8, SLIMPACK_DTYPE_U64 = 9,
  SLIMPACK_DTYPE_U32 = 10, SLIMPACK_DTYPE_U16 = 11, SLIMPACK_DTYPE_U8 = 12,
  SLIMPACK_DTYPE_BOOL = 13, SLIMPACK_DTYPE_I4 = 14, SLIMPACK_DTYPE_U4 = 15
};

/* layout codes: the values of slimpack::shard::LayoutKind. */
enum {
  SLIMPACK_LAYOUT_PLAIN = 0,
  SLIMPACK_LAYOUT_INT8_PER_CHANNEL = 1,
  SLIMPACK_LAYOUT_INT4_GROUPWISE = 2,
  SLIMPACK_LAYOUT_SPARSE_2_4 = 3,
  SLIMPACK_LAYOUT_INT8_GROUPWISE = 4,
  SLIMPACK_LAYOUT_GGML_BLOCKS = 5,
  SLIMPACK_LAYOUT_FP8_E4M3_GROUPWISE = 6
};

/* madvise hints for shard mappings. */
enum {
  SLIMPACK_ADVICE_NORMAL = 0,
  SLIMPACK_ADVICE_SEQUENTIAL = 1,
  SLIMPACK_ADVICE_RANDOM = 2,
  SLIMPACK_ADVICE_WILLNEED = 3
};

typedef struct slimpack_artifact slimpack_artifact;
typedef struct slimpack_tensor_view slimpack_tensor_view;

typedef struct slimpack_open_options {
  uint64_t memory_budget_bytes; /* 0: unlimited */
  int32_t advice;               /* SLIMPACK_ADVICE_* */
  int32_t check_manifest_hash;  /* nonzero: check manifest_sha256 at open */
} slimpack_open_options;

/* Pointers inside stay valid until slimpack_artifact_close. */
typedef struct slimpack_tensor_info {
  const char* name;
  int32_t dtype;  /* SLIMPACK_DTYPE_* */
  int32_t layout; /* SLIMPACK_LAYOUT_* */
  uint32_t rank;
  const uint64_t* shape; /* rank entries */
  uint64_t numel;
  uint32_t shard;
  uint64_t offset;
  uint64_t nbytes;
  int32_t axis;             /* quantized layouts, else -1 */
  uint64_t group_size;      /* int4/int8/fp8 group-wise; ggml blocks: weights a block; else 0 */
  int64_t scale_index;      /* tensor index (an f32 or f16 tensor), or -1 */
  int64_t zero_point_index; /* tensor index, or -1 */
  int64_t layer;            /* -1 if absent */
} slimpack_tensor_info;

/* Defaults: no budget, normal advice, hash checked. */
void slimpack_open_options_init(slimpack_open_options* options);

/* Error message of the last status-returning slimpack_* call on this
 * thread ("" if it succeeded). Valid until the next such call on the same
 * thread. */
const char* slimpack_last_error_message(void);
/* "OK", "INVALID_ARGUMENT", ... */
const char* slimpack_status_name(slimpack_status status);
/* "f32", "i4", ...; "undefined" for an unknown code. */
const char* slimpack_dtype_name(int32_t dtype);

/* Opens and validates an artifact directory; options may be NULL. On
 * success *out is a handle to close with slimpack_artifact_close. */
slimpack_status slimpack_artifact_open(const char* dir,
                                       const slimpack_open_options* options,
                                       slimpack_artifact** out);
/* Closes the handle. Views obtained from it must be released first. NULL is
 * allowed. */
void slimpack_artifact_close(slimpack_artifact* artifact);

uint64_t slimpack_artifact_tensor_count(const slimpack_artifact* artifact);
/* SLIMPACK_NOT_FOUND if no tensor has that name. */
slimpack_status slimpack_artifact_find_tensor(const slimpack_artifact* artifact,
                                              const char* name, uint64_t* index);
slimpack_status slimpack_artifact_tensor_info(const slimpack_artifact* artifact,
                                              uint64_t index,
                                              slimpack_tensor_info* out);

/* The ggml block type ("q4_0", ..., "q6_k") of a tensor of layout
 * SLIMPACK_LAYOUT_GGML_BLOCKS; NULL for any other layout or an index out of
 * range. Static storage. slimpack_artifact_dequantize_f32 decodes it. */
const char* slimpack_artifact_tensor_block_type(const slimpack_artifact* artifact,
                                                uint64_t index);

/* Rows sharing one scale row in a tensor of layout
 * SLIMPACK_LAYOUT_FP8_E4M3_GROUPWISE (its scale tensor is then
 * [ceil(rows / block_rows), ceil(cols / group_size)]: FP8 checkpoints' 128 x
 * 128 blocks); 1 for every other tensor, 0 for an index out of range. A
 * function rather than a slimpack_tensor_info field so the struct's layout
 * stays what applications were compiled against. An application that
 * decodes FP8 tensors itself (rather than by slimpack_artifact_dequantize_f32)
 * must read this: a scale row then serves block_rows rows. */
uint64_t slimpack_artifact_tensor_block_rows(const slimpack_artifact* artifact, uint64_t index);

/* Maps the tensor's shard if needed and returns a zero-copy view that keeps
 * it mapped until slimpack_tensor_view_release. */
slimpack_status slimpack_artifact_map_tensor(slimpack_artifact* artifact,
                                             uint64_t index,
                                             slimpack_tensor_view** out);
const void* slimpack_tensor_view_data(const slimpack_tensor_view* view);
uint64_t slimpack_tensor_view_size(const slimpack_tensor_view* view);
void slimpack_tensor_view_release(slimpack_tensor_view* view);

/* Dequantizes (or converts plain f32/f16/bf16) into out[0, out_count),
 * where out_count must equal the tensor's numel. */
slimpack_status slimpack_artifact_dequantize_f32(slimpack_artifact* artifact,
                                                 uint64_t index, float* out,
                                                 uint64_t out_count);

/* Expands a tensor of layout SLIMPACK_LAYOUT_SPARSE_2_4 into out as dense
 * elements of its dtype (out_bytes must be numel * element size; pruned
 * positions are written as +0). INVALID_ARGUMENT for another layout, a
 * wrong size or a corrupt index nibble. */
slimpack_status slimpack_artifact_expand_sparse(slimpack_artifact* artifact,
                                                uint64_t index, void* out,
                                                uint64_t out_bytes);

/* Checks the SHA-256 of every shard, carried file and the manifest. */
slimpack_status slimpack_artifact_verify(const slimpack_artifact* artifact);

uint64_t slimpack_artifact_carried_file_count(const slimpack_artifact* artifact);
/* Base name of carried file i (e.g. "tokenizer.json"); NULL if out of range.
 * The file is at <dir>/<name>. */
const char* slimpack_artifact_carried_file_name(const slimpack_artifact* artifact,
                                                uint64_t index);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* SLIMPACK_FORMATS_SHARD_LOADER_SLIMPACK_LOADER_H_ */

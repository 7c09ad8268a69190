// The bytes of ONNX Runtime's com.microsoft MatMulNBits and
// GatherBlockQuantized inputs, packed from a group-wise weight's codes
// (int4_groupwise / int8_groupwise): unsigned values (signed codes shifted
// by 2^(bits-1), the operators' default zero point), two per byte low
// nibble first at 4 bits, a byte each at 8. Pure layout: export/onnx_weights
// decides which weights take these operators and edits the graph.
#ifndef SLIMPACK_EXPORT_ONNX_NBITS_PACK_H_
#define SLIMPACK_EXPORT_ONNX_NBITS_PACK_H_

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace slimpack::onnx_export {

// Bits one element of `t` takes in those operators: 8 for int8_groupwise,
// else 4.
int NBitsOf(const ir::Tensor& t);

// MatMulNBits' B [n, ceil(k/block), block*bits/8] from `t` read as a
// K x N matrix whose groups run along K (t's layout axis). With `perm`
// (an act-order weight whose input rows the artifact stores permuted,
// W'[:, j] = W[:, perm[j]]), code j of a row goes back to K position
// perm[j].
std::vector<uint8_t> PackNBitsCodes(const ir::Tensor& t, int64_t k, int64_t n,
                                    const std::vector<int64_t>& perm);

// MatMulNBits' g_idx for `perm`: g_idx[perm[j]] = j / block.
std::vector<int32_t> NBitsGroupIndex(int64_t block, const std::vector<int64_t>& perm);

// Scales (or any per-group value) of `t` as [rows, kb] row by row; the
// artifact stores them that way when the groups run along the inner axis
// (`k_inner`), else as [kb, rows].
std::vector<float> GroupsByRow(const std::vector<float>& s, int64_t rows, int64_t kb, bool k_inner);

// Zero points as unsigned values per [row, group] (the default 2^(bits-1)
// where `zp` is null), in the order GroupsByRow gives.
std::vector<int32_t> UnsignedZeroPoints(const ir::Tensor& t, const ir::Tensor* zp, int64_t rows,
                                        int64_t kb, bool k_inner);

// Those zero points packed per row as the operators read them:
// [rows, ceil(kb/2)] at 4 bits, [rows, kb] at 8.
std::vector<uint8_t> PackZeroPoints(const std::vector<int32_t>& zps, int64_t rows, int64_t kb,
                                    int bits);

// GatherBlockQuantized's codes for a [V, H] table grouped along H:
// [V, H/2] bytes at 4 bits, [V, H] at 8.
std::vector<uint8_t> PackGatherCodes(const ir::Tensor& t);

}  // namespace slimpack::onnx_export

#endif  // SLIMPACK_EXPORT_ONNX_NBITS_PACK_H_

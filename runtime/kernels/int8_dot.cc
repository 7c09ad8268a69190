#include "runtime/kernels/int8_dot.h"

#include <atomic>

#include "runtime/kernels/quantize_util.h"

namespace slimpack::runtime::kernels::int8dot {
namespace {

std::atomic<bool>& FastFlag() {
  static std::atomic<bool> fast{HaveByteDot() || HaveAvx2Madd()};
  return fast;
}

// Requant's byte for row r, column c of sum s, by its definition: the
// scalar rule of QLinearConv's requantisation ([lo, hi] is u8's or i8's).
uint8_t RequantizeOne(uint32_t s, int64_t r, int64_t c, const Requant& q) {
  s += static_cast<uint32_t>(q.add[r]);
  if (q.zp != nullptr) s -= static_cast<uint32_t>(q.zp[r]) * static_cast<uint32_t>(q.colsum[c]);
  const float v = static_cast<float>(static_cast<int32_t>(s)) * q.mult[r];
  return static_cast<uint8_t>(quantize_internal::SaturateRound(
      v, q.out_zp, q.lo == 0 ? ir::DType::kU8 : ir::DType::kI8));
}

}  // namespace

void DotPortable(const Operands& o) {
  for (int64_t r = 0; r < o.rows; ++r) {
    const uint8_t* row = o.row + r * o.ldr;
    for (int64_t c = 0; c < o.cols; ++c) {
      uint32_t sum = 0;  // wraps like the instruction's int32 lanes
      for (int64_t q = 0; q < o.kq; ++q) {
        const uint8_t* p = o.panel + (q * o.pcols + c) * 4;
        for (int j = 0; j < 4; ++j) {
          const int32_t a = o.signed_rows ? static_cast<int8_t>(row[4 * q + j]) : row[4 * q + j];
          const int32_t b = o.signed_rows ? p[j] : static_cast<int8_t>(p[j]);
          sum += static_cast<uint32_t>(a * b);
        }
      }
      if (o.requant != nullptr) {
        o.requant->out[r * o.requant->ldo + c] = RequantizeOne(sum, r, c, *o.requant);
      } else {
        o.out[r * o.ldo + c] = static_cast<int32_t>(sum);
      }
    }
  }
}

void Dot(const Operands& o) {
  if (o.rows <= 0 || o.cols <= 0) return;
  if (FastFlag().load(std::memory_order_relaxed) && (DotVnni512(o) || DotAvxVnni(o) || DotAvx2Madd(o))) {
    return;
  }
  DotPortable(o);
}

bool HaveByteDot() { return HaveVnni512() || HaveAvxVnni(); }

bool WantsRowHalves() { return Fast() && !HaveByteDot() && HaveAvx2Madd(); }

void RowHalves(const uint8_t* quad, uint32_t out[2]) {
  const auto half = [](uint8_t b) {
    return static_cast<uint32_t>(static_cast<uint16_t>(static_cast<int16_t>(static_cast<int8_t>(b))));
  };
  out[0] = half(quad[0]) | half(quad[2]) << 16;
  out[1] = half(quad[1]) | half(quad[3]) << 16;
}

bool Fast() { return FastFlag().load(std::memory_order_relaxed); }

void SetFast(bool enabled) { FastFlag().store(enabled); }

}  // namespace slimpack::runtime::kernels::int8dot

#include "runtime/kernels/byte_lookup.h"

namespace slimpack::runtime::kernels {

void LookupBytesPortable(const uint8_t table[256], const uint8_t* x, int64_t n, uint8_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

void LookupBytes(const uint8_t table[256], const uint8_t* x, int64_t n, uint8_t* y) {
  if (n > 0 && (LookupBytesVbmi(table, x, n, y) || LookupBytesAvx2(table, x, n, y))) return;
  LookupBytesPortable(table, x, n, y);
}

}  // namespace slimpack::runtime::kernels

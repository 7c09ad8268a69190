// y[i] = table[x[i]] for a 256-entry byte table: the W8A8 activation
// lookups (slimpack.QuantizedLookup, runtime/quantized_lookup.h). With
// AVX-512 VBMI two VPERMI2B instructions look up 64 bytes in the table's two
// halves; with AVX2, sixteen VPSHUFB and a tree of blends 32 bytes;
// elsewhere it is a byte loop. A lookup has one answer per code, so
// every path gives the same bytes.
#ifndef SLIMPACK_RUNTIME_KERNELS_BYTE_LOOKUP_H_
#define SLIMPACK_RUNTIME_KERNELS_BYTE_LOOKUP_H_

#include <cstdint>

namespace slimpack::runtime::kernels {

void LookupBytes(const uint8_t table[256], const uint8_t* x, int64_t n, uint8_t* y);

// The byte loop, for tests and CPUs without AVX2.
void LookupBytesPortable(const uint8_t table[256], const uint8_t* x, int64_t n, uint8_t* y);

// The AVX-512 VBMI kernel (byte_lookup_vbmi.cc): false when not built for
// this architecture or the CPU lacks the instructions.
bool LookupBytesVbmi(const uint8_t table[256], const uint8_t* x, int64_t n, uint8_t* y);

// The AVX2 kernel (byte_lookup_avx2.cc), the same way.
bool LookupBytesAvx2(const uint8_t table[256], const uint8_t* x, int64_t n, uint8_t* y);

}  // namespace slimpack::runtime::kernels

#endif  // SLIMPACK_RUNTIME_KERNELS_BYTE_LOOKUP_H_

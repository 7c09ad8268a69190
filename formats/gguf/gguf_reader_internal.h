// Byte helpers shared by the GGUF reader's parser (gguf_reader.cc) and its
// metadata values (gguf_value.cc). Not part of the reader's interface.
#ifndef SLIMPACK_FORMATS_GGUF_GGUF_READER_INTERNAL_H_
#define SLIMPACK_FORMATS_GGUF_GGUF_READER_INTERNAL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "formats/gguf/gguf_format.h"

namespace slimpack::gguf::internal {

inline constexpr uint32_t kValueTypeCount = 13;  // u8 .. f64

// Bytes of one scalar of `type`; 0 for str and arr (variable).
uint64_t ScalarBytes(ValueType type);

// The n-byte little-endian unsigned integer at p (n <= 8).
uint64_t LoadLE(const uint8_t* p, uint64_t n);

// Untrusted text for a message: printable ASCII kept, the rest as \xNN, cut
// at 80 bytes so a hostile 64 KiB key does not flood the log.
std::string Quote(std::string_view s);

}  // namespace slimpack::gguf::internal

#endif  // SLIMPACK_FORMATS_GGUF_GGUF_READER_INTERNAL_H_

// Byte counts for people: "512 B", "3.4 KiB", "1.2 GiB" (binary units, one
// decimal above bytes). One copy for every command that prints sizes.
#ifndef SLIMPACK_SUPPORT_FORMAT_BYTES_H_
#define SLIMPACK_SUPPORT_FORMAT_BYTES_H_

#include <cstdint>
#include <string>

namespace slimpack::support {

std::string FormatBytes(uint64_t bytes);

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_FORMAT_BYTES_H_

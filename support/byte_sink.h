// The one shape of a byte consumer every streaming writer hands its output
// to: the shard writer's encoders, the GGUF writer's tensor streamers, the
// RTN quantizer's streamed weights and the in-order sink.
#ifndef SLIMPACK_SUPPORT_BYTE_SINK_H_
#define SLIMPACK_SUPPORT_BYTE_SINK_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"

namespace slimpack::support {

// Receives bytes in order: each call's bytes follow the previous call's. An
// error stops the producer, which returns it.
using ByteSink = std::function<absl::Status(const uint8_t* data, uint64_t size)>;

}  // namespace slimpack::support

#endif  // SLIMPACK_SUPPORT_BYTE_SINK_H_

// Fuzzes the NumPy readers: every input as a .npy image (numpy::ParseNpy,
// what ReadNpy runs on a file's bytes) and, when it starts like a zip
// ("PK"), as a .npz file (numpy::ReadNpz: zip records, stored and deflated
// entries, the inflation budget, each entry's .npy). The budget is fixed at
// 64 MiB: the default reads /proc/meminfo, which would make runs depend on
// the machine's load.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "formats/numpy/numpy_io.h"
#include "fuzz/fuzz_temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)slimpack::numpy::ParseNpy(data, size, "fuzz", "fuzz.npy");
  if (size >= 2 && std::memcmp(data, "PK", 2) == 0) {
    const std::string path = slimpack::fuzz::WriteScratchFile("fuzz.npz", data, size);
    slimpack::numpy::NpzReadOptions options;
    options.max_inflated_bytes = uint64_t{64} << 20;
    (void)slimpack::numpy::ReadNpz(path, options);
  }
  return 0;
}

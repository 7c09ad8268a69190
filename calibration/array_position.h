// Where an element sits in an array, written the way NumPy users index it,
// so errors about a data file point at the value the user can look up.
#ifndef SLIMPACK_CALIBRATION_ARRAY_POSITION_H_
#define SLIMPACK_CALIBRATION_ARRAY_POSITION_H_

#include <cstdint>
#include <string>
#include <vector>

namespace slimpack::calibration {

// "index 5" for rank <= 1, "[1, 3]" (C order) for rank >= 2. `flat` must
// name an existing element (every extent > 0).
std::string ArrayPosition(uint64_t flat, const std::vector<int64_t>& dims);

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_ARRAY_POSITION_H_

// IEEE binary16 and bfloat16 <-> f32 conversion. Narrowing rounds to nearest,
// ties to even; NaN stays NaN and overflow becomes infinity, as hardware does.
#ifndef SLIMPACK_CALIBRATION_HALF_H_
#define SLIMPACK_CALIBRATION_HALF_H_

#include <cstdint>

namespace slimpack::calibration {

float HalfToFloat(uint16_t h);
uint16_t FloatToHalf(float f);
float BFloat16ToFloat(uint16_t b);
uint16_t FloatToBFloat16(float f);

}  // namespace slimpack::calibration

#endif  // SLIMPACK_CALIBRATION_HALF_H_

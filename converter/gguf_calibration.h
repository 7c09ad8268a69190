// What the calibrated GGUF algorithms (converter/gguf_gptq.h,
// converter/gguf_awq.h) take from `convert --format gguf --calib`: the
// token windows and how to run them.
#ifndef SLIMPACK_CONVERTER_GGUF_CALIBRATION_H_
#define SLIMPACK_CONVERTER_GGUF_CALIBRATION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "support/progress.h"

namespace slimpack::converter {

struct GgufCalibration {
  std::vector<std::string> calib;  // token windows (.npy)
  int64_t calib_samples = 0;       // 0: every window
  int threads = 1;
  support::ProgressSink progress;
  std::function<void(const std::string&)> log;  // verbose lines; null: none
};

}  // namespace slimpack::converter

#endif  // SLIMPACK_CONVERTER_GGUF_CALIBRATION_H_

// Peak RSS of calibration versus the number of samples: `make` writes a
// dataset of N one-sample .npz files for the digits CNN, `run` calibrates on
// it and prints samples, runs, peak RSS (VmHWM) and time. Driven by
// calibration_rss.sh, one process per run so peaks do not carry over.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "calibration/calibrator.h"
#include "formats/import.h"
#include "formats/numpy/numpy_io.h"

namespace {

using namespace slimpack;

long PeakRssKb() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  }
  return -1;
}

int Make(const std::string& dir, int n) {
  uint64_t state = 1;
  for (int s = 0; s < n; ++s) {
    std::vector<uint8_t> bytes(64 * 4);
    for (int i = 0; i < 64; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      const float v = static_cast<float>(state >> 40) * 0x1.0p-24f;  // [0, 1)
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
    ir::Tensor t;
    t.name = "input";
    t.dtype = ir::DType::kF32;
    t.dims = {1, 1, 8, 8};
    t.data = ir::TensorData::Owned(std::move(bytes));
    char name[32];
    std::snprintf(name, sizeof(name), "/%06d.npz", s);
    absl::Status st = numpy::WriteNpz(dir + name, {t});
    if (!st.ok()) {
      std::fprintf(stderr, "%s\n", st.ToString().c_str());
      return 1;
    }
  }
  return 0;
}

int Run(const std::string& model_path, const std::string& dir, const std::string& method) {
  auto model = formats::ImportModel(model_path);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  auto data = calibration::Dataset::Open({dir}, calibration::FeedInputs(model->graph), {});
  if (!data.ok()) {
    std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
    return 1;
  }
  calibration::CalibrateOptions o;
  auto m = calibration::RangeMethodFromName(method);
  if (!m.ok()) {
    std::fprintf(stderr, "%s\n", m.status().ToString().c_str());
    return 1;
  }
  o.observer.method = *m;
  o.observer.per_channel = true;
  o.collect_xtx = true;
  const auto start = std::chrono::steady_clock::now();
  auto table = calibration::Calibrate(*model, *data, o);
  if (!table.ok()) {
    std::fprintf(stderr, "%s\n", table.status().ToString().c_str());
    return 1;
  }
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("samples=%lld runs=%lld tensors=%zu peak_rss_kb=%ld seconds=%.2f\n",
              static_cast<long long>(table->samples), static_cast<long long>(table->runs),
              table->tensors.size(), PeakRssKb(), secs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "make") return Make(argv[2], std::atoi(argv[3]));
  if (argc == 5 && std::string(argv[1]) == "run") return Run(argv[2], argv[3], argv[4]);
  std::fprintf(stderr,
               "usage: %s make DIR N | run MODEL DIR METHOD\n", argv[0]);
  return 2;
}

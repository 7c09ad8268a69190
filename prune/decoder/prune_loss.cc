// Removal error of consumer input columns (prune/decoder/prune_loss.h).
#include "prune/decoder/prune_loss.h"

namespace slimpack::prune {

double RemovalError(const std::vector<float>& w, int64_t rows, int64_t n,
                    const std::vector<double>& xtx, int64_t begin, int64_t end) {
  double total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* wr = &w[r * n];
    for (int64_t i = begin; i < end; ++i) {
      double s = 0;
      for (int64_t j = begin; j < end; ++j) s += xtx[i * n + j] * wr[j];
      total += static_cast<double>(wr[i]) * s;
    }
  }
  return total;
}

std::vector<double> RemovalErrors(const std::vector<float>& w, int64_t rows, int64_t n,
                                  const std::vector<double>& xtx, int64_t width) {
  std::vector<double> out(n / width);
  for (int64_t g = 0; g < n / width; ++g) {
    out[g] = RemovalError(w, rows, n, xtx, g * width, (g + 1) * width);
  }
  return out;
}

}  // namespace slimpack::prune

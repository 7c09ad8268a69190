// Example: open a slimpack artifact with the C++ API and print every tensor
// (name, dtype, shape, layout) and the first values of f32 / quantized ones.
//   loader_example_cpp <artifact-dir> [--verify]
#include <cstdio>
#include <cstring>
#include <string>

#include "formats/shard/loader/artifact.h"

namespace sl = slimpack::loader;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <artifact-dir> [--verify]\n", argv[0]);
    return 2;
  }
  auto artifact = sl::Artifact::Open(argv[1]);
  if (!artifact.ok()) {
    std::fprintf(stderr, "error: %s\n", artifact.status().ToString().c_str());
    return 1;
  }
  sl::Artifact& a = **artifact;
  const sl::Manifest& m = a.manifest();
  std::printf("artifact %s: format %u.%u, %zu tensors in %zu shards, source %s\n",
              argv[1], m.version_major, m.version_minor, m.tensors.size(),
              m.shards.size(), m.source_format.c_str());
  for (const sl::TensorInfo& t : m.tensors) {
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i) {
      shape += (i ? "," : "") + std::to_string(t.shape[i]);
    }
    const std::string layout(slimpack::shard::LayoutKindName(t.layout.kind));
    std::printf("  %-40s %-4s [%s] %s shard %u offset %llu\n", t.name.c_str(),
                std::string(slimpack::shard::DTypeName(t.dtype)).c_str(),
                shape.c_str(), layout.c_str(), t.shard,
                static_cast<unsigned long long>(t.offset));
    const bool printable = t.layout.kind != sl::LayoutKind::kPlain ||
                           t.dtype == sl::DType::kF32 || t.dtype == sl::DType::kF16 ||
                           t.dtype == sl::DType::kBF16;
    if (!printable || t.numel == 0) continue;
    auto values = a.DequantizeToF32(t.name);
    if (!values.ok()) {
      std::fprintf(stderr, "error: %s\n", values.status().ToString().c_str());
      return 1;
    }
    std::printf("    values:");
    for (size_t i = 0; i < values->size() && i < 6; ++i) std::printf(" %g", (*values)[i]);
    std::printf("%s\n", values->size() > 6 ? " ..." : "");
  }
  if (argc > 2 && std::strcmp(argv[2], "--verify") == 0) {
    sl::Status s = a.Verify();
    std::printf("verify: %s\n", s.ToString().c_str());
    if (!s.ok()) return 1;
  }
  return 0;
}

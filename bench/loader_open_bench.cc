// Benchmark of Artifact::Open and time to first tensor on a generated
// artifact with many tensors (default 1,200 in 100 layers, like a 100-layer
// decoder). Plain program so it also runs under qemu for arm64.
// Then dequantization throughput per layout and ggml block type.
//   loader_open_bench [num_layers=100] [repeats=200] [ggml_rows=1024]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "formats/shard/loader/artifact.h"
#include "formats/shard/loader/dequantize.h"
#include "formats/shard/loader/sha256.h"
#include "tests/shard/loader/test_artifact_writer.h"

namespace sl = slimpack::loader;
namespace slt = slimpack::loader::testing;
using Clock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

slt::TestArtifactSpec MakeSpec(int layers) {
  static const char* kParts[] = {
      "input_layernorm.weight", "mlp.down_proj.weight", "mlp.gate_proj.weight",
      "mlp.up_proj.weight", "post_attention_layernorm.weight",
      "self_attn.k_proj.weight", "self_attn.o_proj.weight",
      "self_attn.q_proj.weight", "self_attn.v_proj.weight"};
  slt::TestArtifactSpec spec;
  spec.shard_size_cap = 64ull << 20;
  for (int l = 0; l < layers; ++l) {
    for (const char* part : kParts) {
      // Quantized int4 weights with scales, like a real compressed decoder.
      const std::string name = "model.layers." + std::to_string(l) + "." + part;
      slt::TestTensor w;
      w.name = name;
      w.dtype = "i4";
      w.shape = {64, 128};
      w.data = slt::PatternBytes(64 * 128 / 2, static_cast<uint32_t>(l));
      w.layer = l;
      slt::TestTensor s;
      s.name = name + ".scale";
      s.shape = {64, 4};
      s.data = slt::F32Bytes(std::vector<float>(256, 0.01f));
      s.layer = l;
      w.layout["kind"] = "int4_groupwise";
      w.layout["axis"] = 1;
      w.layout["group_size"] = 32;
      w.layout["packing"] = "low_nibble_first";
      w.layout["scale"] = s.name;
      spec.tensors.push_back(w);
      spec.tensors.push_back(s);
    }
  }
  slt::TestTensor emb;
  emb.name = "model.embed_tokens.weight";
  emb.shape = {256, 64};
  emb.data = slt::F32Bytes(std::vector<float>(256 * 64, 0.5f));
  spec.tensors.push_back(emb);
  return spec;
}

}  // namespace

int main(int argc, char** argv) {
  const int layers = argc > 1 ? std::atoi(argv[1]) : 100;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 200;
  const uint64_t ggml_rows = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1024;
  slt::TempDir dir;
  slt::TestArtifact art = slt::TestArtifact::Build(MakeSpec(layers));
  if (!art.Write(dir.path()).ok()) return 1;
  const std::string manifest = slt::ReadFileOrDie(dir.File("manifest.json"));

  for (bool check_hash : {true, false}) {
    sl::OpenOptions opts;
    opts.check_manifest_hash = check_hash;
    std::vector<double> open_us, first_us;
    size_t tensors = 0;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = Clock::now();
      auto a = sl::Artifact::Open(dir.path(), opts);
      auto t1 = Clock::now();
      if (!a.ok()) {
        std::fprintf(stderr, "%s\n", a.status().ToString().c_str());
        return 1;
      }
      auto v = (*a)->GetTensor("model.layers.0.mlp.up_proj.weight");
      volatile uint8_t first = v.ok() ? v->data()[0] : 0;
      (void)first;
      auto t2 = Clock::now();
      tensors = (*a)->num_tensors();
      open_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      first_us.push_back(std::chrono::duration<double, std::micro>(t2 - t0).count());
    }
    std::printf("open (%zu tensors, %zu-byte manifest, %zu shards, hash check %s): "
                "median %.1f us, min %.1f us\n",
                tensors, manifest.size(), art.shard_files.size(),
                check_hash ? "on" : "off", Median(open_us),
                *std::min_element(open_us.begin(), open_us.end()));
    std::printf("open + first tensor (shard mapped, first byte read): median %.1f us\n",
                Median(first_us));
  }

  // Dequantization and hashing throughput, for the record.
  auto a = sl::Artifact::Open(dir.path());
  if (!a.ok()) return 1;
  std::vector<float> out(64 * 128);
  for (sl::DequantImpl impl : {sl::DequantImpl::kScalar, sl::DequantImpl::kBest}) {
    auto t0 = Clock::now();
    int n = 0;
    for (int r = 0; r < 20; ++r) {
      for (int l = 0; l < layers; ++l, ++n) {
        const std::string name = "model.layers." + std::to_string(l) + ".mlp.up_proj.weight";
        if (!(*a)->DequantizeToF32(name, out.data(), out.size(), impl).ok()) return 1;
      }
    }
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("int4 group-wise dequantize (%s): %.0f M elements/s\n",
                impl == sl::DequantImpl::kScalar ? "scalar" : sl::DequantImplementation(),
                n * 64.0 * 128 / s / 1e6);
  }
  // ggml blocks (layout ggml_blocks): a ggml_rows x 4096 weight of each type
  // from pattern bytes with finite f16 scales.
  for (const slimpack::shard::GgmlBlockType& t : slimpack::shard::kGgmlBlockTypes) {
    const uint64_t rows = ggml_rows, cols = 4096, blocks = rows * cols / t.block_size;
    std::vector<uint8_t> bytes = slt::PatternBytes(blocks * t.block_bytes, t.ggml_type);
    for (uint64_t i = 0; i < bytes.size(); i += 2) bytes[i + 1] &= 0x3B;  // small finite halves
    sl::QuantizedTensorRef ref;
    ref.layout = slimpack::shard::LayoutKind::kGgmlBlocks;
    ref.dtype = slimpack::shard::DType::kU8;
    ref.shape = {rows, cols};
    ref.axis = 1;
    ref.block_type = t.ggml_type;
    ref.data = bytes.data();
    ref.data_bytes = bytes.size();
    std::vector<float> w(rows * cols);
    double rate[2];
    for (sl::DequantImpl impl : {sl::DequantImpl::kScalar, sl::DequantImpl::kBest}) {
      std::vector<double> secs;
      for (int r = 0; r < 5; ++r) {
        auto t0 = Clock::now();
        if (!sl::DequantizeToF32(ref, w.data(), w.size(), impl).ok()) return 1;
        secs.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
      }
      rate[impl == sl::DequantImpl::kBest] = rows * cols / Median(secs) / 1e6;
    }
    std::printf("ggml %s dequantize: scalar %.0f, %s %.0f M weights/s\n",
                std::string(t.name).c_str(), rate[0], sl::DequantImplementation(), rate[1]);
  }
  std::vector<uint8_t> buf(64 << 20, 0x5a);
  auto t0 = Clock::now();
  sl::Sha256::Hash(buf.data(), buf.size());
  double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("sha256 (%s): %.0f MB/s\n", sl::Sha256Implementation(), 64.0 * 1.048576 / s);
  return 0;
}

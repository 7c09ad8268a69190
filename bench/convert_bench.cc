// Throughput and peak-RSS benchmark of the convert pipeline (import, f32 ->
// f16/bf16, shard artifact). `make` writes a synthetic llama-shaped f32
// safetensors checkpoint (real random data, 2 shards + index + config);
// `run` converts it, then reports peak RSS (getrusage, taken before the
// memcpy test allocates anything) and throughput next to memcpy bandwidth
// measured in the same process. Driven by convert_bench.sh.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench/peak_rss.h"
#include "ir/float_convert.h"
#include "formats/import.h"
#include "converter/recipe.h"
#include "formats/safetensors/safetensors_writer.h"
#include "formats/shard/writer/artifact_writer.h"
#include "nlohmann/json.hpp"

namespace {

using slimpack::ir::DType;
using slimpack::ir::Tensor;
using slimpack::ir::TensorData;
using Clock = std::chrono::steady_clock;

constexpr int64_t kHidden = 2048, kHeads = 16, kInter = 5632, kVocab = 32000;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Every tensor views a different offset of one buffer of random floats, so
// the checkpoint is real data without holding 2 GB in memory.
struct Maker {
  std::shared_ptr<std::vector<float>> buf;
  std::vector<Tensor> all;
  uint64_t next_offset = 0;

  Maker() {
    buf = std::make_shared<std::vector<float>>(kVocab * kHidden + (1 << 20));
    uint32_t s = 0x9E3779B9u;
    for (float& f : *buf) {
      s ^= s << 13;
      s ^= s >> 17;
      s ^= s << 5;
      f = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 0.2f;
    }
  }
  void Add(const std::string& name, std::vector<int64_t> dims) {
    uint64_t n = 1;
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);
    next_offset = (next_offset + 4099) % (1 << 20);
    Tensor t;
    t.name = name;
    t.dtype = DType::kF32;
    t.dims = std::move(dims);
    const auto* p = reinterpret_cast<const uint8_t*>(buf->data() + next_offset);
    t.data = TensorData::View(buf, p, n * 4);
    all.push_back(std::move(t));
  }
};

int Make(const std::string& dir, double gb) {
  const uint64_t per_layer =
      4 * (4 * kHidden * kHidden + 3 * kHidden * kInter + 2 * kHidden);
  const uint64_t fixed = 4 * (2 * kVocab * kHidden + kHidden);
  const uint64_t target = static_cast<uint64_t>(gb * 1e9);
  const int64_t layers =
      target > fixed ? static_cast<int64_t>((target - fixed) / per_layer) + 1 : 1;
  Maker m;
  m.Add("model.embed_tokens.weight", {kVocab, kHidden});
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char* proj : {"q_proj", "k_proj", "v_proj", "o_proj"}) {
      m.Add(p + "self_attn." + proj + ".weight", {kHidden, kHidden});
    }
    m.Add(p + "mlp.gate_proj.weight", {kInter, kHidden});
    m.Add(p + "mlp.up_proj.weight", {kInter, kHidden});
    m.Add(p + "mlp.down_proj.weight", {kHidden, kInter});
    m.Add(p + "input_layernorm.weight", {kHidden});
    m.Add(p + "post_attention_layernorm.weight", {kHidden});
  }
  m.Add("model.norm.weight", {kHidden});
  m.Add("lm_head.weight", {kVocab, kHidden});
  if (::mkdir(dir.c_str(), 0755) != 0) {
    std::perror(dir.c_str());
    return 1;
  }
  // Two shards, split in the middle, plus the index and config.
  std::map<std::string, std::string> weight_map;
  uint64_t total = 0;
  for (const Tensor& t : m.all) total += t.data.size();
  std::vector<Tensor> part;
  uint64_t part_bytes = 0;
  int shard = 0;
  auto flush = [&]() {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-00002.safetensors", ++shard);
    for (const Tensor& t : part) weight_map[t.name] = name;
    absl::Status s = slimpack::safetensors::WriteSafetensorsFile(dir + "/" + name, part);
    if (!s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
    part.clear();
    part_bytes = 0;
    return s.ok();
  };
  for (const Tensor& t : m.all) {
    part.push_back(t);
    part_bytes += t.data.size();
    if (shard == 0 && part_bytes >= total / 2 && !flush()) return 1;
  }
  if (!part.empty() && !flush()) return 1;
  nlohmann::json index = {{"metadata", {{"total_size", total}}},
                          {"weight_map", weight_map}};
  std::ofstream(dir + "/model.safetensors.index.json") << index.dump(2);
  nlohmann::json config = {{"model_type", "llama"},
                           {"architectures", {"LlamaForCausalLM"}},
                           {"num_hidden_layers", layers},
                           {"num_attention_heads", kHeads},
                           {"num_key_value_heads", kHeads},
                           {"hidden_size", kHidden},
                           {"intermediate_size", kInter},
                           {"vocab_size", kVocab},
                           {"max_position_embeddings", 2048},
                           {"rms_norm_eps", 1e-5},
                           {"torch_dtype", "float32"}};
  std::ofstream(dir + "/config.json") << config.dump(2);
  std::printf("made %s: %zu tensors, %lld layers, %.3f GB of f32 weights\n",
              dir.c_str(), m.all.size(), static_cast<long long>(layers),
              static_cast<double>(total) / 1e9);
  return 0;
}

// Best of several copies of a 256 MiB buffer: bytes copied per second.
double MemcpyGBps() {
  const size_t n = 256u << 20;
  std::vector<uint8_t> a(n, 1), b(n, 2);
  double best = 1e9;
  for (int i = 0; i < 6; ++i) {
    a[i] = static_cast<uint8_t>(i);
    auto t0 = Clock::now();
    std::memcpy(b.data(), a.data(), n);
    best = std::min(best, Seconds(t0, Clock::now()));
  }
  volatile uint8_t sink = b[n / 2];
  (void)sink;
  return n / best / 1e9;
}

int Run(const std::string& input, const std::string& output,
        const std::string& dtype, int threads, uint64_t shard_size,
        long max_rss_mb) {
  auto t0 = Clock::now();
  auto model = slimpack::formats::ImportModel(input);
  if (!model.ok()) {
    std::fprintf(stderr, "import: %s\n", model.status().ToString().c_str());
    return 1;
  }
  uint64_t in_bytes = 0, largest = 0;
  for (const Tensor& t : model->graph.initializers()) {
    in_bytes += t.data.size();
    largest = std::max<uint64_t>(largest, t.data.size());
  }
  slimpack::converter::Recipe recipe;
  if (!dtype.empty()) recipe.dtype = *slimpack::converter::ParseTargetDType(dtype);
  recipe.shard_size = shard_size;
  slimpack::shard_writer::ArtifactOptions options;
  options.shard_size = shard_size;
  options.threads = threads;
  options.encoder = slimpack::shard_writer::FloatCastEncoder(recipe.dtype);
  options.recipe = slimpack::converter::RecipeToJson(recipe);
  auto summary = slimpack::shard_writer::WriteArtifact(*model, output, options);
  auto t1 = Clock::now();
  const slimpack::bench::ProcessUsage usage = slimpack::bench::ReadProcessUsage();
  if (!summary.ok()) {
    std::fprintf(stderr, "write: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  const double secs = Seconds(t0, t1);
  const double rss_mb = usage.peak_rss_kb / 1024.0;
  const double bound_mb = 64 + threads * 24.0;
  const double memcpy_gbps = MemcpyGBps();
  std::printf("converted %zu tensors, %.3f GB f32 -> %.3f GB %s in %u shards, "
              "%d threads\n",
              model->graph.initializers().size(), in_bytes / 1e9,
              summary->shard_bytes / 1e9, dtype.empty() ? "(kept)" : dtype.c_str(),
              summary->shards, threads);
  const double cpu = usage.cpu_seconds;
  std::printf("time %.2f s: %.2f GB/s read, %.2f GB/s written "
              "(includes SHA-256 of %.3f GB of inputs and of every shard, "
              "and fsync); CPU %.2f s user+sys\n",
              secs, in_bytes / secs / 1e9, summary->shard_bytes / secs / 1e9,
              summary->input_bytes / 1e9, cpu);
  std::printf("memcpy bandwidth in this process: %.2f GB/s (256 MiB buffers)\n",
              memcpy_gbps);
  std::printf("peak RSS during conversion: %.1f MB (largest tensor %.1f MB; "
              "stated bound 64 MiB + threads x 24 MiB = %.0f MB; "
              "2 x largest + 64 MiB = %.0f MB)\n",
              rss_mb, largest / 1048576.0, bound_mb, 2 * largest / 1048576.0 + 64);
  return slimpack::bench::RssLimitExitCode(usage.peak_rss_kb, max_rss_mb);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "make") == 0) {
    double gb = 2.2;
    for (int i = 3; i + 1 < argc; i += 2) {
      if (std::strcmp(argv[i], "--gb") == 0) gb = std::atof(argv[i + 1]);
    }
    return gb > 0 ? Make(argv[2], gb) : 64;
  }
  if (argc >= 4 && std::strcmp(argv[1], "run") == 0) {
    std::string dtype = "f16";
    int threads = 2;
    uint64_t shard_size = 256ull << 20;
    long max_rss_mb = 0;
    for (int i = 4; i + 1 < argc; i += 2) {
      if (std::strcmp(argv[i], "--dtype") == 0) dtype = argv[i + 1];
      if (std::strcmp(argv[i], "--threads") == 0) threads = std::atoi(argv[i + 1]);
      if (std::strcmp(argv[i], "--shard-size-mb") == 0) {
        shard_size = std::strtoull(argv[i + 1], nullptr, 10) << 20;
      }
      if (std::strcmp(argv[i], "--max-rss-mb") == 0) max_rss_mb = std::atol(argv[i + 1]);
    }
    if (dtype == "keep") dtype.clear();
    return Run(argv[2], argv[3], dtype, std::max(threads, 1), shard_size, max_rss_mb);
  }
  std::fprintf(stderr,
               "usage: %s make DIR [--gb 2.2]\n"
               "       %s run INPUT OUT [--dtype f16|bf16|f32|keep] [--threads 2]"
               " [--shard-size-mb 256] [--max-rss-mb N]\n",
               argv[0], argv[0]);
  return 64;
}

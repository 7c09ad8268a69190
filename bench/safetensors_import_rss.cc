// Peak-RSS benchmark for ImportSafetensors. `make` writes a synthetic
// llama-shaped sharded BF16 checkpoint of a given size; `import` imports it
// and reports peak RSS (getrusage ru_maxrss). Driven by
// safetensors_import_rss.sh, which runs the two in separate processes.
#include <sys/stat.h>

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
#include "formats/safetensors/checkpoint_importer.h"
#include "formats/safetensors/safetensors_writer.h"
#include "nlohmann/json.hpp"

namespace {

using slimpack::ir::DType;
using slimpack::ir::Tensor;
using slimpack::ir::TensorData;

constexpr int64_t kHidden = 2048, kHeads = 16, kInter = 5632, kVocab = 32000;

// Every tensor is a view into one shared buffer of BF16 values, so making a
// 3 GB checkpoint needs only the largest tensor in memory.
struct Maker {
  std::shared_ptr<std::vector<uint8_t>> buf;
  std::vector<Tensor> all;

  Maker() {
    buf = std::make_shared<std::vector<uint8_t>>(kVocab * kHidden * 2);
    for (size_t i = 0; i < buf->size(); i += 2) {
      (*buf)[i] = static_cast<uint8_t>(i >> 1);  // bf16 0x3cXX: ~0.01..0.03
      (*buf)[i + 1] = 0x3c;
    }
  }
  void Add(const std::string& name, std::vector<int64_t> dims) {
    uint64_t n = 2;
    for (int64_t d : dims) n *= static_cast<uint64_t>(d);
    Tensor t;
    t.name = name;
    t.dtype = DType::kBF16;
    t.dims = std::move(dims);
    t.data = TensorData::View(buf, buf->data(), n);
    all.push_back(std::move(t));
  }
};

int Make(const std::string& dir, double gb, int shards) {
  const uint64_t per_layer =
      2 * (4 * kHidden * kHidden + 3 * kHidden * kInter + 2 * kHidden);
  const uint64_t fixed = 2 * (2 * kVocab * kHidden + kHidden);
  const uint64_t target = static_cast<uint64_t>(gb * 1e9);
  const int64_t layers =
      target > fixed ? static_cast<int64_t>((target - fixed) / per_layer) + 1
                     : 1;
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

  if (mkdir(dir.c_str(), 0755) != 0) {
    std::fprintf(stderr, "mkdir %s: %s\n", dir.c_str(), std::strerror(errno));
    return 1;
  }
  uint64_t total = 0;
  for (const Tensor& t : m.all) total += t.data.size();
  // Group tensors greedily into at most `shards` parts, then name the
  // files with the real count.
  const uint64_t per_shard = total / shards + 1;
  std::vector<std::vector<Tensor>> parts(1);
  uint64_t part_bytes = 0;
  for (const Tensor& t : m.all) {
    if (part_bytes >= per_shard && static_cast<int>(parts.size()) < shards) {
      parts.emplace_back();
      part_bytes = 0;
    }
    parts.back().push_back(t);
    part_bytes += t.data.size();
  }
  std::map<std::string, std::string> weight_map;
  const int shard = static_cast<int>(parts.size());
  for (int i = 0; i < shard; ++i) {
    char name[64];
    std::snprintf(name, sizeof(name), "model-%05d-of-%05d.safetensors", i + 1,
                  shard);
    for (const Tensor& t : parts[i]) weight_map[t.name] = name;
    absl::Status s = slimpack::safetensors::WriteSafetensorsFile(
        dir + "/" + name, parts[i], {{"format", "pt"}});
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.ToString().c_str());
      return 1;
    }
  }
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
                           {"torch_dtype", "bfloat16"}};
  std::ofstream(dir + "/config.json") << config.dump(2);
  std::printf(
      "made %s: %d shards, %zu tensors, %lld layers, %.3f GB of weights\n",
      dir.c_str(), shard, m.all.size(), static_cast<long long>(layers),
      static_cast<double>(total) / 1e9);
  return 0;
}

int Import(const std::string& path, long max_rss_mb, bool touch) {
  auto model = slimpack::safetensors::ImportSafetensors(path);
  if (!model.ok()) {
    std::fprintf(stderr, "import failed: %s\n",
                 model.status().ToString().c_str());
    return 1;
  }
  uint64_t bytes = 0, checksum = 0;
  for (const Tensor& t : model->graph.initializers()) {
    bytes += t.data.size();
    // --touch reads every byte, faulting in every page of the mappings, to
    // show what the figure would be for an import that reads the weights.
    if (touch) {
      for (uint64_t i = 1; i < t.data.size(); i += 4096)
        checksum += t.data.data()[i];
    }
  }
  const long rss_kb = slimpack::bench::ReadProcessUsage().peak_rss_kb;
  std::printf(
      "imported %zu tensors, %.3f GB from %zu files, %zu warnings%s\n",
      model->graph.initializers().size(), static_cast<double>(bytes) / 1e9,
      model->input_files.size(), model->warnings.size(),
      touch
          ? (", touched every page (checksum " + std::to_string(checksum) + ")")
                .c_str()
          : "");
  for (const std::string& w : model->warnings)
    std::printf("warning: %s\n", w.c_str());
  std::printf("peak RSS: %.1f MB (ru_maxrss %ld KB), limit %ld MB\n",
              rss_kb / 1024.0, rss_kb, max_rss_mb);
  return slimpack::bench::RssLimitExitCode(rss_kb, max_rss_mb);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::strcmp(argv[1], "make") == 0) {
    double gb = 3.0;
    int shards = 4;
    for (int i = 3; i + 1 < argc; i += 2) {
      if (std::strcmp(argv[i], "--gb") == 0) gb = std::atof(argv[i + 1]);
      if (std::strcmp(argv[i], "--shards") == 0)
        shards = std::atoi(argv[i + 1]);
    }
    if (gb <= 0 || shards < 1) {
      std::fprintf(stderr, "--gb must be > 0 and --shards >= 1\n");
      return 64;
    }
    return Make(argv[2], gb, shards);
  }
  if (argc >= 3 && std::strcmp(argv[1], "import") == 0) {
    long max_rss_mb = 0;
    bool touch = false;
    for (int i = 3; i < argc; ++i) {
      if (std::strcmp(argv[i], "--touch") == 0) touch = true;
      if (std::strcmp(argv[i], "--max-rss-mb") == 0 && i + 1 < argc) {
        max_rss_mb = std::atol(argv[++i]);
      }
    }
    return Import(argv[2], max_rss_mb, touch);
  }
  std::fprintf(stderr,
               "usage: %s make DIR [--gb 3] [--shards 4]\n"
               "       %s import PATH [--max-rss-mb N] [--touch]\n",
               argv[0], argv[0]);
  return 64;
}

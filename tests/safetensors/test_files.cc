#include "tests/safetensors/test_files.h"

#include <dirent.h>
#include <ftw.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace slimpack::safetensors::testing {

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string RawWithLength(uint64_t declared_length, const std::string& rest) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<char>((declared_length >> (8 * i)) & 0xff);
  }
  return out + rest;
}

std::string RawSafetensors(const std::string& header, const std::string& data) {
  return RawWithLength(header.size(), header + data);
}

std::vector<uint8_t> PatternBytes(size_t n, uint32_t seed) {
  std::vector<uint8_t> out(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    b = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

ir::Tensor MakeTensor(const std::string& name, ir::DType dtype,
                      std::vector<int64_t> dims, std::vector<uint8_t> bytes) {
  ir::Tensor t;
  t.name = name;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

ir::Tensor MakeBf16(const std::string& name, std::vector<int64_t> dims,
                    float seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<uint8_t> bytes(static_cast<size_t>(n) * 2);
  for (int64_t i = 0; i < n; ++i) {
    float f = seed + 0.25f * static_cast<float>(i);
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    uint16_t bf = static_cast<uint16_t>(bits >> 16);
    std::memcpy(&bytes[static_cast<size_t>(i) * 2], &bf, 2);
  }
  return MakeTensor(name, ir::DType::kBF16, std::move(dims), std::move(bytes));
}

std::vector<ir::Tensor> TinyDecoder::Tensors() const {
  std::vector<ir::Tensor> out;
  float seed = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> dims) {
    out.push_back(MakeBf16(name, std::move(dims), seed));
    seed += 1;
  };
  const int64_t q = heads * head_dim, kv = kv_heads * head_dim;
  add("model.embed_tokens.weight", {vocab, hidden});
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "self_attn.q_proj.weight", {q, hidden});
    add(p + "self_attn.k_proj.weight", {kv, hidden});
    add(p + "self_attn.v_proj.weight", {kv, hidden});
    add(p + "self_attn.o_proj.weight", {hidden, q});
    if (biases) {
      add(p + "self_attn.q_proj.bias", {q});
      add(p + "self_attn.k_proj.bias", {kv});
      add(p + "self_attn.v_proj.bias", {kv});
    }
    add(p + "mlp.gate_proj.weight", {intermediate, hidden});
    add(p + "mlp.up_proj.weight", {intermediate, hidden});
    add(p + "mlp.down_proj.weight", {hidden, intermediate});
    add(p + "input_layernorm.weight", {hidden});
    add(p + "post_attention_layernorm.weight", {hidden});
  }
  add("model.norm.weight", {hidden});
  if (!tie) add("lm_head.weight", {vocab, hidden});
  return out;
}

std::string TinyDecoder::ConfigJson() const {
  nlohmann::json c = {
      {"model_type", model_type},
      {"architectures",
       {model_type == "qwen2" ? "Qwen2ForCausalLM" : "LlamaForCausalLM"}},
      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},
      {"num_key_value_heads", kv_heads},
      {"hidden_size", hidden},
      {"intermediate_size", intermediate},
      {"vocab_size", vocab},
      {"max_position_embeddings", 128},
      {"rope_theta", 500000.0},
      {"rms_norm_eps", 1e-5},
      {"tie_word_embeddings", tie},
      {"torch_dtype", "bfloat16"},
  };
  if (head_dim * heads != hidden) c["head_dim"] = head_dim;
  return c.dump(2);
}

std::string IndexJson(const std::map<std::string, std::string>& weight_map,
                      uint64_t total_size) {
  nlohmann::json j = {{"metadata", {{"total_size", total_size}}},
                      {"weight_map", weight_map}};
  return j.dump(2);
}

}  // namespace slimpack::safetensors::testing

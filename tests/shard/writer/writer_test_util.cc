#include "tests/shard/writer/writer_test_util.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "formats/safetensors/safetensors_writer.h"
#include "formats/shard/loader/manifest.h"
#include "formats/shard/writer/file_digest.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "onnx/onnx_pb.h"

namespace slimpack::shard_writer::testing {
namespace {

uint32_t XorShift(uint32_t& s) {
  s ^= s << 13;
  s ^= s >> 17;
  s ^= s << 5;
  return s;
}

std::string RawFloats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

void AddFloatInitializer(onnx::GraphProto* g, const std::string& name,
                         const std::vector<int64_t>& dims, uint32_t seed) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(RawFloats(TestFloats(n, seed)));
}

void SetFloatType(onnx::ValueInfoProto* v, const std::string& name,
                  const std::vector<int64_t>& dims) {
  v->set_name(name);
  auto* tt = v->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& op,
                         const std::string& name,
                         std::vector<std::string> inputs,
                         std::vector<std::string> outputs) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return n;
}

}  // namespace

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << "writing " << path;
}

void RewriteManifest(const std::string& artifact, const nlohmann::json& manifest) {
  std::string text = manifest.dump(1, ' ', false) + "\n";
  auto hash = loader::ComputeManifestSelfHash(text);
  ASSERT_TRUE(hash.ok()) << artifact;
  text.replace(text.find(manifest["manifest_sha256"].get<std::string>()), 64, hash.value());
  WriteFile(artifact + "/manifest.json", text);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::map<std::string, std::string> HashFiles(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const std::string& name : ListDir(dir)) {
    const std::string bytes = ReadFile(dir + "/" + name);
    out[name] = Sha256Stream::HashHex(bytes.data(), bytes.size());
  }
  return out;
}

std::vector<float> TestFloats(size_t n, uint32_t seed) {
  static const float kSpecials[] = {
      NAN, INFINITY, -INFINITY, -0.0f, 1e-7f, -3e-8f, 6e-8f, 65504.0f,
      65520.0f, 70000.0f, -1e6f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048,
      1.0f + 1.0f / 256, 3.0e-39f};
  std::vector<float> out(n);
  uint32_t s = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    if (i % 97 == 96) {
      out[i] = kSpecials[(i / 97 + seed) % (sizeof(kSpecials) / sizeof(float))];
    } else {
      out[i] = (static_cast<float>(XorShift(s) >> 8) / 16777216.0f) * 6.0f - 3.0f;
    }
  }
  return out;
}

ir::Tensor F32Tensor(const std::string& name, std::vector<int64_t> dims,
                     uint32_t seed) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  std::vector<float> v = TestFloats(n, seed);
  std::vector<uint8_t> bytes(n * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kF32;
  t.dims = std::move(dims);
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

std::vector<ir::Tensor> TinyLlama::Tensors() const {
  std::vector<ir::Tensor> out;
  uint32_t seed = 1;
  auto add = [&](const std::string& name, std::vector<int64_t> dims) {
    out.push_back(F32Tensor(name, std::move(dims), seed++));
  };
  const int64_t head_dim = hidden / heads, kv = kv_heads * head_dim;
  add("model.embed_tokens.weight", {vocab, hidden});
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "self_attn.q_proj.weight", {hidden, hidden});
    add(p + "self_attn.k_proj.weight", {kv, hidden});
    add(p + "self_attn.v_proj.weight", {kv, hidden});
    add(p + "self_attn.o_proj.weight", {hidden, hidden});
    add(p + "mlp.gate_proj.weight", {intermediate, hidden});
    add(p + "mlp.up_proj.weight", {intermediate, hidden});
    add(p + "mlp.down_proj.weight", {hidden, intermediate});
    add(p + "input_layernorm.weight", {hidden});
    add(p + "post_attention_layernorm.weight", {hidden});
  }
  add("model.norm.weight", {hidden});
  add("lm_head.weight", {vocab, hidden});
  return out;
}

std::string TinyLlama::ConfigJson() const {
  nlohmann::json c = {{"model_type", "llama"},
                      {"architectures", {"LlamaForCausalLM"}},
                      {"num_hidden_layers", layers},
                      {"num_attention_heads", heads},
                      {"num_key_value_heads", kv_heads},
                      {"hidden_size", hidden},
                      {"intermediate_size", intermediate},
                      {"vocab_size", vocab},
                      {"max_position_embeddings", 128},
                      {"rope_theta", 10000.0},
                      {"rms_norm_eps", 1e-5},
                      {"tie_word_embeddings", false},
                      {"torch_dtype", "float32"}};
  return c.dump(2);
}

void WriteTinyLlamaCheckpoint(const std::string& dir, const TinyLlama& spec) {
  absl::Status s = safetensors::WriteSafetensorsFile(
      dir + "/model.safetensors", spec.Tensors(), {{"format", "pt"}});
  ASSERT_TRUE(s.ok()) << s.ToString();
  WriteFile(dir + "/config.json", spec.ConfigJson());
  WriteFile(dir + "/tokenizer.json",
            R"({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}}})");
}

void WriteOnnxFixture(const std::string& path) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("writer_test");
  m.set_producer_version("1");
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  (*m.add_metadata_props()).set_key("purpose");
  m.mutable_metadata_props(0)->set_value("round trip");
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("main");
  SetFloatType(g->add_input(), "x", {1, 1, 6, 6});
  SetFloatType(g->add_output(), "z", {1, 4, 6, 6});
  AddFloatInitializer(g, "conv1.weight", {4, 1, 3, 3}, 11);
  AddFloatInitializer(g, "conv1.bias", {4}, 12);
  onnx::TensorProto* shape = g->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(4);
  for (int64_t d : {1, 4, 6, 6}) shape->add_int64_data(d);
  onnx::TensorProto* cond = g->add_initializer();
  cond->set_name("cond");
  cond->set_data_type(onnx::TensorProto::BOOL);
  cond->set_raw_data(std::string(1, '\1'));

  onnx::NodeProto* conv = AddNode(g, "Conv", "conv1", {"x", "conv1.weight", "conv1.bias"}, {"y1"});
  auto* pads = conv->add_attribute();
  pads->set_name("pads");
  pads->set_type(onnx::AttributeProto::INTS);
  for (int i = 0; i < 4; ++i) pads->add_ints(1);
  AddNode(g, "Relu", "relu1", {"y1"}, {"y2"});
  onnx::NodeProto* fill = AddNode(g, "ConstantOfShape", "fill", {"shape"}, {"c"});
  auto* value = fill->add_attribute();
  value->set_name("value");
  value->set_type(onnx::AttributeProto::TENSOR);
  value->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  value->mutable_t()->add_dims(1);
  value->mutable_t()->set_raw_data(RawFloats({0.5f}));
  AddNode(g, "Add", "add1", {"y2", "c"}, {"y3"});

  onnx::NodeProto* branch = AddNode(g, "If", "branch", {"cond"}, {"z"});
  auto* then_attr = branch->add_attribute();
  then_attr->set_name("then_branch");
  then_attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* then_g = then_attr->mutable_g();
  then_g->set_name("then");
  AddFloatInitializer(then_g, "then_bias", {4, 1, 1}, 13);
  AddNode(then_g, "Add", "then_add", {"y3", "then_bias"}, {"t_out"});
  SetFloatType(then_g->add_output(), "t_out", {1, 4, 6, 6});
  auto* else_attr = branch->add_attribute();
  else_attr->set_name("else_branch");
  else_attr->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto* else_g = else_attr->mutable_g();
  else_g->set_name("else");
  AddNode(else_g, "Identity", "else_id", {"y3"}, {"e_out"});
  SetFloatType(else_g->add_output(), "e_out", {1, 4, 6, 6});

  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  WriteFile(path, bytes);
}

}  // namespace slimpack::shard_writer::testing

// Builds the sample artifact spec described in the header.
#include "tests/shard/loader/sample_artifacts.h"

#include <string>
#include <vector>

#include "formats/shard/loader/dequantize.h"

namespace slimpack::loader::testing {
namespace {

J Value(const char* name, const char* dtype, J shape) {
  J v;
  v["name"] = name;
  v["dtype"] = dtype;
  v["shape"] = shape;
  return v;
}

J Node(const char* name, const char* op, std::vector<J> inputs, std::vector<J> outputs) {
  J n;
  n["name"] = name;
  n["op_type"] = op;
  n["domain"] = "";
  n["inputs"] = J::Array(std::move(inputs));
  n["outputs"] = J::Array(std::move(outputs));
  n["attributes"] = J::Object();
  return n;
}

J SampleModel() {
  J then_graph;
  then_graph["name"] = "then";
  then_graph["inputs"] = J::Array();
  then_graph["initializers"] = J::Array();
  then_graph["nodes"] = J::Array({Node("id", "Identity", {"y"}, {"t_out"})});
  then_graph["outputs"] = J::Array({Value("t_out", "f32", J())});

  J g;
  g["name"] = "main";
  g["inputs"] = J::Array({Value("x", "f32", J::Array({J(1), J("batch")})),
                          Value("cond", "bool", J::Array())});
  g["initializers"] = J::Array({J("a"), J("b")});
  J add = Node("add", "Add", {"y", "b"}, {"z"});
  add["attributes"]["alpha"]["type"] = "float";
  add["attributes"]["alpha"]["value"] = 1.5;
  add["attributes"]["table"]["type"] = "tensor";
  add["attributes"]["table"]["value"] = "d";
  add["attributes"]["mode"]["type"] = "string";
  add["attributes"]["mode"]["value_hex"] = "ff00";
  J iff = Node("if", "If", {"cond"}, {"w"});
  iff["attributes"]["then_branch"]["type"] = "graph";
  iff["attributes"]["then_branch"]["value"] = then_graph;
  iff["attributes"]["else_branch"]["type"] = "graph";
  iff["attributes"]["else_branch"]["value"] = then_graph;
  g["nodes"] = J::Array({Node("mm", "MatMul", {"x", "a"}, {"y"}), add, iff});
  g["outputs"] = J::Array({Value("z", "f32", J()), Value("w", "f32", J())});
  g["value_info"] = J::Array();

  J m;
  m["source_format"] = "onnx";
  m["onnx"]["ir_version"] = 8;
  m["onnx"]["opset_imports"][""] = 17;
  m["onnx"]["producer_name"] = "test";
  m["onnx"]["graph"] = g;
  return m;
}

}  // namespace

TestArtifactSpec SampleSpec() {
  std::vector<float> a(16);
  for (int i = 0; i < 16; ++i) a[static_cast<size_t>(i)] = static_cast<float>(i);
  std::vector<float> d(100);
  for (int i = 0; i < 100; ++i) d[static_cast<size_t>(i)] = 0.25f * static_cast<float>(i);

  TestTensor c{"c", "i8", {3, 5}, PatternBytes(15, 1)};
  c.layout["kind"] = "int8_per_channel";
  c.layout["axis"] = 0;
  c.layout["scale"] = "c.scale";
  c.layout["zero_point"] = "c.zp";
  TestTensor q4{"q4", "i4", {4, 10}, PatternBytes(20, 2)};
  q4.layout["kind"] = "int4_groupwise";
  q4.layout["axis"] = 1;
  q4.layout["group_size"] = 4;
  q4.layout["packing"] = "low_nibble_first";
  q4.layout["scale"] = "q4.scale";
  q4.layout["zero_point"] = "q4.zp";

  TestArtifactSpec spec;
  spec.tensors = {
      {"a", "f32", {4, 4}, F32Bytes(a)},
      {"b", "f32", {8}, F32Bytes(std::vector<float>(8, -1.0f))},
      c,
      {"c.scale", "f32", {3}, F32Bytes({0.5f, 0.25f, 2.0f})},
      {"c.zp", "i8", {3}, {0, 3, 0xFB}},
      {"d", "f32", {100}, F32Bytes(d)},
      q4,
      {"q4.scale", "f32", {4, 3}, F32Bytes({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})},
      {"q4.zp", "i4", {4, 3}, {0x10, 0x32, 0x54, 0x76, 0x98, 0xBA}},
  };
  spec.shard_size_cap = 17100;  // shard 0: a..c.zp, shard 1: d..q4.zp
  spec.carried_files = {{"tokenizer.json", "{\"version\": \"1.0\"}\n"}};
  spec.model = SampleModel();
  return spec;
}

uint8_t Fp8SampleCode(bool w, uint64_t i) {
  // Odd multipliers are bijections mod 256.
  return static_cast<uint8_t>(w ? 37 * i + 11 : 101 * i + 3);
}

uint16_t Fp8SampleScaleHalf(bool w, uint64_t k) {
  const uint16_t h = static_cast<uint16_t>(0x3400 + 0x0111 * k);  // k < 24: normal
  return static_cast<uint16_t>(w && k % 2 == 1 ? h | 0x8000 : h);
}

TestArtifact Fp8SampleArtifact(bool f16_scales, uint64_t w_block_rows) {
  auto tensor = [&](bool w, std::vector<uint64_t> shape, int axis, int group_size,
                    std::vector<uint64_t> scale_shape) {
    const std::string name = w ? "w" : "v";
    TestTensor t{name, "u8", shape, std::vector<uint8_t>(shape[0] * shape[1])};
    for (uint64_t i = 0; i < t.data.size(); ++i) t.data[i] = Fp8SampleCode(w, i);
    t.layout["kind"] = "fp8_e4m3_groupwise";
    t.layout["axis"] = axis;
    t.layout["group_size"] = group_size;
    t.layout["scale"] = name + ".scale";
    TestTensor s{name + ".scale", f16_scales ? "f16" : "f32", scale_shape, {}};
    for (uint64_t k = 0; k < scale_shape[0] * scale_shape[1]; ++k) {
      const uint16_t h = Fp8SampleScaleHalf(w, k);
      if (f16_scales) {
        s.data.push_back(static_cast<uint8_t>(h & 0xFF));
        s.data.push_back(static_cast<uint8_t>(h >> 8));
        continue;
      }
      const std::vector<uint8_t> f = F32Bytes({HalfToFloat(h)});
      s.data.insert(s.data.end(), f.begin(), f.end());
    }
    return std::vector<TestTensor>{t, s};
  };
  TestArtifactSpec spec;
  spec.tensors = tensor(false, {10, 7}, 0, 5, {2, 7});
  const uint64_t w_scale_rows = (8 + w_block_rows - 1) / w_block_rows;
  for (TestTensor& t : tensor(true, {8, 40}, 1, 16, {w_scale_rows, 3})) {
    if (w_block_rows > 1 && t.name == "w") t.layout["block_rows"] = w_block_rows;
    spec.tensors.push_back(t);
  }
  TestArtifact a = TestArtifact::Build(spec);
  if (f16_scales) a.manifest["required_features"].Push(J("f16_scales"));
  if (w_block_rows > 1) a.manifest["required_features"].Push(J("fp8_block_rows"));
  a.manifest["required_features"].Push(J("fp8_e4m3"));
  return a;
}

}  // namespace slimpack::loader::testing

// Builds the sample artifact spec described in the header.
#include "tests/shard/loader/sample_artifacts.h"

#include <vector>

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

}  // namespace slimpack::loader::testing

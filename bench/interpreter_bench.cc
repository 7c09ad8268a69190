// Latency of the reference interpreter on two small models built as IR: a
// conv net (64x64 RGB, 4 convs) and a transformer encoder block (seq 128,
// d_model 256, 4 heads, FFN 1024). One thread unless --threads is given
// through the benchmark argument.
#include <benchmark/benchmark.h>

#include <cstring>
#include <random>

#include "runtime/interpreter.h"

namespace slimpack::calibration {
namespace {

using Attr = ir::Attribute;

ir::Tensor RandomTensor(const std::string& name, std::vector<int64_t> dims, uint32_t seed,
                        float scale) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(gen);
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kF32;
  t.dims = std::move(dims);
  std::vector<uint8_t> bytes(n * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

ir::Tensor I64Tensor(const std::string& name, std::vector<int64_t> v) {
  ir::Tensor t;
  t.name = name;
  t.dtype = ir::DType::kI64;
  t.dims = {static_cast<int64_t>(v.size())};
  std::vector<uint8_t> bytes(v.size() * 8);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  t.data = ir::TensorData::Owned(std::move(bytes));
  return t;
}

void AddNode(ir::Graph& g, const std::string& op, std::vector<std::string> in,
             std::string out, std::map<std::string, Attr> attrs = {}) {
  ir::Node n;
  n.name = out;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  n.attributes = std::move(attrs);
  g.nodes.push_back(std::move(n));
}

void AddInit(ir::Graph& g, ir::Tensor t) { (void)g.AddInitializer(std::move(t)); }

ir::Graph ConvNet() {
  ir::Graph g;
  g.name = "convnet";
  g.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({1, 3, 64, 64})});
  const int64_t ch[] = {3, 16, 32, 64, 64};
  std::string prev = "x";
  for (int i = 0; i < 4; ++i) {
    const std::string s = std::to_string(i);
    AddInit(g, RandomTensor("w" + s, {ch[i + 1], ch[i], 3, 3}, 10 + i, 0.2f));
    AddInit(g, RandomTensor("b" + s, {ch[i + 1]}, 20 + i, 0.1f));
    AddNode(g, "Conv", {prev, "w" + s, "b" + s}, "conv" + s,
            {{"pads", Attr::Ints({1, 1, 1, 1})}, {"strides", Attr::Ints({i == 0 ? 1 : 2, i == 0 ? 1 : 2})}});
    AddNode(g, "Relu", {"conv" + s}, "relu" + s);
    prev = "relu" + s;
  }
  AddNode(g, "GlobalAveragePool", {prev}, "gap");
  AddNode(g, "Flatten", {"gap"}, "flat");
  AddInit(g, RandomTensor("fc", {10, 64}, 30, 0.2f));
  AddNode(g, "Gemm", {"flat", "fc"}, "logits", {{"transB", Attr::Int(1)}});
  g.outputs.push_back({"logits", ir::DType::kF32, ir::Shape::FromDims({1, 10})});
  return g;
}

ir::Graph EncoderBlock(int64_t seq) {
  const int64_t d = 256, heads = 4, hd = d / heads, ffn = 1024;
  ir::Graph g;
  g.name = "encoder";
  g.inputs.push_back({"x", ir::DType::kF32, ir::Shape::FromDims({1, seq, d})});
  AddInit(g, RandomTensor("wqkv", {d, 3 * d}, 1, 0.06f));
  AddInit(g, RandomTensor("wo", {d, d}, 2, 0.06f));
  AddInit(g, RandomTensor("w1", {d, ffn}, 3, 0.06f));
  AddInit(g, RandomTensor("w2", {ffn, d}, 4, 0.03f));
  AddInit(g, RandomTensor("ln1_s", {d}, 5, 1.0f));
  AddInit(g, RandomTensor("ln1_b", {d}, 6, 0.1f));
  AddInit(g, RandomTensor("ln2_s", {d}, 7, 1.0f));
  AddInit(g, RandomTensor("ln2_b", {d}, 8, 0.1f));
  AddInit(g, RandomTensor("scale", {}, 9, 0.0f));
  g.FindMutableInitializer("scale")->data = ir::TensorData::Owned([&] {
    const float s = 1.0f / 8.0f;  // 1/sqrt(64)
    std::vector<uint8_t> b(4);
    std::memcpy(b.data(), &s, 4);
    return b;
  }());
  AddInit(g, I64Tensor("split3", {d, d, d}));
  AddInit(g, I64Tensor("heads_shape", {1, seq, heads, hd}));
  AddInit(g, I64Tensor("merge_shape", {1, seq, d}));
  AddNode(g, "MatMul", {"x", "wqkv"}, "qkv");
  ir::Node split;
  split.name = "split";
  split.op_type = "Split";
  split.inputs = {"qkv", "split3"};
  split.outputs = {"q", "k", "v"};
  split.attributes["axis"] = Attr::Int(2);
  g.nodes.push_back(split);
  for (const char* t : {"q", "k", "v"}) {
    AddNode(g, "Reshape", {t, "heads_shape"}, std::string(t) + "_h");
    AddNode(g, "Transpose", {std::string(t) + "_h"}, std::string(t) + "_t",
            {{"perm", Attr::Ints(std::string(t) == "k" ? std::vector<int64_t>{0, 2, 3, 1}
                                                       : std::vector<int64_t>{0, 2, 1, 3})}});
  }
  AddNode(g, "MatMul", {"q_t", "k_t"}, "scores");
  AddNode(g, "Mul", {"scores", "scale"}, "scaled");
  AddNode(g, "Softmax", {"scaled"}, "probs", {{"axis", Attr::Int(-1)}});
  AddNode(g, "MatMul", {"probs", "v_t"}, "ctx");
  AddNode(g, "Transpose", {"ctx"}, "ctx_t", {{"perm", Attr::Ints({0, 2, 1, 3})}});
  AddNode(g, "Reshape", {"ctx_t", "merge_shape"}, "merged");
  AddNode(g, "MatMul", {"merged", "wo"}, "attn");
  AddNode(g, "Add", {"x", "attn"}, "res1");
  AddNode(g, "LayerNormalization", {"res1", "ln1_s", "ln1_b"}, "ln1");
  AddNode(g, "MatMul", {"ln1", "w1"}, "ff1");
  AddNode(g, "Gelu", {"ff1"}, "gelu");
  AddNode(g, "MatMul", {"gelu", "w2"}, "ff2");
  AddNode(g, "Add", {"ln1", "ff2"}, "res2");
  AddNode(g, "LayerNormalization", {"res2", "ln2_s", "ln2_b"}, "y");
  g.outputs.push_back({"y", ir::DType::kF32, ir::Shape::FromDims({1, seq, d})});
  return g;
}

void RunGraph(benchmark::State& state, const ir::Graph& graph, std::vector<int64_t> dims) {
  runtime::InterpreterOptions opts;
  opts.num_threads = static_cast<int>(state.range(0));
  opts.opset_version = 20;  // Gelu
  auto interp = runtime::Interpreter::Create(graph, opts);
  if (!interp.ok()) {
    state.SkipWithError(std::string(interp.status().message()).c_str());
    return;
  }
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> x(n);
  std::mt19937 gen(0);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : x) v = dist(gen);
  const runtime::RtTensor input = runtime::RtTensor::FromVector<float>(dims, x);
  for (auto _ : state) {
    auto out = interp->Run({{"x", input}});
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->front().raw());
  }
}

void BM_ConvNet(benchmark::State& state) { RunGraph(state, ConvNet(), {1, 3, 64, 64}); }
void BM_EncoderBlock(benchmark::State& state) {
  RunGraph(state, EncoderBlock(128), {1, 128, 256});
}

BENCHMARK(BM_ConvNet)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->ArgName("threads");
BENCHMARK(BM_EncoderBlock)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->ArgName("threads");

}  // namespace
}  // namespace slimpack::calibration

BENCHMARK_MAIN();

// Helpers for pass tests: graphs from ONNX text (imported through the real
// importer), running one pass, fixed-seed inputs, and running graphs through
// the calibration interpreter for before/after comparisons.
#ifndef SLIMPACK_TESTS_PASSES_PASS_TEST_UTIL_H_
#define SLIMPACK_TESTS_PASSES_PASS_TEST_UTIL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/rt_tensor.h"
#include "ir/graph.h"
#include "passes/pass.h"

namespace slimpack::passes::testing {

// Parses ONNX text, names every unnamed node after its first output (so
// names do not depend on node positions), writes it to a scratch file and
// imports it with ImportOnnx. Records a test failure on any error.
ir::Model ImportText(const std::string& onnx_text);
// Imports a model file; records a test failure on error.
ir::Model ImportFile(const std::string& path);

// Renames the node producing `output` (expected graphs keep the name of the
// node a fusion rewrote, e.g. the Conv's).
void NameNode(ir::Graph& graph, const std::string& output, const std::string& name);

struct PassRun {
  absl::Status status;
  PassContext context;
};
PassRun RunPass(const Pass& pass, ir::Graph& graph, int64_t opset = 17);

// Uniform [-2, 2) f32 values for every graph input, symbolic dims set to
// `symbolic_dim`; deterministic for a given seed.
std::map<std::string, runtime::RtTensor> RandomInputs(
    const ir::Graph& graph, uint32_t seed, int64_t symbolic_dim = 3);
std::vector<float> RandomFloats(size_t n, uint32_t seed, float lo, float hi);
// "1.25, -0.5" with enough digits to round-trip f32.
std::string FloatList(const std::vector<float>& values);

// Runs `graph` (built-in + fused kernels); records a failure on error.
std::vector<std::vector<float>> Evaluate(
    const ir::Graph& graph,
    const std::map<std::string, runtime::RtTensor>& inputs,
    int64_t opset = 17);
// Largest |a - b| over all outputs; infinity if the shapes differ.
double MaxAbsDiff(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b);

// PrintGraph with the content hash of the named initializers replaced by
// "#masked" (for weights a pass recomputes; their values are checked
// numerically instead).
std::string PrintMasked(const ir::Graph& graph,
                        const std::vector<std::string>& masked_initializers);

std::vector<float> FloatsOf(const ir::Tensor& t);
int CountOps(const ir::Graph& graph, const std::string& op_type);

}  // namespace slimpack::passes::testing

#endif  // SLIMPACK_TESTS_PASSES_PASS_TEST_UTIL_H_

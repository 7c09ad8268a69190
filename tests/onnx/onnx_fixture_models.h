// Source models shared by the round-trip test and the exporter that feeds
// the onnx.checker ctest: each writes "<dir>/source.onnx" (and any external
// data files it needs).
#ifndef SLIMPACK_TESTS_ONNX_ONNX_FIXTURE_MODELS_H_
#define SLIMPACK_TESTS_ONNX_ONNX_FIXTURE_MODELS_H_

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace slimpack::onnx_format::testing {

struct FixtureModel {
  std::string name;
  std::function<void(const std::string& dir)> write;
};

inline void PrintTo(const FixtureModel& m, std::ostream* os) { *os << m.name; }

// Basic, ConstantWeights, IfSubgraph, Fp16Weights, ExternalData,
// EveryAttributeKind, InitializerAsInput, AllDtypes, LoopWithScanOutputs.
std::vector<FixtureModel> FixtureModels();

}  // namespace slimpack::onnx_format::testing

#endif  // SLIMPACK_TESTS_ONNX_ONNX_FIXTURE_MODELS_H_

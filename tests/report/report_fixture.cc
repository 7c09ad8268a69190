// report_fixture OUT_DIR: writes OUT_DIR/broken.onnx (the digits CNN with
// conv2 rounded to 2 bits and the rest to 8 bits) and OUT_DIR/report/
// (report.json/.md/.html of it against the original), for the browser and
// CLI tests.
#include <cstdio>

#include "eval/runnable_model.h"
#include "report/gate.h"
#include "report/render.h"
#include "report/report.h"
#include "formats/onnx/onnx_writer.h"
#include "tests/report/test_models.h"

int main(int argc, char** argv) {
  using namespace slimpack;
  if (argc != 2) {
    std::fprintf(stderr, "usage: report_fixture OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  const std::string dir = std::string(SLIMPACK_SOURCE_DIR) + "/examples/digits-cnn/";
  auto ref = eval::LoadRunnableModel(dir + "model.onnx");
  if (!ref.ok()) {
    std::fprintf(stderr, "%s\n", ref.status().ToString().c_str());
    return 1;
  }
  ir::Model broken = report::testing::RoundWeights(*ref, 8, {{"conv2.weight", 2}});
  broken.source_path = out + "/broken.onnx";
  if (auto s = onnx_format::ExportOnnx(broken, out + "/broken.onnx"); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  calibration::DatasetOptions o;
  o.rename["input"] = "inputs";
  auto data = calibration::Dataset::Open({dir + "eval.safetensors"},
                                         calibration::FeedInputs(ref->graph), o);
  if (!data.ok()) {
    std::fprintf(stderr, "%s\n", data.status().ToString().c_str());
    return 1;
  }
  report::ReportOptions ro;
  auto r = report::BuildReport(*ref, broken, *data, ro);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
    return 1;
  }
  auto rules = report::ParseGateRules("layer.quant_sqnr>=20,top1>=0.9");
  auto gate = report::EvaluateGate(*rules, *r);
  if (gate.ok()) r->gate = *gate;
  if (auto s = report::WriteReportFiles(*r, out + "/report"); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

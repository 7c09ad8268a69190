// One-layer-at-a-time sensitivity and the proposed fallback set of the
// accuracy-diff report (used by BuildReport).
#ifndef SLIMPACK_REPORT_SENSITIVITY_H_
#define SLIMPACK_REPORT_SENSITIVITY_H_

#include "absl/status/status.h"
#include "calibration/dataset.h"
#include "report/report.h"
#include "ir/graph.h"

namespace slimpack::report {

// For every layer whose weights differ, runs the reference with only that
// layer's weights taken from the candidate on the first
// options.sensitivity_runs runs of `data` and scores it against the
// reference (mean KLD for LMs, relative L2 of the outputs otherwise); sets
// each layer's sensitivity and rank, report.sensitivity_metric and, when
// any layer hurts, report.fallback (measured, not estimated). Needs
// report.layers, report.weights and report.end_to_end.task filled.
// Interpreter errors pass through.
absl::Status RankLayers(const ir::Model& reference, const ir::Model& candidate,
                        calibration::Dataset& data, const ReportOptions& options, Report& report);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_SENSITIVITY_H_

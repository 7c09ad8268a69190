// Renders a Report: report.json (schema: docs/report-schema.md), report.md
// (compact, for CI logs and pull-request comments) and report.html
// (self-contained: inline CSS, SVG and a little JS, no network).
// Deterministic: the same report renders to the same bytes (no timestamps,
// no thread counts, no absolute paths).
#ifndef SLIMPACK_REPORT_RENDER_H_
#define SLIMPACK_REPORT_RENDER_H_

#include <string>

#include "absl/status/status.h"
#include "report/report.h"
#include "nlohmann/json.hpp"

namespace slimpack::report {

nlohmann::ordered_json ReportToJson(const Report& report);
// The fallback advice as a recipe fragment: {"rules": [{"match": REGEX,
// "scheme": "f32", "reason": ...}]}, first match wins; null without advice.
nlohmann::ordered_json FallbackRecipe(const Report& report);
std::string RenderMarkdown(const Report& report);
std::string RenderHtml(const Report& report);

// "^model\.layers\.0\.mlp\.down_proj\.weight$": an exact-name regex.
std::string ExactNameRegex(const std::string& name);

// report.json's "format" value.
inline constexpr char kReportFormatName[] = "slimpack-report";

// The files WriteReportFiles writes, in `dir`.
inline constexpr const char* kReportFileNames[] = {"report.json", "report.md", "report.html"};

// Writes report.md, report.html and then report.json into `dir` (created if
// missing), each through support/atomic_file.h (temporary file, fsync,
// rename), and touches nothing else in `dir`. NotFound / InvalidArgument
// naming the path when the directory cannot be made. Whether existing files
// may be replaced is the caller's decision (`slimpack report` replaces them
// only in a slimpack report directory, or with --force).
absl::Status WriteReportFiles(const Report& report, const std::string& dir);

// True if `dir`/report.json is a slimpack report ("format":
// "slimpack-report"): the mark of a directory `slimpack report` wrote.
bool IsSlimpackReportDirectory(const std::string& dir);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_RENDER_H_

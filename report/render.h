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

// Writes report.json, report.md and report.html into `dir` (created if
// missing), each through a temporary file and a rename. NotFound /
// InvalidArgument naming the path when the directory cannot be made.
absl::Status WriteReportFiles(const Report& report, const std::string& dir);

}  // namespace slimpack::report

#endif  // SLIMPACK_REPORT_RENDER_H_

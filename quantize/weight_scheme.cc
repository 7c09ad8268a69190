// Weight scheme names ("int4-g32-asym", "int8-f16scale", ...; see
// quant_rules.h): the canonical name of a WeightScheme and its parser.
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "quantize/quant_rules.h"

namespace slimpack::quantize {
namespace {

constexpr char kSchemeForms[] =
    "keep, f32, f16, bf16, int8, int8-asym, int8-g<G>, int<b> (group from --group), "
    "int<b>-g<G>, int<b>-g<G>-asym, int<b>-row, int<b>-row-asym with b in 2..4; "
    "any int scheme may end in -f16scale or -f32scale";

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 9) return false;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string_view ScaleSuffixOf(std::string_view name) {
  for (std::string_view suffix : {kF16ScaleSuffix, kF32ScaleSuffix}) {
    if (EndsWith(name, suffix)) return suffix;
  }
  return {};
}

std::string WeightScheme::Name() const {
  switch (kind) {
    case Kind::kKeep: return "keep";
    case Kind::kFloat: return std::string(ir::DTypeName(float_dtype));
    case Kind::kInt: break;
  }
  std::string s = absl::StrCat("int", bits);
  if (bits < 8 || group_size > 0) s += group_size > 0 ? absl::StrCat("-g", group_size) : "-row";
  if (!symmetric) s += "-asym";
  if (scale_dtype != DefaultScaleDType(group_size)) {
    s += scale_dtype == quant::ScaleDType::kF16 ? kF16ScaleSuffix : kF32ScaleSuffix;
  }
  return s;
}

quant::ScaleDType DefaultScaleDType(int64_t group_size) {
  return group_size > 0 ? quant::ScaleDType::kF16 : quant::ScaleDType::kF32;
}

absl::StatusOr<WeightScheme> ParseWeightScheme(std::string_view text,
                                               int64_t default_group) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("unknown scheme '", std::string(text), "' (forms: ", kSchemeForms, ")"));
  };
  WeightScheme s;
  if (text == "keep") return s;
  if (text == "f32" || text == "f16" || text == "bf16") {
    s.kind = WeightScheme::Kind::kFloat;
    s.float_dtype = text == "f32" ? ir::DType::kF32 : text == "f16" ? ir::DType::kF16 : ir::DType::kBF16;
    return s;
  }
  if (text.substr(0, 3) != "int") return bad();
  std::string_view rest = text.substr(3);
  std::optional<quant::ScaleDType> scale_dtype;
  if (const std::string_view suffix = ScaleSuffixOf(rest); !suffix.empty()) {
    scale_dtype = suffix == kF16ScaleSuffix ? quant::ScaleDType::kF16 : quant::ScaleDType::kF32;
    rest.remove_suffix(suffix.size());
  }
  if (rest.size() >= 5 && rest.substr(rest.size() - 5) == "-asym") {
    s.symmetric = false;
    rest.remove_suffix(5);
  }
  std::string_view bits_text = rest.substr(0, rest.find('-'));
  std::string_view group_text =
      rest.find('-') == std::string_view::npos ? "" : rest.substr(rest.find('-') + 1);
  int64_t bits = 0;
  if (!ParseInt(bits_text, &bits) || bits < 2 || bits > 8) return bad();
  s.kind = WeightScheme::Kind::kInt;
  s.bits = static_cast<int>(bits);
  if (bits > 4 && bits < 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "scheme '", std::string(text), "': slimpack's integer layouts store 2..4 or 8 bits; for 5 "
        "and 6 bits use llama.cpp's block types (--quant q5_0, q5_1, q5_k_m, q6_k), which the "
        "artifact holds as ggml_blocks"));
  }
  if (group_text.empty()) {
    // A bare "int8" is per output channel (int8_per_channel).
    s.group_size = bits == 8 ? 0 : default_group;
  } else if (group_text == "row") {
    s.group_size = 0;
  } else if (group_text[0] == 'g' && ParseInt(group_text.substr(1), &s.group_size) &&
             s.group_size >= 1) {
  } else {
    return bad();
  }
  s.scale_dtype = scale_dtype.value_or(DefaultScaleDType(s.group_size));
  return s;
}

}  // namespace slimpack::quantize

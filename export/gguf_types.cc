#include "export/gguf_types.h"

#include <cctype>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace slimpack::gguf_export {
namespace {

using gguf::TensorType;

// llama.cpp's llama_ftype values (include/llama.h).
const Preset kPresets[] = {
    {"f32", 0, TensorType::kF32, false},     {"f16", 1, TensorType::kF16, false},
    {"bf16", 32, TensorType::kBF16, false},  {"q8_0", 7, TensorType::kQ8_0, false},
    {"q4_0", 2, TensorType::kQ4_0, true},    {"q4_1", 3, TensorType::kQ4_1, true},
    {"q5_0", 8, TensorType::kQ5_0, true},    {"q5_1", 9, TensorType::kQ5_1, true},
    {"q2_k", 10, TensorType::kQ2_K, true},   {"q3_k_s", 11, TensorType::kQ3_K, true},
    {"q3_k_m", 12, TensorType::kQ3_K, true}, {"q3_k_l", 13, TensorType::kQ3_K, true},
    {"q4_k_s", 14, TensorType::kQ4_K, true}, {"q4_k_m", 15, TensorType::kQ4_K, true},
    {"q5_k_s", 16, TensorType::kQ5_K, true}, {"q5_k_m", 17, TensorType::kQ5_K, true},
    {"q6_k", 18, TensorType::kQ6_K, true},
};

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// llama.cpp's use_more_bits: the first and last eighth of the layers and
// every third layer between them get the larger type.
bool UseMoreBits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

}  // namespace

absl::StatusOr<Preset> ParsePreset(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const Preset& p : kPresets) {
    if (p.name == lower) return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("GGUF type '", name, "' is not one of: ", PresetNames()));
}

std::string PresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.push_back(p.name);
  return absl::StrJoin(names, ", ");
}

absl::StatusOr<TypeOverride> ParseTypeOverride(const std::string& pattern,
                                               const std::string& type) {
  if (pattern.empty()) return absl::InvalidArgumentError("empty tensor pattern");
  absl::StatusOr<support::Regex> re = support::Regex::Compile(pattern);
  if (!re.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid regex '", pattern, "': ", re.status().message()));
  }
  std::string lower;
  for (char c : type) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (uint32_t t = 0; t < 64; ++t) {
    gguf::TypeTraits traits;
    if (!gguf::GetTypeTraits(t, &traits)) continue;
    std::string name(traits.name);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == lower) return TypeOverride{*std::move(re), static_cast<TensorType>(t)};
  }
  std::string names = gguf::SupportedTypeNames();
  for (char& c : names) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return absl::InvalidArgumentError(absl::StrCat("type '", type, "' for '", pattern,
                                                 "' is not a GGUF tensor type (", names, ")"));
}

TypeChooser::TypeChooser(const Preset& preset, int num_layers, int64_t num_heads,
                         int64_t num_kv_heads, bool has_imatrix,
                         std::vector<TypeOverride> overrides)
    : preset_(preset),
      overrides_(std::move(overrides)),
      num_layers_(num_layers),
      gqa_(num_kv_heads > 0 ? num_heads / num_kv_heads : 1),
      has_imatrix_(has_imatrix) {}

// llama-quantize's llama_tensor_get_type for the presets we offer (dense
// llama-family models: no experts, no falcon).
TensorType TypeChooser::RuleType(const TensorSlot& slot) {
  const std::string& name = slot.gguf_name;
  const std::string& p = preset_.name;
  TensorType t = preset_.base;
  if (slot.is_output) {
    if (slot.row_length % gguf::BlockSize(t) != 0) return TensorType::kQ8_0;
    return t == TensorType::kQ8_0 ? t : TensorType::kQ6_K;
  }
  if (name == "token_embd.weight") return t;
  const int i = slot.layer, n = num_layers_;
  if (Contains(name, "attn_v.weight")) {
    const int wv = attn_v_seen_++;
    if (p == "q2_k") return gqa_ >= 4 ? TensorType::kQ4_K : TensorType::kQ3_K;
    if (p == "q3_k_m") return wv < 2 ? TensorType::kQ5_K : TensorType::kQ4_K;
    if (p == "q3_k_l") return TensorType::kQ5_K;
    if ((p == "q4_k_m" || p == "q5_k_m") && UseMoreBits(wv, n)) return TensorType::kQ6_K;
    if (p == "q4_k_s" && wv < 4) return TensorType::kQ5_K;
    return t;
  }
  if (Contains(name, "ffn_down")) {
    if (p == "q2_k") return TensorType::kQ3_K;
    if (p == "q3_k_m") return i < n / 16 ? TensorType::kQ5_K : TensorType::kQ4_K;
    if (p == "q3_k_l") return TensorType::kQ5_K;
    if (p == "q4_k_m" && UseMoreBits(i, n)) return TensorType::kQ6_K;
    if (p == "q5_k_m" && UseMoreBits(i, n)) return TensorType::kQ6_K;
    if (p == "q4_k_s" && i < n / 8) return TensorType::kQ5_K;
    // llama.cpp guards the first eighth of ffn_down against q4_0/q5_0 going
    // wrong even with an imatrix, and only then (so plain runs keep their
    // old bytes).
    if (has_imatrix_ && i < n / 8) {
      if (p == "q4_0") return TensorType::kQ4_1;
      if (p == "q5_0") return TensorType::kQ5_1;
    }
    return t;
  }
  if (Contains(name, "attn_output.weight")) {
    if (p == "q2_k") return TensorType::kQ3_K;
    if (p == "q3_k_m") return TensorType::kQ4_K;
    if (p == "q3_k_l") return TensorType::kQ5_K;
  }
  return t;
}

TypeChoice TypeChooser::Choose(const TensorSlot& slot) {
  // 1-D tensors (norms, biases) stay f32, as llama-quantize leaves them.
  if (slot.rank < 2) return {TensorType::kF32, ""};
  // The preset's rules run for every matrix, overridden or not: they count
  // the tensors of a kind as they go.
  const TensorType ruled = preset_.mixed ? RuleType(slot) : preset_.base;
  for (const TypeOverride& o : overrides_) {
    if (o.match.Search(slot.tensor) || o.match.Search(slot.gguf_name)) {
      return Fit(slot, o.type, absl::StrCat(" (by '", o.match.pattern(), "')"));
    }
  }
  if (!preset_.mixed) {
    // Float presets and q8_0 use one type for every matrix; q8_0 still
    // needs whole blocks.
    if (slot.row_length % gguf::BlockSize(ruled) == 0) return {ruled, ""};
    return {TensorType::kF16,
            absl::StrCat("row length ", slot.row_length, " is not a multiple of ",
                         gguf::BlockSize(ruled), " (", std::string(gguf::TypeName(ruled)),
                         "): using f16")};
  }
  return Fit(slot, ruled, "");
}

// `wanted`, or llama-quantize's fallback when the row length does not
// divide its block.
TypeChoice TypeChooser::Fit(const TensorSlot& slot, TensorType wanted,
                            const std::string& why) const {
  if (slot.row_length % gguf::BlockSize(wanted) == 0) return {wanted, ""};
  // llama-quantize's fallbacks. It sends q2_K/q3_K to IQ4_NL, a type we do
  // not write; q4_0 is the closest type we have at the same size.
  TensorType fallback = TensorType::kF16;
  switch (wanted) {
    case TensorType::kQ2_K:
    case TensorType::kQ3_K: fallback = TensorType::kQ4_0; break;
    case TensorType::kQ4_K: fallback = TensorType::kQ5_0; break;
    case TensorType::kQ5_K: fallback = TensorType::kQ5_1; break;
    case TensorType::kQ6_K: fallback = TensorType::kQ8_0; break;
    default: break;
  }
  if (slot.row_length % gguf::BlockSize(fallback) != 0) fallback = TensorType::kF16;
  return {fallback, absl::StrCat("row length ", slot.row_length, " is not a multiple of ",
                                 gguf::BlockSize(wanted), " (",
                                 std::string(gguf::TypeName(wanted)), why,
                                 "): using ", std::string(gguf::TypeName(fallback)))};
}

}  // namespace slimpack::gguf_export

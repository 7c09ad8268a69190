#include "quantize/quant_rules.h"

#include <map>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "quantize/size_planner.h"
#include "support/regex.h"

namespace slimpack::quantize {
namespace {

using nlohmann::json;

bool IsFloatWeight(ir::DType t) {
  return t == ir::DType::kF32 || t == ir::DType::kF16 || t == ir::DType::kBF16;
}

std::string JsonType(const json& v) { return v.type_name(); }

absl::Status KeyError(const std::string& file, const std::string& path,
                      const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", path, ": ", what));
}

absl::StatusOr<WeightScheme> SchemeAt(const json& v, const std::string& file,
                                      const std::string& path) {
  if (!v.is_string()) {
    return KeyError(file, path, "expected a scheme name string, found " + JsonType(v));
  }
  auto s = ParseWeightScheme(v.get<std::string>());
  if (!s.ok()) return KeyError(file, path, std::string(s.status().message()));
  return s;
}

absl::StatusOr<QuantRule> ParseRule(const json& r, const std::string& file,
                                    int index) {
  const std::string path = absl::StrCat("quant.rules[", index, "]");
  if (!r.is_object()) return KeyError(file, path, "expected an object, found " + JsonType(r));
  QuantRule rule;
  rule.index = index;
  static const std::set<std::string> kOps = {"Linear", "MatMul", "Gemm", "Conv", "Gather"};
  for (const auto& [k, v] : r.items()) {
    const std::string kp = path + "." + k;
    if (k == "match" || k == "op" || k == "role") {
      if (!v.is_string()) return KeyError(file, kp, "expected a string, found " + JsonType(v));
      const std::string s = v.get<std::string>();
      if (k == "match") {
        if (auto re = support::Regex::Compile(s); !re.ok()) {
          return KeyError(file, kp, "invalid regex '" + s + "': " + std::string(re.status().message()));
        }
        rule.match = s;
      } else if (k == "op") {
        if (!kOps.count(s)) {
          return KeyError(file, kp, "unknown op '" + s + "' (known: Conv, Gather, Gemm, Linear, MatMul)");
        }
        rule.op = s;
      } else {
        bool known = false;
        for (int i = 0; i <= static_cast<int>(ir::WeightRole::kBias); ++i) {
          if (ir::WeightRoleName(static_cast<ir::WeightRole>(i)) == s) known = true;
        }
        if (!known) return KeyError(file, kp, "unknown role '" + s + "'");
        rule.role = s;
      }
    } else if (k == "scheme") {
      auto s = SchemeAt(v, file, kp);
      if (!s.ok()) return s.status();
      rule.scheme = *s;
    } else if (k == "algorithm") {
      if (!v.is_string()) return KeyError(file, kp, "expected a string, found " + JsonType(v));
      auto a = ParseAlgorithm(v.get<std::string>());
      if (!a.ok()) return KeyError(file, kp, std::string(a.status().message()));
      rule.algorithm = *a;
    } else if (k == "reason") {
      if (!v.is_string()) return KeyError(file, kp, "expected a string, found " + JsonType(v));
      rule.reason = v.get<std::string>();
    } else {
      return KeyError(file, kp, "unknown key (known: algorithm, match, op, reason, role, scheme)");
    }
  }
  if (!rule.scheme && !rule.algorithm) {
    return KeyError(file, path, "a rule needs \"scheme\" or \"algorithm\"");
  }
  return rule;
}

std::optional<WeightUse> UseOf(const ir::Node& n, const std::string& name,
                               const ir::Tensor& t) {
  const size_t rank = t.dims.size();
  auto input_is = [&](size_t i) { return n.inputs.size() > i && n.inputs[i] == name; };
  if (n.domain.empty() || n.domain == "ai.onnx") {
    if (n.op_type == "MatMul" && input_is(1) && !input_is(0) && rank == 2) {
      return WeightUse{name, "MatMul", n.name, true};
    }
    if (n.op_type == "Gemm" && input_is(1) && !input_is(0) && rank == 2) {
      const ir::Attribute* tb = n.FindAttribute("transB");
      const bool trans_b = tb != nullptr && tb->i != 0;
      return WeightUse{name, "Gemm", n.name, !trans_b};
    }
    if (n.op_type == "Conv" && input_is(1) && !input_is(0) && rank >= 3) {
      return WeightUse{name, "Conv", n.name, false};
    }
    if (n.op_type == "Gather" && input_is(0) && !input_is(1) && rank == 2) {
      const ir::Attribute* ax = n.FindAttribute("axis");
      const int64_t axis = ax == nullptr ? 0 : ax->i;
      if (axis == 0) return WeightUse{name, "Gather", n.name, false};
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kRtn: return "rtn";
    case Algorithm::kRtnMse: return "rtn-mse";
    case Algorithm::kImatrix: return "imatrix";
    case Algorithm::kGptq: return "gptq";
    case Algorithm::kAwq: return "awq";
  }
  return "rtn";
}

absl::StatusOr<Algorithm> ParseAlgorithm(std::string_view text) {
  for (Algorithm a : {Algorithm::kRtn, Algorithm::kRtnMse, Algorithm::kImatrix,
                      Algorithm::kGptq, Algorithm::kAwq}) {
    if (AlgorithmName(a) == text) return a;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown algorithm '", std::string(text), "' (known: awq, gptq, imatrix, rtn, rtn-mse)"));
}

bool NeedsCalibration(Algorithm a) {
  return a == Algorithm::kImatrix || a == Algorithm::kGptq || a == Algorithm::kAwq;
}

bool QuantConfig::active() const {
  if (w8a8 || has_target()) return true;
  if (scheme && scheme->kind != WeightScheme::Kind::kKeep) return true;
  for (const QuantRule& r : rules) {
    if (r.scheme && r.scheme->kind != WeightScheme::Kind::kKeep) return true;
  }
  return false;
}

absl::StatusOr<QuantConfig> ParseQuantConfig(const json& j, const std::string& file) {
  if (!j.is_object()) return KeyError(file, "quant", "expected an object, found " + JsonType(j));
  QuantConfig c;
  bool has_activation_type = false;
  for (const auto& [k, v] : j.items()) {
    const std::string kp = "quant." + k;
    // (A lambda may not capture a structured binding before C++20.)
    const json& value = v;
    auto integer = [&file, &kp, &value](int64_t lo, int64_t hi) -> absl::StatusOr<int64_t> {
      const json& v = value;
      if (!v.is_number_integer()) return KeyError(file, kp, "expected an integer, found " + v.dump());
      const int64_t x = v.get<int64_t>();
      if (x < lo || x > hi) return KeyError(file, kp, absl::StrCat(x, " is outside [", lo, ", ", hi, "]"));
      return x;
    };
    if (k == "scheme" && v.is_string() && v.get<std::string>() == "w8a8") {
      c.w8a8 = true;
    } else if (k == "target_size") {
      if (v.is_number_unsigned() && v.get<uint64_t>() > 0) {
        c.target_bytes = v.get<uint64_t>();
      } else if (v.is_string()) {
        auto b = ParseTargetSize(v.get<std::string>());
        if (!b.ok()) return KeyError(file, kp, std::string(b.status().message()));
        c.target_bytes = *b;
      } else {
        return KeyError(file, kp, "expected a size such as \"3.8GB\" or a byte count, found " + v.dump());
      }
    } else if (k == "target_bpw") {
      if (!v.is_number() || !(v.get<double>() >= 1.0) || !(v.get<double>() <= 32.0)) {
        return KeyError(file, kp, "expected bits per weight in [1, 32], found " + v.dump());
      }
      c.target_bpw = v.get<double>();
    } else if (k == "candidates") {
      if (!v.is_array() || v.empty()) {
        return KeyError(file, kp, "expected a non-empty array of scheme names, found " + v.dump());
      }
      for (size_t i = 0; i < v.size(); ++i) {
        auto s = SchemeAt(v[i], file, kp + "[" + std::to_string(i) + "]");
        if (!s.ok()) return s.status();
        c.candidates.push_back(*s);
      }
    } else if (k == "calib_method") {
      static const std::set<std::string> kMethods = {"minmax", "percentile", "entropy", "mse"};
      if (!v.is_string() || !kMethods.count(v.get<std::string>())) {
        return KeyError(file, kp, "expected one of entropy, minmax, mse, percentile; found " + v.dump());
      }
      c.calib_method = v.get<std::string>();
    } else if (k == "activation_type") {
      if (!v.is_string() || (v.get<std::string>() != "uint8" && v.get<std::string>() != "int8")) {
        return KeyError(file, kp, "expected \"uint8\" or \"int8\", found " + v.dump());
      }
      c.w8a8_int8_activations = v.get<std::string>() == "int8";
      has_activation_type = true;
    } else if (k == "keep_float") {
      if (!v.is_string()) return KeyError(file, kp, "expected a regex string, found " + JsonType(v));
      if (auto re = support::Regex::Compile(v.get<std::string>()); !re.ok()) {
        return KeyError(file, kp, "invalid regex '" + v.get<std::string>() +
                                      "': " + std::string(re.status().message()));
      }
      c.keep_float = v.get<std::string>();
    } else if (k == "scheme") {
      auto s = SchemeAt(v, file, kp);
      if (!s.ok()) return s.status();
      c.scheme = *s;
    } else if (k == "algorithm") {
      if (!v.is_string()) return KeyError(file, kp, "expected a string, found " + JsonType(v));
      auto a = ParseAlgorithm(v.get<std::string>());
      if (!a.ok()) return KeyError(file, kp, std::string(a.status().message()));
      c.algorithm = *a;
    } else if (k == "mse_clip") {
      if (!v.is_boolean()) return KeyError(file, kp, "expected true or false, found " + v.dump());
      c.mse_clip = v.get<bool>();
    } else if (k == "calib_samples") {
      auto x = integer(1, 1 << 20);
      if (!x.ok()) return x.status();
      c.calib_samples = *x;
    } else if (k == "gptq") {
      if (!v.is_object()) return KeyError(file, kp, "expected an object, found " + JsonType(v));
      for (const auto& [gk, gv] : v.items()) {
        const std::string gp = kp + "." + gk;
        if (gk == "damp") {
          if (!gv.is_number() || gv.get<double>() <= 0 || gv.get<double>() > 1) {
            return KeyError(file, gp, "expected a number in (0, 1], found " + gv.dump());
          }
          c.gptq_damp = gv.get<double>();
        } else if (gk == "block") {
          if (!gv.is_number_integer() || gv.get<int64_t>() < 1 || gv.get<int64_t>() > 4096) {
            return KeyError(file, gp, "expected an integer in [1, 4096], found " + gv.dump());
          }
          c.gptq_block = gv.get<int64_t>();
        } else if (gk == "act_order") {
          if (!gv.is_boolean()) return KeyError(file, gp, "expected true or false, found " + gv.dump());
          c.gptq_act_order = gv.get<bool>();
        } else {
          return KeyError(file, gp, "unknown key (known: act_order, block, damp)");
        }
      }
    } else if (k == "awq") {
      if (!v.is_object()) return KeyError(file, kp, "expected an object, found " + JsonType(v));
      for (const auto& [ak, av] : v.items()) {
        if (ak != "grid") return KeyError(file, kp + "." + ak, "unknown key (known: grid)");
        if (!av.is_number_integer() || av.get<int64_t>() < 1 || av.get<int64_t>() > 1000) {
          return KeyError(file, kp + ".grid", "expected an integer in [1, 1000], found " + av.dump());
        }
        c.awq_grid = static_cast<int>(av.get<int64_t>());
      }
    } else if (k == "rules") {
      if (!v.is_array()) return KeyError(file, kp, "expected an array, found " + JsonType(v));
      for (size_t i = 0; i < v.size(); ++i) {
        auto r = ParseRule(v[i], file, static_cast<int>(i));
        if (!r.ok()) return r.status();
        c.rules.push_back(*std::move(r));
      }
    } else {
      return KeyError(file, kp,
                      "unknown key (known: activation_type, algorithm, awq, calib_method, calib_samples, candidates, gptq, "
                      "keep_float, mse_clip, rules, scheme, target_bpw, target_size)");
    }
  }
  if (has_activation_type && !c.w8a8) {
    return KeyError(file, "quant.activation_type", "applies to \"scheme\": \"w8a8\" only");
  }
  return c;
}

json QuantConfigToJson(const QuantConfig& c) {
  json j = json::object();
  if (c.w8a8) {
    j["scheme"] = "w8a8";
    j["calib_method"] = c.calib_method;
    // Only when not the default, so earlier uint8 artifacts keep their bytes.
    if (c.w8a8_int8_activations) j["activation_type"] = "int8";
    if (!c.keep_float.empty()) j["keep_float"] = c.keep_float;
    return j;
  }
  if (c.scheme) j["scheme"] = c.scheme->Name();
  j["algorithm"] = std::string(AlgorithmName(c.algorithm));
  j["mse_clip"] = c.mse_clip;
  j["calib_samples"] = c.calib_samples;
  j["gptq"] = {{"damp", c.gptq_damp}, {"block", c.gptq_block}, {"act_order", c.gptq_act_order}};
  j["awq"] = {{"grid", c.awq_grid}};
  json rules = json::array();
  for (const QuantRule& r : c.rules) {
    json o = json::object();
    if (!r.match.empty()) o["match"] = r.match;
    if (!r.op.empty()) o["op"] = r.op;
    if (!r.role.empty()) o["role"] = r.role;
    if (r.scheme) o["scheme"] = r.scheme->Name();
    if (r.algorithm) o["algorithm"] = std::string(AlgorithmName(*r.algorithm));
    if (!r.reason.empty()) o["reason"] = r.reason;
    rules.push_back(std::move(o));
  }
  j["rules"] = std::move(rules);
  if (c.target_bytes) j["target_size"] = *c.target_bytes;
  if (c.target_bpw) j["target_bpw"] = *c.target_bpw;
  if (!c.candidates.empty()) {
    json cs = json::array();
    for (const WeightScheme& s : c.candidates) cs.push_back(s.Name());
    j["candidates"] = std::move(cs);
  }
  return j;
}

std::vector<WeightUse> FindQuantizableWeights(const ir::Model& model,
                                              std::vector<std::string>* skipped) {
  std::vector<WeightUse> out;
  const ir::Graph& g = model.graph;
  if (g.nodes.empty()) {
    // HF checkpoint: roles from config.json decide.
    for (const ir::Tensor& t : g.initializers()) {
      if (!IsFloatWeight(t.dtype) || t.dims.size() != 2) continue;
      switch (t.role) {
        case ir::WeightRole::kQProj:
        case ir::WeightRole::kKProj:
        case ir::WeightRole::kVProj:
        case ir::WeightRole::kOProj:
        case ir::WeightRole::kGateProj:
        case ir::WeightRole::kUpProj:
        case ir::WeightRole::kDownProj:
        case ir::WeightRole::kLmHead:
          out.push_back({t.name, "Linear", "", false});
          break;
        case ir::WeightRole::kEmbedding:
          out.push_back({t.name, "Gather", "", false});
          break;
        default:
          if (skipped) skipped->push_back(t.name + ": role " + std::string(ir::WeightRoleName(t.role)));
      }
    }
    return out;
  }
  // Graph: every use of each initializer must agree on op and orientation.
  std::map<std::string, std::vector<std::optional<WeightUse>>> uses;
  for (const ir::Node& n : g.nodes) {
    std::set<std::string> seen;
    for (const std::string& in : n.inputs) {
      if (in.empty() || !seen.insert(in).second) continue;
      const ir::Tensor* t = g.FindInitializer(in);
      if (t == nullptr) continue;
      uses[in].push_back(UseOf(n, in, *t));
    }
  }
  for (const ir::Tensor& t : g.initializers()) {
    if (!IsFloatWeight(t.dtype) || t.dims.size() < 2) continue;
    auto it = uses.find(t.name);
    if (it == uses.end()) {
      if (skipped) skipped->push_back(t.name + ": not read by any node");
      continue;
    }
    std::optional<WeightUse> first;
    std::string why;
    for (const auto& u : it->second) {
      if (!u) {
        why = "also read as an activation or by an op without a quantized form";
        break;
      }
      if (first && (first->op != u->op || first->transposed != u->transposed)) {
        why = "read as " + first->op + " and " + u->op + " weight in different orientations";
        break;
      }
      if (!first) first = u;
    }
    if (why.empty() && first) {
      out.push_back(*first);
    } else if (skipped) {
      skipped->push_back(t.name + ": " + why);
    }
  }
  return out;
}

absl::StatusOr<std::vector<TensorPlan>> PlanWeights(const ir::Model& model,
                                                    const QuantConfig& config) {
  std::vector<support::Regex> regexes;
  for (const QuantRule& r : config.rules) {
    auto re = support::Regex::Compile(r.match.empty() ? std::string(".*") : r.match);
    if (!re.ok()) {
      return absl::InvalidArgumentError("rule " + std::to_string(r.index) + ": invalid regex '" +
                                        r.match + "': " + std::string(re.status().message()));
    }
    regexes.push_back(*std::move(re));
  }
  std::vector<TensorPlan> plans;
  for (const WeightUse& use : FindQuantizableWeights(model, nullptr)) {
    const ir::Tensor* t = model.graph.FindInitializer(use.tensor);
    TensorPlan p;
    p.use = use;
    p.scheme = config.scheme.value_or(WeightScheme{});
    p.algorithm = config.algorithm;
    for (size_t i = 0; i < config.rules.size(); ++i) {
      const QuantRule& r = config.rules[i];
      if (!r.op.empty() && r.op != use.op) continue;
      if (!r.role.empty() && r.role != ir::WeightRoleName(t->role)) continue;
      if (!regexes[i].Search(use.tensor)) continue;
      if (r.scheme) p.scheme = *r.scheme;
      if (r.algorithm) p.algorithm = *r.algorithm;
      p.rule = static_cast<int>(i);
      break;
    }
    if (p.scheme.kind == WeightScheme::Kind::kInt && use.op == "Conv" &&
        (p.scheme.bits < 8 || p.scheme.group_size > 0)) {
      p.note = "Conv weight stored int8 per channel: " + p.scheme.Name() +
               " asked, but the group-wise layouts cannot group a spatial kernel";
      p.scheme.bits = 8;
      p.scheme.group_size = 0;
      p.scheme.scale_dtype = DefaultScaleDType(0);
    }
    if (use.op == "Gather" &&
        (p.algorithm == Algorithm::kGptq || p.algorithm == Algorithm::kAwq ||
         p.algorithm == Algorithm::kImatrix)) {
      // A lookup table has no input activations to weigh errors by.
      p.note = "embedding table: " + std::string(AlgorithmName(p.algorithm)) +
               " needs input statistics, using rtn-mse";
      p.algorithm = Algorithm::kRtnMse;
    }
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace slimpack::quantize

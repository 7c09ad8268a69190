// ExportQuantizedWeights (see onnx_weights.h): every quantized initializer
// is planned and packed first; the node list is rebuilt once at the end.
#include "export/onnx_weights.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "export/onnx_graph_edit.h"
#include "export/onnx_nbits_pack.h"
#include "export/onnx_opset21.h"
#include "hf/input_perm.h"
#include "hf/weight_roles.h"
#include "ir/quant.h"
#include "support/status_macros.h"

namespace slimpack::onnx_export {
namespace {

constexpr int64_t kPerAxisDqOpset = 13;

std::string Where(const ir::Tensor& t) { return "tensor '" + t.name + "'"; }

// MatMulNBits' inputs for one group-wise weight.
struct NBitsWeight {
  int64_t k = 0, n = 0, block = 0;
  std::string b, scales, zero_points;  // initializer names ("" = default zp 8)
  std::string g_idx;                   // "" unless act-order (Pack's perm)
};

class WeightExporter {
 public:
  WeightExporter(const ir::Model& model, ir::Graph& dst, OnnxProfile profile, int64_t opset)
      : src_(model.graph), idx_(src_.BuildUseDefIndex()), ed_(dst), profile_(profile), opset_(opset) {}

  absl::StatusOr<WeightReport> Run() {
    for (const ir::Tensor& t : src_.initializers()) {
      if (t.quant.kind == ir::QuantKind::kFp8E4M3GroupWise) {
        RETURN_IF_ERROR(Fp8(t));
      } else if (t.quant.kind == ir::QuantKind::kInt8PerChannel) {
        RETURN_IF_ERROR(Int8(t));
      } else if (ir::IsGroupWise(t.quant.kind)) {
        RETURN_IF_ERROR(Grouped(t));
      } else if (t.quant.kind == ir::QuantKind::kGgmlBlocks) {
        // ONNX has no operator over ggml's blocks; dequantizing would
        // silently write the f32 model at 4-8 times the size.
        return absl::UnimplementedError(
            Where(t) + " holds llama.cpp " + std::string(ir::GgmlTypeName(t.quant.block_type)) +
            " blocks (layout ggml_blocks), which ONNX cannot express: export it with --format "
            "gguf, or convert the checkpoint with an int4/int8 scheme (MatMulNBits) for ONNX");
      }
    }
    std::vector<ir::Node> nodes = std::move(prefix_);
    for (size_t i = 0; i < src_.nodes.size(); ++i) {
      auto it = replaced_.find(i);
      if (it == replaced_.end()) {
        nodes.push_back(src_.nodes[i]);
      } else {
        for (ir::Node& n : it->second) nodes.push_back(std::move(n));
      }
    }
    ed_.graph().nodes = std::move(nodes);
    RemoveUnusedInitializers(ed_.graph());
    return report_;
  }

 private:
  // The integers under a fresh name, the layout dropped; returns the name.
  absl::StatusOr<std::string> MoveCodes(const ir::Tensor& t) {
    ir::Tensor q = t;
    q.name = ed_.Fresh(t.name + "_quantized");
    q.quant = ir::QuantLayout{};
    std::string name = q.name;
    ed_.graph().RemoveInitializer(t.name);
    RETURN_IF_ERROR(ed_.graph().AddInitializer(std::move(q)));
    return name;
  }

  // t's scale tensor, or InvalidArgument naming both.
  absl::StatusOr<const ir::Tensor*> ScaleTensor(const ir::Tensor& t) const {
    const ir::Tensor* scale = src_.FindInitializer(t.quant.scale);
    if (scale == nullptr) {
      return absl::InvalidArgumentError(Where(t) + ": scale '" + t.quant.scale + "' is missing");
    }
    return scale;
  }

  // The name of an f32 tensor holding t's scales: the scale itself, or an
  // exact f32 copy of an f16 one (DequantizeLinear below opset 19 and
  // GatherBlockQuantized/MatMulNBits in an f32 graph read f32 scales).
  absl::StatusOr<std::string> F32Scales(const ir::Tensor& t) {
    ASSIGN_OR_RETURN(const ir::Tensor* scale, ScaleTensor(t));
    if (scale->dtype == ir::DType::kF32) return t.quant.scale;
    ASSIGN_OR_RETURN(std::vector<float> v, ir::ScaleValues(*scale));
    return ed_.AddF32(t.quant.scale + "_f32", scale->dims, std::move(v), t.provenance);
  }

  absl::Status Int8(const ir::Tensor& t) {
    if (opset_ < kPerAxisDqOpset) {
      return absl::UnimplementedError(
          Where(t) + ": int8 per-channel weights are written as per-axis DequantizeLinear, which "
                     "needs default-domain opset >= 13; the model is opset " + std::to_string(opset_));
    }
    ASSIGN_OR_RETURN(std::string q, MoveCodes(t));
    ASSIGN_OR_RETURN(std::string scale, F32Scales(t));
    std::vector<std::string> in = {q, scale};
    if (!t.quant.zero_point.empty()) in.push_back(t.quant.zero_point);
    ir::Node dq = MakeNode(ed_.Fresh(t.name + "_DequantizeLinear"), "DequantizeLinear",
                           std::move(in), {t.name}, t.provenance);
    dq.attributes["axis"] = ir::Attribute::Int(t.quant.axis);
    prefix_.push_back(std::move(dq));
    ++report_.dequantize_weights;
    return absl::OkStatus();
  }

  // FP8 E4M3 codes behind a float8 DequantizeLinear that writes t's name,
  // so every reader is unchanged (see onnx_weights.h).
  absl::Status Fp8(const ir::Tensor& t) {
    if (t.dims.size() != 2) {
      return absl::UnimplementedError(Where(t) + ": FP8 weights of rank " +
                                      std::to_string(t.dims.size()) +
                                      " are not written (rank 2 only)");
    }
    const int64_t axis = t.quant.axis, group = t.quant.group_size;
    ASSIGN_OR_RETURN(const ir::Tensor* scale, ScaleTensor(t));
    RETURN_IF_ERROR(ir::ValidateQuantLayout(t, scale, nullptr));  // the scale's shape, below
    ASSIGN_OR_RETURN(std::vector<float> s, ir::ScaleValues(*scale));
    // DequantizeLinear blocks along one axis only: a scale shared by a
    // block of rows (block_rows, axis 1) is repeated for each of its rows.
    std::vector<int64_t> dims = scale->dims;
    if (const int64_t r = t.quant.BlockRows(); r > 1) {
      const int64_t gc = dims[1];
      std::vector<float> rows(static_cast<size_t>(t.dims[0] * gc));
      for (int64_t i = 0; i < t.dims[0]; ++i) {
        std::copy_n(s.begin() + (i / r) * gc, gc, rows.begin() + i * gc);
      }
      s = std::move(rows);
      dims = {t.dims[0], gc};
    }
    const bool per_axis = group >= t.dims[axis];
    ASSIGN_OR_RETURN(std::string scale_f32,
                     per_axis ? ed_.AddF32(t.quant.scale + "_f32", {t.dims[1 - axis]}, s, t.provenance)
                              : ed_.AddF32(t.quant.scale + "_f32", dims, s, t.provenance));
    ASSIGN_OR_RETURN(std::string q, MoveCodes(t));
    ir::Node dq = MakeNode(ed_.Fresh(t.name + "_DequantizeLinear"), "DequantizeLinear",
                           {q, scale_f32}, {t.name}, t.provenance);
    dq.attributes["axis"] = ir::Attribute::Int(per_axis ? 1 - axis : axis);
    if (!per_axis) dq.attributes["block_size"] = ir::Attribute::Int(group);
    prefix_.push_back(std::move(dq));
    report_.float8_e4m3fn.push_back(q);
    return absl::OkStatus();
  }

  // K / N of `t` read as MatMulNBits' B: its groups run along K
  // (ContribOpsCanTake checked each reader).
  static std::pair<int64_t, int64_t> KAndN(const ir::Tensor& t) {
    return {t.dims[t.quant.axis], t.dims[1 - t.quant.axis]};
  }

  // With `perm` (an act-order weight whose input rows the artifact stores
  // permuted, W'[:, j] = W[:, perm[j]]), code j of a row goes back to K
  // position perm[j] and w.g_idx[perm[j]] = j / block: the checkpoint's
  // own order and g_idx, as MatMulNBits' input 4 reads them.
  absl::StatusOr<NBitsWeight> Pack(const ir::Tensor& t, int64_t k, int64_t n,
                                   const std::vector<int64_t>& perm = {}) {
    NBitsWeight w;
    w.k = k;
    w.n = n;
    w.block = t.quant.group_size;
    const int64_t kb = (k + w.block - 1) / w.block;
    const int64_t blob = w.block * NBitsOf(t) / 8;
    const bool k_inner = t.quant.axis == 1;  // W [N, K] (else [K, N])
    std::vector<uint8_t> b = PackNBitsCodes(t, k, n, perm);
    if (!perm.empty()) {
      ASSIGN_OR_RETURN(w.g_idx, ed_.AddI32(t.name + "_g_idx", {k}, NBitsGroupIndex(w.block, perm),
                                           t.provenance));
    }
    ASSIGN_OR_RETURN(const ir::Tensor* scale, ScaleTensor(t));
    ASSIGN_OR_RETURN(std::vector<float> s, ir::ScaleValues(*scale));
    if (static_cast<int64_t>(s.size()) != n * kb) {
      return absl::InvalidArgumentError(Where(t) + ": scale has " + std::to_string(s.size()) +
                                        " elements, expected " + std::to_string(n * kb));
    }
    std::vector<float> scales = GroupsByRow(s, n, kb, k_inner);
    ASSIGN_OR_RETURN(w.b, ed_.AddZeros8(t.name + "_nbits", ir::DType::kU8, {n, kb, blob}, t.provenance));
    ed_.graph().FindMutableInitializer(w.b)->data = ir::TensorData::Owned(std::move(b));
    ASSIGN_OR_RETURN(w.scales, ed_.AddF32(t.name + "_nbits_scales", {n * kb}, scales, t.provenance));
    // With g_idx ONNX Runtime's kernel reads only zero points of the
    // scales' type (measured: u8 ones are ignored for the default 8), so
    // an act-order weight's are written as f32, unpacked, [N * blocks].
    ASSIGN_OR_RETURN(w.zero_points, ZeroPoints(t, n, kb, k_inner, /*as_f32=*/!perm.empty()));
    return w;
  }

  // Unsigned zero points (+off), packed as MatMulNBits /
  // GatherBlockQuantized read them (two per byte at 4 bits, a byte each at
  // 8, per row); "" when all are the default 2^(bits-1).
  absl::StatusOr<std::string> ZeroPoints(const ir::Tensor& t, int64_t rows, int64_t kb,
                                         bool k_inner, bool as_f32 = false) {
    const int bits = NBitsOf(t);
    const ir::Tensor* zp = t.quant.zero_point.empty() ? nullptr : src_.FindInitializer(t.quant.zero_point);
    if (!t.quant.zero_point.empty() && zp == nullptr) {
      return absl::InvalidArgumentError(Where(t) + ": zero point '" + t.quant.zero_point + "' is missing");
    }
    const std::vector<int32_t> zps = UnsignedZeroPoints(t, zp, rows, kb, k_inner);
    const int32_t default_value = 1 << (bits - 1);
    if (std::all_of(zps.begin(), zps.end(), [&](int32_t z) { return z == default_value; })) {
      return std::string();
    }
    if (as_f32) {
      return ed_.AddF32(t.name + "_zero_points_f32", {rows * kb},
                        std::vector<float>(zps.begin(), zps.end()), t.provenance);
    }
    const int64_t row = bits == 8 ? kb : (kb + 1) / 2;
    ASSIGN_OR_RETURN(std::string name,
                     ed_.AddZeros8(t.name + (bits == 8 ? "_zero_points_u8" : "_zero_points_u4"),
                                   ir::DType::kU8, {rows, row}, t.provenance));
    ed_.graph().FindMutableInitializer(name)->data =
        ir::TensorData::Owned(PackZeroPoints(zps, rows, kb, bits));
    return name;
  }

  // Gather(W[V, H], ids) with groups along H -> com.microsoft
  // GatherBlockQuantized(codes as u8 [V, H/2] (4 bits) or [V, H] (8 bits),
  // ids, scales [V, H/g][, zp]).
  absl::Status GatherNode(const ir::Tensor& t, const ir::Node& n, std::vector<ir::Node>& out) {
    const int bits = NBitsOf(t);  // ContribOpsCanTake checked the Gather
    if (gather_.b.empty()) {
      const int64_t v = t.dims[0], h = t.dims[1];
      const int64_t kb = (h + t.quant.group_size - 1) / t.quant.group_size;
      const int64_t row = h * bits / 8;
      std::vector<uint8_t> b = PackGatherCodes(t);
      ASSIGN_OR_RETURN(gather_.b, ed_.AddZeros8(t.name + (bits == 8 ? "_u8" : "_u4"), ir::DType::kU8,
                                                {v, row}, t.provenance));
      ed_.graph().FindMutableInitializer(gather_.b)->data = ir::TensorData::Owned(std::move(b));
      ASSIGN_OR_RETURN(gather_.scales, F32Scales(t));  // [V, H/g] already
      ASSIGN_OR_RETURN(gather_.zero_points, ZeroPoints(t, v, kb, true));
    }
    std::vector<std::string> in = {gather_.b, n.inputs[1], gather_.scales};
    if (!gather_.zero_points.empty()) in.push_back(gather_.zero_points);
    ir::Node g = MakeNode(n.name, "GatherBlockQuantized", std::move(in), n.outputs, n.provenance,
                          kMicrosoftDomain);
    g.attributes["gather_axis"] = ir::Attribute::Int(0);
    g.attributes["quantize_axis"] = ir::Attribute::Int(1);
    g.attributes["block_size"] = ir::Attribute::Int(t.quant.group_size);
    g.attributes["bits"] = ir::Attribute::Int(bits);
    out.push_back(std::move(g));
    ++report_.gather_block_quantized;
    return absl::OkStatus();
  }

  // The index of the Gather(x, `<weight>.input_perm`, axis=-1) that is
  // node n's A input and feeds nothing else, or nullptr.
  const size_t* PermGather(const ir::Node& n) const {
    auto p = idx_.producer.find(n.inputs[0]);
    if (p == idx_.producer.end()) return nullptr;
    const ir::Node& g = src_.nodes[p->second];
    if (!g.domain.empty() || g.op_type != "Gather" || g.inputs.size() != 2 ||
        g.inputs[1] != n.inputs[1] + hf::kInputPermSuffix || g.IntAttrOr("axis", 0) != -1) {
      return nullptr;
    }
    auto uses = idx_.consumers.find(n.inputs[0]);
    if (uses == idx_.consumers.end() || uses->second.size() != 1) return nullptr;
    for (const ir::ValueInfo& o : src_.outputs) {
      if (o.name == n.inputs[0]) return nullptr;
    }
    return &p->second;
  }

  // Whether com.microsoft MatMulNBits / GatherBlockQuantized can take every
  // reader of `t`: a block size they have, rank 2, and each reader a B
  // input along K (MatMul/Gemm without transA/alpha/beta) or a Gather of
  // rows from a table grouped along its even-sized last axis.
  bool ContribOpsCanTake(const ir::Tensor& t) const {
    const int64_t g = t.quant.group_size;
    if (g < 16 || (g & (g - 1)) != 0 || t.dims.size() != 2) return false;
    for (const ir::ValueInfo& o : src_.outputs) {
      if (o.name == t.name) return false;
    }
    auto it = idx_.consumers.find(t.name);
    if (it == idx_.consumers.end()) return true;
    for (size_t c : it->second) {
      const ir::Node& n = src_.nodes[c];
      if (!n.domain.empty()) return false;
      if (n.op_type == "Gather") {
        if (n.inputs.size() != 2 || n.inputs[0] != t.name || n.IntAttrOr("axis", 0) != 0 ||
            t.quant.axis != 1 || (NBitsOf(t) == 4 && t.dims[1] % 2 != 0)) {
          return false;
        }
        continue;
      }
      const bool gemm = n.op_type == "Gemm";
      if ((!gemm && n.op_type != "MatMul") || n.inputs.size() < 2 || n.inputs[1] != t.name ||
          n.inputs[0] == t.name) {
        return false;
      }
      if (gemm && (n.IntAttrOr("transA", 0) != 0 ||
                   (n.FindAttribute("alpha") && n.FindAttribute("alpha")->f != 1.0f) ||
                   (n.FindAttribute("beta") && n.FindAttribute("beta")->f != 1.0f))) {
        return false;
      }
      const int k_axis = gemm && n.IntAttrOr("transB", 0) != 0 ? 1 : 0;
      if (t.quant.axis != k_axis) return false;
    }
    return true;
  }

  // A group-wise weight as standard ONNX: DequantizeLinear (opset 21) of
  // the codes as INT4/UINT4 (or INT8/UINT8) with f32 scales and the
  // zero points as stored, block_size = group size along the layout's
  // axis, writing t's name, so every reader is unchanged. The codes and
  // zero points are the artifact's bytes (ONNX packs 4-bit values two per
  // byte, low nibble first, as the IR does).
  absl::Status BlockedDequantize(const ir::Tensor& t) {
    ASSIGN_OR_RETURN(std::string scale, F32Scales(t));
    const std::string zero_point = t.quant.zero_point;
    if (!zero_point.empty() && src_.FindInitializer(zero_point) == nullptr) {
      return absl::InvalidArgumentError(Where(t) + ": zero point '" + zero_point + "' is missing");
    }
    ASSIGN_OR_RETURN(std::string q, MoveCodes(t));
    std::vector<std::string> in = {q, scale};
    if (!zero_point.empty()) in.push_back(zero_point);
    ir::Node dq = MakeNode(ed_.Fresh(t.name + "_DequantizeLinear"), "DequantizeLinear",
                           std::move(in), {t.name}, t.provenance);
    dq.attributes["axis"] = ir::Attribute::Int(t.quant.axis);
    dq.attributes["block_size"] = ir::Attribute::Int(t.quant.group_size);
    prefix_.push_back(std::move(dq));
    ++report_.blocked_dequantize;
    return absl::OkStatus();
  }

  // A group-wise weight (int4 or int8) as com.microsoft MatMulNBits /
  // GatherBlockQuantized with bits 4 or 8 where the ort profile is asked
  // for and they can take it, else as blocked DequantizeLinear.
  absl::Status Grouped(const ir::Tensor& t) {
    const int bits = NBitsOf(t);
    // ContribOpsCanTake checked the block size, the rank, that t is no
    // graph output and every reader.
    if (profile_ != OnnxProfile::kOrt || !ContribOpsCanTake(t)) return BlockedDequantize(t);
    auto it = idx_.consumers.find(t.name);
    if (it == idx_.consumers.end()) return absl::OkStatus();  // unread: dropped
    std::optional<NBitsWeight> packed;
    gather_ = NBitsWeight{};
    for (size_t c : it->second) {
      const ir::Node& n = src_.nodes[c];
      if (n.domain.empty() && n.op_type == "Gather") {
        RETURN_IF_ERROR(GatherNode(t, n, replaced_[c]));
        continue;
      }
      const auto kn = KAndN(t);
      // An act-order weight is read through Gather(x, perm, axis=-1)
      // (hf::kInputPermSuffix); that Gather folds into MatMulNBits' g_idx
      // when it feeds only this node.
      const size_t* gather = PermGather(n);
      std::vector<int64_t> perm;
      if (gather != nullptr) {
        ASSIGN_OR_RETURN(perm, hf::ReadInputPermutation(src_, t.name, kn.first, "the ONNX export"));
        // Not an initializer (a Constant's output, a graph input): the
        // Gather stays and the weight is packed as stored.
        if (perm.empty()) gather = nullptr;
      }
      if (!packed || packed->g_idx.empty() != perm.empty()) {
        ASSIGN_OR_RETURN(NBitsWeight w, Pack(t, kn.first, kn.second, perm));
        packed = std::move(w);
      }
      const std::string x = gather != nullptr ? src_.nodes[*gather].inputs[0] : n.inputs[0];
      std::vector<std::string> in = {x, packed->b, packed->scales};
      if (!packed->zero_points.empty() || !packed->g_idx.empty()) in.push_back(packed->zero_points);
      if (!packed->g_idx.empty()) {
        in.push_back(packed->g_idx);
        replaced_[*gather] = {};  // the Gather goes
        ++report_.g_idx_folded;
      }
      const bool bias = n.inputs.size() > 2 && !n.inputs[2].empty();
      const std::string y = bias ? ed_.Fresh(n.outputs.at(0) + "_matmul") : n.outputs.at(0);
      ir::Node mm = MakeNode(n.name, "MatMulNBits", std::move(in), {y}, n.provenance, kMicrosoftDomain);
      mm.attributes["K"] = ir::Attribute::Int(packed->k);
      mm.attributes["N"] = ir::Attribute::Int(packed->n);
      mm.attributes["bits"] = ir::Attribute::Int(bits);
      mm.attributes["block_size"] = ir::Attribute::Int(packed->block);
      std::vector<ir::Node>& out = replaced_[c];
      out.push_back(std::move(mm));
      if (bias) {
        out.push_back(MakeNode(ed_.Fresh(n.name + "_bias"), "Add", {y, n.inputs[2]}, {n.outputs.at(0)},
                               n.provenance));
      }
      ++report_.matmul_nbits;
    }
    ed_.graph().RemoveInitializer(t.name);
    return absl::OkStatus();
  }

  const ir::Graph& src_;
  const ir::UseDefIndex idx_;
  GraphEditor ed_;
  OnnxProfile profile_;
  int64_t opset_;
  std::vector<ir::Node> prefix_;
  std::map<size_t, std::vector<ir::Node>> replaced_;
  NBitsWeight gather_;  // the current tensor's GatherBlockQuantized inputs
  WeightReport report_;
};

}  // namespace

absl::StatusOr<WeightReport> ExportQuantizedWeights(ir::Model& model, OnnxProfile profile) {
  auto it = model.opset_imports.find("");
  const int64_t opset = it == model.opset_imports.end() ? 17 : it->second;
  ir::Graph graph = model.graph;
  WeightExporter exporter(model, graph, profile, opset);
  ASSIGN_OR_RETURN(WeightReport report, exporter.Run());
  const bool needs_21 = !report.float8_e4m3fn.empty() || report.blocked_dequantize > 0;
  if (needs_21 && opset < kBlockedDequantizeOpset) {
    // Raised apart from `model`, which stays unchanged on error.
    ir::Model raised;
    raised.opset_imports = model.opset_imports;
    raised.ir_version = model.ir_version;
    raised.graph = std::move(graph);
    RETURN_IF_ERROR(RaiseDefaultOpsetTo21(
        raised, !report.float8_e4m3fn.empty()
                    ? "FP8 weights (float8 DequantizeLinear)"
                    : "group-wise weights MatMulNBits cannot take (blocked DequantizeLinear)"));
    model.graph = std::move(raised.graph);
    model.opset_imports = std::move(raised.opset_imports);
    model.ir_version = raised.ir_version;
    report.opset_raised_from = opset;
  } else {
    model.graph = std::move(graph);
  }
  // FLOAT8 initializers need IR 9, INT4 ones IR 10 (as opset 21 does).
  if (needs_21) model.ir_version = std::max<int64_t>(model.ir_version, 10);
  if (report.matmul_nbits + report.gather_block_quantized > 0 &&
      !model.opset_imports.count(kMicrosoftDomain)) {
    model.opset_imports[kMicrosoftDomain] = 1;
  }
  return report;
}

}  // namespace slimpack::onnx_export

// TensorProto -> ir::Tensor. Every count read from the file is checked
// before it sizes an allocation (bad-inputs.md #6, #8, #13, #28, #30).
#include "formats/onnx/tensor_from_proto.h"

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "formats/onnx/dtype_conversion.h"
#include "formats/onnx/external_data.h"
#include "support/status_macros.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "ONNX raw_data is little-endian; big-endian hosts would need "
              "byte swapping");

namespace slimpack::onnx_format {
namespace {

using google::protobuf::RepeatedField;

enum class TypedField { kFloat, kInt32, kInt64, kDouble, kUint64 };

const char* FieldName(TypedField f) {
  switch (f) {
    case TypedField::kFloat: return "float_data";
    case TypedField::kInt32: return "int32_data";
    case TypedField::kInt64: return "int64_data";
    case TypedField::kDouble: return "double_data";
    case TypedField::kUint64: return "uint64_data";
  }
  return "?";
}

// The typed field onnx.proto assigns to each type.
TypedField FieldFor(ir::DType dt) {
  switch (dt) {
    case ir::DType::kF32: return TypedField::kFloat;
    case ir::DType::kI64: return TypedField::kInt64;
    case ir::DType::kF64: return TypedField::kDouble;
    case ir::DType::kU32:
    case ir::DType::kU64: return TypedField::kUint64;
    default: return TypedField::kInt32;
  }
}

int64_t FieldCount(const onnx::TensorProto& p, TypedField f) {
  switch (f) {
    case TypedField::kFloat: return p.float_data_size();
    case TypedField::kInt32: return p.int32_data_size();
    case TypedField::kInt64: return p.int64_data_size();
    case TypedField::kDouble: return p.double_data_size();
    case TypedField::kUint64: return p.uint64_data_size();
  }
  return 0;
}

std::string Describe(ir::DType dt, const std::vector<int64_t>& dims) {
  return std::string(ir::DTypeName(dt)) + ir::Shape::FromDims(dims).ToString();
}

// Copies `values` into little-endian `Out` bytes. With `check_range`, values
// outside [lo, hi] are an error rather than silently wrapped.
template <typename Out, typename In>
absl::StatusOr<std::vector<uint8_t>> Pack(const RepeatedField<In>& values,
                                          const char* field, ir::DType dt,
                                          bool check_range = false,
                                          In lo = In(), In hi = In()) {
  std::vector<uint8_t> bytes(static_cast<size_t>(values.size()) * sizeof(Out));
  for (int i = 0; i < values.size(); ++i) {
    In v = values.Get(i);
    if (check_range && (v < lo || v > hi)) {
      return absl::InvalidArgumentError(
          std::string(field) + " value " + std::to_string(v) + " at index " +
          std::to_string(i) + " is outside [" + std::to_string(lo) + ", " +
          std::to_string(hi) + "] for " + std::string(ir::DTypeName(dt)));
    }
    Out o = static_cast<Out>(v);
    std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(Out), &o,
                sizeof(Out));
  }
  return bytes;
}

absl::StatusOr<std::vector<uint8_t>> DecodeTyped(const onnx::TensorProto& p,
                                                 ir::DType dt) {
  const char* f = FieldName(FieldFor(dt));
  const auto& i32 = p.int32_data();
  switch (dt) {
    case ir::DType::kF32: return Pack<float>(p.float_data(), f, dt);
    // float16/bfloat16 are stored as their bit patterns, one per int32.
    case ir::DType::kF16:
    case ir::DType::kBF16:
    case ir::DType::kU16: return Pack<uint16_t>(i32, f, dt, true, 0, 65535);
    case ir::DType::kI32: return Pack<int32_t>(i32, f, dt);
    case ir::DType::kI16: return Pack<int16_t>(i32, f, dt, true, -32768, 32767);
    case ir::DType::kI8: return Pack<int8_t>(i32, f, dt, true, -128, 127);
    case ir::DType::kU8: return Pack<uint8_t>(i32, f, dt, true, 0, 255);
    case ir::DType::kBool: return Pack<uint8_t>(i32, f, dt, true, 0, 1);
    case ir::DType::kI64: return Pack<int64_t>(p.int64_data(), f, dt);
    case ir::DType::kF64: return Pack<double>(p.double_data(), f, dt);
    case ir::DType::kU32:
      return Pack<uint32_t>(p.uint64_data(), f, dt, true, uint64_t{0},
                            uint64_t{std::numeric_limits<uint32_t>::max()});
    case ir::DType::kU64: return Pack<uint64_t>(p.uint64_data(), f, dt);
    default:
      return absl::UnimplementedError(
          std::string(ir::DTypeName(dt)) +
          " values in typed fields are not supported; store them in raw_data");
  }
}

// Checks the typed fields and converts them; `numel` is already validated.
absl::StatusOr<ir::TensorData> TypedData(const onnx::TensorProto& p,
                                         ir::DType dt,
                                         const std::vector<int64_t>& dims,
                                         uint64_t numel) {
  if (dt == ir::DType::kI4 || dt == ir::DType::kU4) {
    return absl::UnimplementedError(
        std::string(ir::DTypeName(dt)) +
        " values in typed fields are not supported; store them in raw_data");
  }
  TypedField expected = FieldFor(dt);
  if (p.string_data_size() > 0) {
    return absl::InvalidArgumentError(
        Describe(dt, dims) + " tensor stores values in string_data; expected " +
        FieldName(expected));
  }
  for (TypedField f : {TypedField::kFloat, TypedField::kInt32,
                       TypedField::kInt64, TypedField::kDouble,
                       TypedField::kUint64}) {
    if (f != expected && FieldCount(p, f) > 0) {
      return absl::InvalidArgumentError(
          Describe(dt, dims) + " tensor stores values in " + FieldName(f) +
          "; expected " + FieldName(expected));
    }
  }
  uint64_t count = static_cast<uint64_t>(FieldCount(p, expected));
  if (count != numel) {
    return absl::InvalidArgumentError(
        std::string(FieldName(expected)) + " has " + std::to_string(count) +
        " values, expected " + std::to_string(numel) + " for " +
        Describe(dt, dims));
  }
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, DecodeTyped(p, dt));
  return ir::TensorData::Owned(std::move(bytes));
}

int64_t TypedValueCount(const onnx::TensorProto& p) {
  return int64_t{p.float_data_size()} + p.int32_data_size() +
         p.int64_data_size() + p.double_data_size() + p.uint64_data_size() +
         p.string_data_size();
}

// Sets dtype and dims of `t` from `proto`; returns numel and byte size.
struct Sizes {
  uint64_t numel;
  uint64_t bytes;
};
absl::StatusOr<Sizes> ReadTypeAndShape(const onnx::TensorProto& proto,
                                       ir::Tensor* t) {
  if (!proto.has_data_type() ||
      proto.data_type() == onnx::TensorProto::UNDEFINED) {
    return absl::InvalidArgumentError("data_type is missing or UNDEFINED");
  }
  auto dtype = DTypeFromOnnx(proto.data_type());
  if (!dtype) {
    return absl::UnimplementedError(
        "data type " + OnnxTypeName(proto.data_type()) +
        " is not supported; supported: " + SupportedOnnxTypes());
  }
  t->dtype = *dtype;
  t->dims.assign(proto.dims().begin(), proto.dims().end());
  for (size_t i = 0; i < t->dims.size(); ++i) {
    if (t->dims[i] < 0) {
      return absl::InvalidArgumentError("dim " + std::to_string(i) + " is " +
                                        std::to_string(t->dims[i]) +
                                        "; dims must be >= 0");
    }
  }
  auto numel = ir::CheckedNumElements(t->dims);
  auto bytes = numel ? ir::DTypeByteSize(t->dtype, *numel) : std::nullopt;
  if (!numel || !bytes) {
    return absl::InvalidArgumentError(
        "shape " + ir::Shape::FromDims(t->dims).ToString() +
        " overflows: its element or byte count does not fit 63 bits");
  }
  return Sizes{*numel, *bytes};
}

// raw_data as a view owned by the proto (or a copy when there is no owner).
absl::StatusOr<ir::TensorData> RawData(const onnx::TensorProto& proto,
                                       const ir::Tensor& t, uint64_t nbytes,
                                       const ImportContext& ctx) {
  const std::string& raw = proto.raw_data();
  if (raw.size() != nbytes) {
    return absl::InvalidArgumentError(
        "raw_data has " + std::to_string(raw.size()) + " bytes, expected " +
        std::to_string(nbytes) + " for " + Describe(t.dtype, t.dims));
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(raw.data());
  if (raw.empty()) return ir::TensorData::Owned({});
  if (ctx.proto_owner) {
    return ir::TensorData::View(ctx.proto_owner, bytes, raw.size());
  }
  return ir::TensorData::Owned({bytes, bytes + raw.size()});
}

absl::Status ReadExternal(const onnx::TensorProto& proto, uint64_t nbytes,
                          const ImportContext& ctx, ir::Tensor* t) {
  if (proto.has_raw_data() || TypedValueCount(proto) > 0) {
    return absl::InvalidArgumentError(
        "data_location is EXTERNAL but the tensor also has embedded data");
  }
  if (ctx.external_data == nullptr) {
    return absl::InvalidArgumentError(
        "external data is not allowed in this context");
  }
  ASSIGN_OR_RETURN(ExternalSlice slice,
                   ctx.external_data->Resolve(proto, nbytes));
  t->data = std::move(slice.data);
  t->provenance = ir::Provenance::FromFile(std::move(slice.file),
                                           static_cast<int64_t>(slice.offset));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ir::Tensor> TensorFromProto(const onnx::TensorProto& proto,
                                           const ImportContext& ctx) {
  ir::Tensor t;
  t.name = proto.name();
  ASSIGN_OR_RETURN(Sizes sizes, ReadTypeAndShape(proto, &t));
  if (proto.has_segment()) {
    return absl::UnimplementedError("segmented tensors are not supported");
  }
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    RETURN_IF_ERROR(ReadExternal(proto, sizes.bytes, ctx, &t));
    return t;
  }
  t.provenance = ir::Provenance::FromFile(ctx.model_path, -1);
  const int64_t typed = TypedValueCount(proto);
  if (proto.has_raw_data()) {
    if (typed > 0) {
      return absl::InvalidArgumentError(
          "has both raw_data and typed data fields; exactly one is allowed");
    }
    ASSIGN_OR_RETURN(t.data, RawData(proto, t, sizes.bytes, ctx));
    return t;
  }
  if (typed == 0) {
    if (sizes.bytes == 0) {
      t.data = ir::TensorData::Owned({});
      return t;
    }
    return absl::InvalidArgumentError(
        "has no data: " + Describe(t.dtype, t.dims) + " needs " +
        std::to_string(sizes.bytes) +
        " bytes in raw_data, a typed field or external data");
  }
  ASSIGN_OR_RETURN(t.data, TypedData(proto, t.dtype, t.dims, sizes.numel));
  return t;
}

}  // namespace slimpack::onnx_format

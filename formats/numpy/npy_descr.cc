// The descr table: one row per supported NumPy type.
#include "formats/numpy/npy_descr.h"

namespace slimpack::numpy {
namespace {

struct DescrRow {
  const char* descr;  // what numpy writes
  const char* alias;  // the other byte-order mark numpy accepts for 1 byte
  ir::DType dtype;
};

constexpr DescrRow kDescrs[] = {
    {"<f4", nullptr, ir::DType::kF32}, {"<f8", nullptr, ir::DType::kF64},
    {"<f2", nullptr, ir::DType::kF16}, {"<i8", nullptr, ir::DType::kI64},
    {"<i4", nullptr, ir::DType::kI32}, {"<i2", nullptr, ir::DType::kI16},
    {"|i1", "<i1", ir::DType::kI8},    {"|u1", "<u1", ir::DType::kU8},
    {"|b1", "<b1", ir::DType::kBool},  {"<u2", nullptr, ir::DType::kU16},
    {"<u4", nullptr, ir::DType::kU32}, {"<u8", nullptr, ir::DType::kU64},
};

}  // namespace

std::optional<ir::DType> DTypeFromDescr(const std::string& descr) {
  for (const DescrRow& row : kDescrs) {
    if (descr == row.descr || (row.alias != nullptr && descr == row.alias)) {
      return row.dtype;
    }
  }
  return std::nullopt;
}

std::optional<std::string> DescrFromDType(ir::DType dtype) {
  for (const DescrRow& row : kDescrs) {
    if (row.dtype == dtype) return std::string(row.descr);
  }
  return std::nullopt;
}

std::string SupportedDescrs() {
  std::string out;
  for (const DescrRow& row : kDescrs) {
    if (!out.empty()) out += " ";
    out += row.descr;
  }
  return out;
}

}  // namespace slimpack::numpy

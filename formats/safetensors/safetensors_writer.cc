#include "formats/safetensors/safetensors_writer.h"

#include <algorithm>
#include <exception>
#include <memory>
#include <set>

#include "absl/status/status.h"
#include "ir/shape.h"
#include "formats/safetensors/safetensors_dtype.h"
#include "support/strict_json.h"
#include "nlohmann/json.hpp"
#include "support/atomic_file.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::safetensors {
namespace {

using nlohmann::json;

absl::Status CheckTensor(const ir::Tensor& t, std::set<std::string>& seen) {
  const std::string ctx = "tensor '" + t.name + "'";
  if (t.name.empty())
    return absl::InvalidArgumentError("tensor with empty name");
  if (support::FindInvalidUtf8(t.name)) {
    return absl::InvalidArgumentError(ctx + ": name is not valid UTF-8");
  }
  if (t.name == "__metadata__") {
    return absl::InvalidArgumentError(
        ctx + ": the name is reserved for file metadata");
  }
  if (!seen.insert(t.name).second) {
    return absl::InvalidArgumentError(ctx + ": duplicate tensor name");
  }
  if (!SafetensorsDTypeName(t.dtype)) {
    return absl::UnimplementedError(
        ctx + ": dtype " + std::string(ir::DTypeName(t.dtype)) +
        " cannot be stored in safetensors (supported: " +
        SupportedSafetensorsDTypes() + ")");
  }
  ASSIGN_OR_RETURN(uint64_t expected, t.ExpectedBytes());
  if (t.data.size() != expected) {
    return absl::InvalidArgumentError(
        ctx + ": has " + std::to_string(t.data.size()) + " bytes of data but " +
        std::string(ir::DTypeName(t.dtype)) + " " +
        ir::Shape::FromDims(t.dims).ToString() + " needs " +
        std::to_string(expected));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SafetensorsLayout> LayoutSafetensors(
    const std::vector<ir::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  std::set<std::string> seen;
  for (const ir::Tensor& t : tensors) RETURN_IF_ERROR(CheckTensor(t, seen));
  for (const auto& [k, v] : metadata) {
    if (support::FindInvalidUtf8(k) || support::FindInvalidUtf8(v)) {
      return absl::InvalidArgumentError("__metadata__ entry '" + k +
                                        "' is not valid UTF-8");
    }
  }

  SafetensorsLayout layout;
  layout.order.resize(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) layout.order[i] = i;
  std::sort(layout.order.begin(), layout.order.end(), [&](size_t a, size_t b) {
    int ba = ir::DTypeBits(tensors[a].dtype);
    int bb = ir::DTypeBits(tensors[b].dtype);
    if (ba != bb) return ba > bb;
    return tensors[a].name < tensors[b].name;
  });
  layout.begin.assign(tensors.size(), 0);
  json header = json::object();
  uint64_t offset = 0;
  for (size_t i : layout.order) {
    const ir::Tensor& t = tensors[i];
    auto end = CheckedAdd(offset, t.data.size());
    if (!end) {
      return absl::InvalidArgumentError("tensor '" + t.name +
                                        "': data buffer size overflows");
    }
    layout.begin[i] = offset;
    header[t.name] = {{"dtype", std::string(*SafetensorsDTypeName(t.dtype))},
                      {"shape", t.dims},
                      {"data_offsets", {offset, *end}}};
    offset = *end;
  }
  layout.data_size = offset;
  if (!metadata.empty()) header["__metadata__"] = metadata;

  std::string text;
  try {
    text = header.dump();  // std::map storage: keys come out sorted
  } catch (const std::exception& e) {
    return absl::InternalError(std::string("header serialisation failed: ") +
                               e.what());
  }
  // Pad with spaces so the data buffer starts 8-byte aligned.
  text.append((8 - text.size() % 8) % 8, ' ');
  uint64_t n = text.size();
  layout.header.resize(8);
  for (int i = 0; i < 8; ++i)
    layout.header[i] = static_cast<char>(n >> (8 * i));
  layout.header += text;
  return layout;
}

absl::Status WriteSafetensorsFile(
    const std::string& path, const std::vector<ir::Tensor>& tensors,
    const std::map<std::string, std::string>& metadata) {
  auto layout = LayoutSafetensors(tensors, metadata);
  if (!layout.ok()) return Annotate(layout.status(), path);

  // Temporary file beside `path`, renamed over it only once complete.
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  RETURN_IF_ERROR(file->Write(layout->header.data(), layout->header.size()));
  for (size_t i : layout->order) {
    const ir::Tensor& t = tensors[i];
    absl::Status s = file->Write(t.data.data(), t.data.size());
    if (!s.ok()) return Annotate(s, "tensor '" + t.name + "'");
  }
  return file->Commit();
}

}  // namespace slimpack::safetensors

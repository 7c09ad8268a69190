#include "formats/safetensors/safetensors_reader.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "ir/shape.h"
#include "formats/safetensors/safetensors_dtype.h"
#include "support/strict_json.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace slimpack::safetensors {
namespace {

using nlohmann::json;

constexpr char kMetadataKey[] = "__metadata__";

// A validated header entry, before the tiling check.
struct Entry {
  ir::Tensor tensor;  // everything but data and provenance
  uint64_t begin = 0;
  uint64_t end = 0;
};

std::string Range(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

// A JSON non-negative integer. "-0" parses as a signed zero, so signed
// values >= 0 are accepted too; floats (even 4.0) are not.
std::optional<uint64_t> AsNonNegativeInt(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) {
    return static_cast<uint64_t>(v.get<int64_t>());
  }
  return std::nullopt;
}

// Checks the 8-byte prefix and returns the header text.
absl::StatusOr<std::string_view> HeaderText(const MappedFile& file) {
  const std::string& path = file.path();
  if (file.size() < 8) {
    return absl::OutOfRangeError(
        path + ": file is " + std::to_string(file.size()) +
        " bytes, too short for the 8-byte header length prefix");
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file.data()[i];  // little-endian
  if (n > kMaxHeaderBytes) {
    return absl::InvalidArgumentError(
        path + ": header length " + std::to_string(n) + " exceeds the " +
        std::to_string(kMaxHeaderBytes) + "-byte limit");
  }
  if (n > file.size() - 8) {
    return absl::OutOfRangeError(path + ": header length " + std::to_string(n) +
                                 " runs past end of file (needs " +
                                 std::to_string(8 + n) + " bytes, file has " +
                                 std::to_string(file.size()) + ")");
  }
  return std::string_view(reinterpret_cast<const char*>(file.data()) + 8, n);
}

absl::StatusOr<std::map<std::string, std::string>> ParseMetadata(
    const json& v, const std::string& path) {
  if (!v.is_object()) {
    return absl::InvalidArgumentError(
        path + ": __metadata__ must be an object of strings, found " +
        support::DescribeJson(v));
  }
  // A tensor entry under the reserved name: say so instead of complaining
  // about its non-string fields.
  if (v.contains("data_offsets")) {
    return absl::InvalidArgumentError(
        path +
        ": tensor named '__metadata__': the name is reserved for "
        "file metadata");
  }
  std::map<std::string, std::string> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!it->is_string()) {
      return absl::InvalidArgumentError(
          path + ": __metadata__ value for key '" + it.key() +
          "' must be a string, found " + support::DescribeJson(*it));
    }
    out[it.key()] = it->get<std::string>();
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ParseShape(const json& v,
                                                const std::string& ctx) {
  if (!v.is_array()) {
    return absl::InvalidArgumentError(
        ctx + " shape must be an array of non-negative integers, found " +
        support::DescribeJson(v));
  }
  std::vector<int64_t> dims;
  dims.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    auto d = AsNonNegativeInt(v[i]);
    if (!d || *d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return absl::InvalidArgumentError(
          ctx + " shape[" + std::to_string(i) +
          "] must be a non-negative integer below 2^63, found " +
          support::DescribeJson(v[i]));
    }
    dims.push_back(static_cast<int64_t>(*d));
  }
  return dims;
}

absl::StatusOr<std::pair<uint64_t, uint64_t>> ParseOffsets(
    const json& v, const std::string& ctx) {
  if (!v.is_array() || v.size() != 2) {
    std::string found = v.is_array() ? "an array of " + std::to_string(v.size())
                                     : support::DescribeJson(v);
    return absl::InvalidArgumentError(
        ctx + " data_offsets must be two non-negative integers, found " +
        found);
  }
  uint64_t r[2];
  for (size_t i = 0; i < 2; ++i) {
    auto x = AsNonNegativeInt(v[i]);
    if (!x) {
      return absl::InvalidArgumentError(
          ctx + " data_offsets[" + std::to_string(i) +
          "] must be a non-negative integer, found " + support::DescribeJson(v[i]));
    }
    r[i] = *x;
  }
  if (r[1] < r[0]) {
    return absl::InvalidArgumentError(
        ctx + " data_offsets " + Range(r[0], r[1]) + " end before they begin");
  }
  return std::make_pair(r[0], r[1]);
}

absl::StatusOr<ir::DType> ParseDTypeField(const json& v,
                                          const std::string& ctx) {
  if (!v.is_string()) {
    return absl::InvalidArgumentError(ctx + " dtype must be a string, found " +
                                      support::DescribeJson(v));
  }
  auto parsed = ParseSafetensorsDType(v.get_ref<const std::string&>());
  if (!parsed.ok()) return Annotate(parsed.status(), ctx);
  return *parsed;
}

// Checked byte size of dtype x dims.
absl::StatusOr<uint64_t> ByteSize(const ir::Tensor& t, const std::string& ctx) {
  const std::string shape = ir::Shape::FromDims(t.dims).ToString();
  auto numel = ir::CheckedNumElements(t.dims);
  if (!numel) {
    return absl::InvalidArgumentError(ctx + " shape " + shape +
                                      " has more than 2^64 elements");
  }
  auto nbytes = ir::DTypeByteSize(t.dtype, *numel);
  if (!nbytes) {
    return absl::InvalidArgumentError(ctx + " shape " + shape +
                                      " byte size overflows 64 bits");
  }
  return *nbytes;
}

absl::StatusOr<Entry> ParseEntry(const std::string& name, const json& v,
                                 uint64_t data_size, const std::string& path, bool fp8) {
  const std::string ctx = path + ": tensor '" + name + "'";
  if (name.empty()) {
    return absl::InvalidArgumentError(path + ": tensor with an empty name");
  }
  if (!v.is_object()) {
    return absl::InvalidArgumentError(
        ctx + " must be an object {dtype, shape, data_offsets}, found " +
        support::DescribeJson(v));
  }
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(field)) {
      return absl::InvalidArgumentError(ctx + " has no '" + field + "'");
    }
  }
  Entry e;
  e.tensor.name = name;
  if (fp8 && v["dtype"].is_string() && v["dtype"].get_ref<const std::string&>() == kF8E4M3) {
    // E4M3 bytes: u8 storage marked as FP8 codes whose scale the
    // checkpoint importer supplies (or refuses the tensor); see the header.
    e.tensor.dtype = ir::DType::kU8;
    e.tensor.quant.kind = ir::QuantKind::kFp8E4M3GroupWise;
  } else {
    ASSIGN_OR_RETURN(e.tensor.dtype, ParseDTypeField(v["dtype"], ctx));
  }
  ASSIGN_OR_RETURN(e.tensor.dims, ParseShape(v["shape"], ctx));
  ASSIGN_OR_RETURN(uint64_t nbytes, ByteSize(e.tensor, ctx));
  ASSIGN_OR_RETURN(auto offsets, ParseOffsets(v["data_offsets"], ctx));
  e.begin = offsets.first;
  e.end = offsets.second;
  const std::string range = " data_offsets " + Range(e.begin, e.end);
  if (e.end > data_size) {
    return absl::OutOfRangeError(ctx + range + " exceed data size " +
                                 std::to_string(data_size));
  }
  if (e.end - e.begin != nbytes) {
    return absl::InvalidArgumentError(
        ctx + range + " hold " + std::to_string(e.end - e.begin) +
        " bytes but " + v["dtype"].get<std::string>() + " " +
        ir::Shape::FromDims(e.tensor.dims).ToString() + " needs " +
        std::to_string(nbytes));
  }
  return e;
}

// Sorted by begin, the ranges must cover [0, data_size) exactly once: this
// rejects aliasing tensors and polyglot files that hide bytes in holes or
// after the last tensor.
absl::Status CheckTiling(std::vector<Entry>& entries, uint64_t data_size,
                         const std::string& path) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    if (a.end != b.end) return a.end < b.end;
    return a.tensor.name < b.tensor.name;
  });
  uint64_t covered = 0;
  const Entry* prev = nullptr;  // last non-empty tensor
  for (const Entry& e : entries) {
    const std::string ctx = path + ": tensor '" + e.tensor.name +
                            "' data_offsets " + Range(e.begin, e.end);
    if (e.begin < covered) {
      return absl::InvalidArgumentError(ctx + " overlap tensor '" +
                                        prev->tensor.name + "' " +
                                        Range(prev->begin, prev->end));
    }
    if (e.begin > covered) {
      return absl::InvalidArgumentError(
          ctx + " leave a hole of " + std::to_string(e.begin - covered) +
          " bytes at data offset " + std::to_string(covered));
    }
    if (e.end > e.begin) prev = &e;
    covered = e.end;
  }
  if (covered != data_size) {
    return absl::InvalidArgumentError(
        path + ": " + std::to_string(data_size - covered) +
        " trailing bytes after the last tensor (tensors end at data offset " +
        std::to_string(covered) + ", data size " + std::to_string(data_size) +
        ")");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SafetensorsFile> ReadSafetensors(
    std::shared_ptr<MappedFile> file, const ReadOptions& options) {
  const std::string& path = file->path();
  ASSIGN_OR_RETURN(std::string_view text, HeaderText(*file));
  SafetensorsFile out;
  out.path = path;
  out.header_length = text.size();
  out.data_start = 8 + text.size();
  const uint64_t data_size = file->size() - out.data_start;

  // The UTF-8 check comes first so the message names the real problem.
  if (auto bad = support::FindInvalidUtf8(text)) {
    return absl::InvalidArgumentError(
        path + ": header is not valid UTF-8 at header byte " +
        std::to_string(*bad) + " (file offset " + std::to_string(8 + *bad) +
        ")");
  }
  if (text.empty() || text[0] != '{') {
    std::string found =
        text.empty() ? "an empty header" : "'" + std::string(1, text[0]) + "'";
    return absl::InvalidArgumentError(
        path + ": header is not a JSON object: it must start with '{', found " +
        found);
  }
  ASSIGN_OR_RETURN(json header,
                   support::ParseStrictJson(text, path + ": header", kMaxHeaderDepth));

  std::vector<Entry> entries;
  entries.reserve(header.size());
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == kMetadataKey) {
      ASSIGN_OR_RETURN(out.metadata, ParseMetadata(*it, path));
      continue;
    }
    ASSIGN_OR_RETURN(Entry e, ParseEntry(it.key(), *it, data_size, path, options.fp8_codes));
    entries.push_back(std::move(e));
  }
  RETURN_IF_ERROR(CheckTiling(entries, data_size, path));

  const uint8_t* data = file->data() + out.data_start;
  out.tensors.reserve(entries.size());
  for (Entry& e : entries) {
    ir::Tensor t = std::move(e.tensor);
    t.data = ir::TensorData::View(file, data + e.begin, e.end - e.begin);
    t.provenance = ir::Provenance::FromFile(
        path, static_cast<int64_t>(out.data_start + e.begin));
    out.tensors.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<SafetensorsFile> ReadSafetensorsFile(const std::string& path,
                                                    const ReadOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(path));
  return ReadSafetensors(std::move(file), options);
}

}  // namespace slimpack::safetensors

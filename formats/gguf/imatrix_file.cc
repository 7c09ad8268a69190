#include "formats/gguf/imatrix_file.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "support/mapped_file.h"
#include "support/status_macros.h"

namespace slimpack::gguf {
namespace {

// Names in real files are GGUF tensor names (< 64 bytes); the cap only stops
// a corrupt length from reading a megabyte of garbage as a name.
constexpr int32_t kMaxNameBytes = 4096;

class Cursor {
 public:
  Cursor(const uint8_t* data, uint64_t size, const std::string& path)
      : data_(data), size_(size), path_(path) {}

  uint64_t offset() const { return pos_; }
  uint64_t left() const { return size_ - pos_; }

  absl::Status Int32(const std::string& what, int32_t& out) {
    if (left() < 4) return Truncated(what, 4);
    std::memcpy(&out, data_ + pos_, 4);
    pos_ += 4;
    return absl::OkStatus();
  }
  absl::Status Bytes(const std::string& what, uint64_t n, const uint8_t*& out) {
    if (left() < n) return Truncated(what, n);
    out = data_ + pos_;
    pos_ += n;
    return absl::OkStatus();
  }
  absl::Status Error(const std::string& message) const {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": imatrix file: ", message, " (at byte ", pos_, ")"));
  }

 private:
  absl::Status Truncated(const std::string& what, uint64_t n) const {
    return Error(absl::StrCat("truncated: ", what, " needs ", n, " bytes, ", left(), " left"));
  }
  const uint8_t* data_;
  uint64_t size_;
  std::string path_;
  uint64_t pos_ = 0;
};

}  // namespace

absl::StatusOr<ImatrixFile> ParseImatrix(const uint8_t* data, uint64_t size,
                                         const std::string& path) {
  if (size >= 4 && std::memcmp(data, "GGUF", 4) == 0) {
    return absl::UnimplementedError(absl::StrCat(
        path, ": this is a GGUF-container imatrix (newer llama.cpp); slimpack reads the "
              "binary .dat layout: write it with llama-imatrix --output-format dat"));
  }
  Cursor in(data, size, path);
  int32_t n_entries = 0;
  RETURN_IF_ERROR(in.Int32("entry count", n_entries));
  // Each entry takes at least 12 bytes plus a name and a value.
  if (n_entries < 1 || static_cast<uint64_t>(n_entries) > in.left() / 17) {
    return in.Error(absl::StrCat("entry count ", n_entries, " is impossible for a ", size,
                                 "-byte file (an imatrix holds at least one entry)"));
  }
  ImatrixFile file;
  for (int32_t i = 0; i < n_entries; ++i) {
    const std::string which = absl::StrCat("entry ", i + 1, " of ", n_entries);
    int32_t name_len = 0;
    RETURN_IF_ERROR(in.Int32(which + " name length", name_len));
    if (name_len < 1 || name_len > kMaxNameBytes) {
      return in.Error(absl::StrCat(which, ": name length ", name_len, " outside [1, ",
                                   kMaxNameBytes, "]"));
    }
    const uint8_t* name_bytes = nullptr;
    RETURN_IF_ERROR(in.Bytes(which + " name", static_cast<uint64_t>(name_len), name_bytes));
    std::string name(reinterpret_cast<const char*>(name_bytes), static_cast<size_t>(name_len));
    if (name.find('\0') != std::string::npos) {
      return in.Error(absl::StrCat(which, ": name contains a NUL byte"));
    }
    const std::string tensor = absl::StrCat(which, " ('", name, "')");
    int32_t ncall = 0, nval = 0;
    RETURN_IF_ERROR(in.Int32(tensor + " call count", ncall));
    RETURN_IF_ERROR(in.Int32(tensor + " value count", nval));
    if (ncall < 0) return in.Error(absl::StrCat(tensor, ": negative call count ", ncall));
    if (nval < 1) return in.Error(absl::StrCat(tensor, ": value count ", nval, " < 1"));
    const uint8_t* raw = nullptr;
    RETURN_IF_ERROR(in.Bytes(tensor + " values", 4ull * static_cast<uint64_t>(nval), raw));
    ImatrixEntry entry;
    entry.ncall = ncall;
    entry.values.resize(static_cast<size_t>(nval));
    std::memcpy(entry.values.data(), raw, 4ull * static_cast<uint64_t>(nval));
    for (int32_t j = 0; j < nval; ++j) {
      const float v = entry.values[static_cast<size_t>(j)];
      if (!std::isfinite(v) || v < 0) {
        return in.Error(absl::StrCat(tensor, ": value ", j, " is ", v,
                                     " (a sum of squares is finite and >= 0)"));
      }
    }
    if (!file.entries.emplace(name, std::move(entry)).second) {
      return in.Error(absl::StrCat(tensor, ": the name appears twice"));
    }
  }
  if (in.left() == 0) return file;
  // The trailer later llama-imatrix versions append: chunks and dataset.
  RETURN_IF_ERROR(in.Int32("chunk count", file.last_call));
  if (file.last_call < 0) return in.Error(absl::StrCat("negative chunk count ", file.last_call));
  int32_t dataset_len = 0;
  RETURN_IF_ERROR(in.Int32("dataset name length", dataset_len));
  if (dataset_len < 0 || dataset_len > kMaxNameBytes) {
    return in.Error(absl::StrCat("dataset name length ", dataset_len, " outside [0, ",
                                 kMaxNameBytes, "]"));
  }
  const uint8_t* dataset = nullptr;
  RETURN_IF_ERROR(in.Bytes("dataset name", static_cast<uint64_t>(dataset_len), dataset));
  file.dataset.assign(reinterpret_cast<const char*>(dataset), static_cast<size_t>(dataset_len));
  if (in.left() != 0) {
    return in.Error(absl::StrCat(in.left(), " bytes after the dataset name: not an imatrix "
                                            "layout this reader knows"));
  }
  return file;
}

absl::StatusOr<ImatrixFile> ReadImatrixFile(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> mapped, MappedFile::Open(path));
  return ParseImatrix(mapped->data(), mapped->size(), path);
}

std::string SerializeImatrix(const ImatrixFile& file) {
  std::string out;
  auto put32 = [&out](int32_t v) {
    uint8_t b[4];
    for (int i = 0; i < 4; ++i) b[i] = static_cast<uint8_t>(static_cast<uint32_t>(v) >> (8 * i));
    out.append(reinterpret_cast<const char*>(b), 4);
  };
  put32(static_cast<int32_t>(file.entries.size()));
  for (const auto& [name, entry] : file.entries) {
    put32(static_cast<int32_t>(name.size()));
    out += name;
    put32(entry.ncall);
    put32(static_cast<int32_t>(entry.values.size()));
    for (float v : entry.values) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      put32(static_cast<int32_t>(bits));
    }
  }
  put32(file.last_call);
  put32(static_cast<int32_t>(file.dataset.size()));
  out += file.dataset;
  return out;
}

std::vector<float> MeanSquares(const ImatrixEntry& entry) {
  std::vector<float> out = entry.values;
  if (entry.ncall > 0) {
    // Division, as llama-quantize does it, so importance matches its bits.
    for (float& v : out) v /= static_cast<float>(entry.ncall);
  }
  return out;
}

}  // namespace slimpack::gguf

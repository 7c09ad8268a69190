// External data keys, bounds checks and the per-file mmap cache.
#include "formats/onnx/external_data.h"

#include <fcntl.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "formats/onnx/safe_open.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

struct ExternalKeys {
  std::string location;
  std::optional<std::string> offset;
  std::optional<std::string> length;
  std::optional<std::string> checksum;
};

absl::StatusOr<ExternalKeys> ReadKeys(const onnx::TensorProto& tensor) {
  ExternalKeys keys;
  bool has_location = false;
  auto take = [](const std::string& key, const std::string& value,
                 std::optional<std::string>* slot) -> absl::Status {
    if (slot->has_value()) {
      return absl::InvalidArgumentError("external_data key '" + key +
                                        "' appears twice");
    }
    *slot = value;
    return absl::OkStatus();
  };
  for (const auto& entry : tensor.external_data()) {
    const std::string& key = entry.key();
    if (key == "location") {
      if (has_location) {
        return absl::InvalidArgumentError(
            "external_data key 'location' appears twice");
      }
      has_location = true;
      keys.location = entry.value();
    } else if (key == "offset") {
      RETURN_IF_ERROR(take(key, entry.value(), &keys.offset));
    } else if (key == "length") {
      RETURN_IF_ERROR(take(key, entry.value(), &keys.length));
    } else if (key == "checksum") {
      RETURN_IF_ERROR(take(key, entry.value(), &keys.checksum));
    }
    // Unknown keys are ignored: they carry no meaning we could act on.
  }
  if (!has_location) {
    return absl::InvalidArgumentError(
        "data_location is EXTERNAL but external_data has no 'location' key");
  }
  return keys;
}

// ONNX stores offsets and lengths as decimal strings. Only plain digits are
// accepted: a sign, spaces or hex would be read differently by other tools.
absl::StatusOr<uint64_t> ParseByteCount(const std::string& key,
                                        const std::string& text) {
  if (!text.empty() && text[0] == '-') {
    return absl::InvalidArgumentError("external data " + key + " '" + text +
                                      "' is negative");
  }
  if (text.empty()) {
    return absl::InvalidArgumentError("external data " + key +
                                      " is empty; expected a decimal integer");
  }
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') {
      return absl::InvalidArgumentError(
          "external data " + key + " '" + text +
          "' is not a non-negative decimal integer");
    }
    auto times_ten = CheckedMul(value, 10);
    auto next = times_ten ? CheckedAdd(*times_ten, c - '0') : std::nullopt;
    if (!next || *next > static_cast<uint64_t>(INT64_MAX)) {
      return absl::OutOfRangeError("external data " + key + " '" + text +
                                   "' exceeds the largest possible file size");
    }
    value = *next;
  }
  return value;
}

bool IsSha1Hex(const std::string& s) {
  if (s.size() != 2 * SHA_DIGEST_LENGTH) return false;
  for (char c : s) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
               (c >= 'A' && c <= 'F');
    if (!hex) return false;
  }
  return true;
}

std::string ToLowerAscii(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

}  // namespace

ExternalDataResolver::ExternalDataResolver(const std::string& model_path,
                                           bool verify_checksums)
    : verify_checksums_(verify_checksums) {
  size_t slash = model_path.rfind('/');
  if (slash == std::string::npos) {
    model_dir_ = ".";
  } else if (slash == 0) {
    model_dir_ = "/";
    display_prefix_ = "/";
  } else {
    model_dir_ = model_path.substr(0, slash);
    display_prefix_ = model_dir_ + "/";
  }
}

ExternalDataResolver::~ExternalDataResolver() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

absl::StatusOr<ExternalDataResolver::OpenedFile*>
ExternalDataResolver::OpenFile(const std::string& location) {
  std::string key = NormalizeRelativeLocation(location);
  auto it = opened_.find(key);
  if (it != opened_.end()) return &it->second;
  if (dir_fd_ < 0) {
    dir_fd_ = ::open(model_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd_ < 0) {
      int err = errno;
      std::string msg =
          "cannot open model directory '" + model_dir_ + "': " +
          std::strerror(err);
      if (err == ENOENT) return absl::NotFoundError(msg);
      if (err == EACCES) return absl::PermissionDeniedError(msg);
      return absl::InvalidArgumentError(msg);
    }
  }
  ASSIGN_OR_RETURN(int fd, OpenBeneath(dir_fd_, location));
  std::string display = display_prefix_ + key;
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> mapping,
                   MappedFile::FromFd(fd, display));
  OpenedFile& file = opened_[key];
  file.mapping = std::move(mapping);
  file.display_path = display;
  files_.push_back(display);
  return &file;
}

absl::Status ExternalDataResolver::VerifyChecksum(OpenedFile& file,
                                                  const std::string& expected) {
  if (!IsSha1Hex(expected)) {
    return absl::InvalidArgumentError("external data checksum '" + expected +
                                      "' is not a 40-digit SHA-1 hex digest");
  }
  if (file.sha1_hex.empty()) {
    static const unsigned char kEmpty[1] = {0};
    unsigned char digest[SHA_DIGEST_LENGTH];
    const unsigned char* data =
        file.mapping->size() ? file.mapping->data() : kEmpty;
    SHA1(data, file.mapping->size(), digest);
    static const char kHex[] = "0123456789abcdef";
    for (unsigned char b : digest) {
      file.sha1_hex += kHex[b >> 4];
      file.sha1_hex += kHex[b & 15];
    }
  }
  if (file.sha1_hex != ToLowerAscii(expected)) {
    return absl::DataLossError("external data file '" + file.display_path +
                               "' has SHA-1 " + file.sha1_hex +
                               " but external_data checksum is " + expected);
  }
  return absl::OkStatus();
}

absl::StatusOr<ExternalSlice> ExternalDataResolver::Resolve(
    const onnx::TensorProto& tensor, uint64_t expected_bytes) {
  ASSIGN_OR_RETURN(ExternalKeys keys, ReadKeys(tensor));
  RETURN_IF_ERROR(ValidateRelativeLocation(keys.location));
  uint64_t offset = 0;
  if (keys.offset) {
    ASSIGN_OR_RETURN(offset, ParseByteCount("offset", *keys.offset));
  }
  uint64_t length = expected_bytes;
  if (keys.length) {
    ASSIGN_OR_RETURN(length, ParseByteCount("length", *keys.length));
    if (length != expected_bytes) {
      return absl::InvalidArgumentError(
          "external data length " + std::to_string(length) +
          " does not match the " + std::to_string(expected_bytes) +
          " bytes its data type and shape need");
    }
  }
  ASSIGN_OR_RETURN(OpenedFile * file, OpenFile(keys.location));
  uint64_t file_size = file->mapping->size();
  auto end = CheckedAdd(offset, length);
  if (!end || *end > file_size) {
    return absl::OutOfRangeError(
        "external data file '" + file->display_path + "' is " +
        std::to_string(file_size) + " bytes; offset " +
        std::to_string(offset) + " + length " + std::to_string(length) +
        " is past its end");
  }
  if (keys.checksum && verify_checksums_) {
    RETURN_IF_ERROR(VerifyChecksum(*file, *keys.checksum));
  }
  ExternalSlice slice;
  slice.file = file->display_path;
  slice.offset = offset;
  if (length == 0) {
    slice.data = ir::TensorData::Owned({});
  } else {
    slice.data = ir::TensorData::View(file->mapping,
                                      file->mapping->data() + offset, length);
  }
  return slice;
}

}  // namespace slimpack::onnx_format

#include "formats/import.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "absl/strings/match.h"
#include "ir/verifier.h"
#include "formats/gguf/gguf_import.h"
#include "formats/onnx/onnx_importer.h"
#include "formats/safetensors/checkpoint_importer.h"
#include "support/status_macros.h"

namespace slimpack::formats {
namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

constexpr char kSupported[] =
    "supported inputs: an ONNX model (.onnx), a safetensors file "
    "(.safetensors), a sharded index (model.safetensors.index.json), a GGUF "
    "file (.gguf) or a "
    "directory holding a Hugging Face checkpoint";

// The first `n` bytes of a regular file (fewer if it is shorter; "" if it
// cannot be read), read once for every format sniffed below. O_NONBLOCK so
// a FIFO is never waited on.
std::string ReadHead(const std::string& path, size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  std::string head(n, '\0');
  struct stat st;
  ssize_t got = -1;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) got = ::pread(fd, head.data(), n, 0);
  ::close(fd);
  head.resize(got > 0 ? static_cast<size_t>(got) : 0);
  return head;
}

// Safetensors starts with an 8-byte little-endian header length followed
// by '{'.
bool LooksLikeSafetensors(const std::string& head) {
  return head.size() >= 9 && head[8] == '{';
}

}  // namespace

absl::StatusOr<InputKind> DetectInputKind(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(path + ": no such file or directory");
  }
  if (S_ISDIR(st.st_mode)) {
    if (Exists(path + "/model.safetensors.index.json") ||
        Exists(path + "/model.safetensors")) {
      return InputKind::kSafetensors;
    }
    if (Exists(path + "/model.onnx")) return InputKind::kOnnx;
    return absl::UnimplementedError(
        path + ": directory holds no model.safetensors, "
               "model.safetensors.index.json or model.onnx; " +
        std::string(kSupported));
  }
  if (absl::EndsWith(path, ".onnx")) return InputKind::kOnnx;
  if (absl::EndsWith(path, ".gguf")) return InputKind::kGguf;
  const std::string head = ReadHead(path, 9);
  if (gguf::HasGgufMagic(head)) return InputKind::kGguf;
  if (absl::EndsWith(path, ".safetensors") || absl::EndsWith(path, ".index.json")) {
    return InputKind::kSafetensors;
  }
  if (LooksLikeSafetensors(head)) return InputKind::kSafetensors;
  return absl::UnimplementedError(path + ": unrecognised input; " +
                                  std::string(kSupported));
}

absl::StatusOr<ir::Model> ImportModel(const std::string& path, int threads) {
  ASSIGN_OR_RETURN(InputKind kind, DetectInputKind(path));
  std::string onnx_path = path;
  struct stat st;
  if (kind == InputKind::kOnnx && ::stat(path.c_str(), &st) == 0 &&
      S_ISDIR(st.st_mode)) {
    onnx_path = path + "/model.onnx";
  }
  ir::Model model;
  if (kind == InputKind::kOnnx) {
    ASSIGN_OR_RETURN(model, onnx_format::ImportOnnx(onnx_path));
  } else if (kind == InputKind::kGguf) {
    ASSIGN_OR_RETURN(model, gguf::ImportGguf(path, threads));
  } else {
    ASSIGN_OR_RETURN(model, safetensors::ImportSafetensors(path));
  }
  RETURN_IF_ERROR(ir::VerifyModel(model));
  return model;
}

}  // namespace slimpack::formats

#include "formats/import.h"

#include <sys/stat.h>

#include <cstdio>
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

// Sniffs the first bytes: safetensors starts with an 8-byte little-endian
// header length followed by '{'.
bool LooksLikeSafetensors(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  unsigned char buf[9] = {0};
  size_t n = std::fread(buf, 1, sizeof(buf), f);
  std::fclose(f);
  return n == 9 && buf[8] == '{';
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
  if (absl::EndsWith(path, ".gguf") || gguf::LooksLikeGguf(path)) return InputKind::kGguf;
  if (absl::EndsWith(path, ".safetensors") || absl::EndsWith(path, ".index.json")) {
    return InputKind::kSafetensors;
  }
  if (LooksLikeSafetensors(path)) return InputKind::kSafetensors;
  return absl::UnimplementedError(path + ": unrecognised input; " +
                                  std::string(kSupported));
}

absl::StatusOr<ir::Model> ImportModel(const std::string& path) {
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
    ASSIGN_OR_RETURN(model, gguf::ImportGguf(path));
  } else {
    ASSIGN_OR_RETURN(model, safetensors::ImportSafetensors(path));
  }
  RETURN_IF_ERROR(ir::VerifyModel(model));
  return model;
}

}  // namespace slimpack::formats

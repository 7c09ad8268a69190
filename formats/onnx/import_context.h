// State shared by the pieces of one ONNX import: the file name for errors,
// the owner that keeps raw_data views alive, the external data resolver and
// the warning list.
#ifndef SLIMPACK_FORMATS_ONNX_IMPORT_CONTEXT_H_
#define SLIMPACK_FORMATS_ONNX_IMPORT_CONTEXT_H_

#include <memory>
#include <string>
#include <vector>

namespace slimpack::onnx_format {

class ExternalDataResolver;

struct ImportContext {
  std::string model_path;
  // The parsed ModelProto; TensorData views into raw_data hold a reference.
  std::shared_ptr<const void> proto_owner;
  // Resolves data_location=EXTERNAL tensors; null means external data is an
  // error (used by tests of embedded-only conversion).
  ExternalDataResolver* external_data = nullptr;
  std::vector<std::string>* warnings = nullptr;
};

}  // namespace slimpack::onnx_format

#endif  // SLIMPACK_FORMATS_ONNX_IMPORT_CONTEXT_H_

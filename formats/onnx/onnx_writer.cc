// ExportOnnx: IR -> ModelProto, external data decision, atomic writes.
#include "formats/onnx/onnx_writer.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <memory>

#include "ir/verifier.h"
#include "formats/onnx/external_data_writer.h"
#include "formats/onnx/graph_to_proto.h"
#include "formats/onnx/tensor_to_proto.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "onnx/onnx_pb.h"
#include "support/atomic_file.h"
#include "support/status_macros.h"

namespace slimpack::onnx_format {
namespace {

// IR version 4 is the first that allows initializers that are not graph
// inputs, which Constant-node weights become; older models are bumped.
constexpr int64_t kMinWrittenIrVersion = 4;
constexpr int64_t kWrittenOpsetIfMissing = 17;

struct OutputPaths {
  std::string dir_prefix;  // "" or "<dir>/"
  std::string data_name;   // external data file name
};

absl::StatusOr<OutputPaths> ResolveOutputPaths(
    const std::string& path, const OnnxExportOptions& options) {
  OutputPaths out;
  size_t slash = path.rfind('/');
  std::string file = slash == std::string::npos ? path : path.substr(slash + 1);
  if (slash != std::string::npos) out.dir_prefix = path.substr(0, slash + 1);
  if (file.empty()) {
    return absl::InvalidArgumentError(path + ": output path names no file");
  }
  if (options.external_data_file.empty()) {
    size_t dot = file.rfind('.');
    std::string stem = dot == std::string::npos || dot == 0
                           ? file
                           : file.substr(0, dot);
    out.data_name = stem + ".data";
  } else {
    out.data_name = options.external_data_file;
  }
  const std::string& d = out.data_name;
  if (d.empty() || d == "." || d == ".." ||
      d.find('/') != std::string::npos || d.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(
        path + ": external data file name '" + d +
        "' must be a plain file name beside the model");
  }
  if (d == file) {
    return absl::InvalidArgumentError(
        path + ": external data file name is the model file itself");
  }
  return out;
}

void FillModelFields(const ir::Model& model, onnx::ModelProto* proto) {
  // IR built from another format has no IR version: write the newest one
  // this ONNX release knows.
  proto->set_ir_version(model.ir_version == 0
                            ? static_cast<int64_t>(onnx::IR_VERSION)
                            : std::max(model.ir_version, kMinWrittenIrVersion));
  if (!model.producer_name.empty()) {
    proto->set_producer_name(model.producer_name);
  }
  if (!model.producer_version.empty()) {
    proto->set_producer_version(model.producer_version);
  }
  if (!model.model_domain.empty()) proto->set_domain(model.model_domain);
  if (model.model_version != 0) proto->set_model_version(model.model_version);
  if (!model.doc_string.empty()) proto->set_doc_string(model.doc_string);
  for (const auto& [domain, version] : model.opset_imports) {
    auto* opset = proto->add_opset_import();
    opset->set_domain(domain);
    opset->set_version(version);
  }
  if (!model.opset_imports.count("")) {
    auto* opset = proto->add_opset_import();
    opset->set_domain("");
    opset->set_version(kWrittenOpsetIfMissing);
  }
  for (const auto& [key, value] : model.metadata_props) {
    auto* prop = proto->add_metadata_props();
    prop->set_key(key);
    prop->set_value(value);
  }
}

absl::Status WriteModelFile(const onnx::ModelProto& proto,
                            const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  {
    google::protobuf::io::FileOutputStream out(file->fd());
    bool ok = proto.SerializeToZeroCopyStream(&out);
    ok = out.Flush() && ok;
    if (!ok) {
      int err = out.GetErrno() != 0 ? out.GetErrno() : EIO;
      return ErrnoToStatus(err, path + ": writing model");
    }
  }
  return file->Commit();
}

}  // namespace

absl::Status ExportOnnx(const ir::Model& model, const std::string& path,
                        const OnnxExportOptions& options) {
  absl::Status verified = ir::VerifyModel(model);
  if (!verified.ok()) {
    return Annotate(verified, path + ": refusing to export an invalid model");
  }
  ASSIGN_OR_RETURN(OutputPaths paths, ResolveOutputPaths(path, options));
  const uint64_t tensor_bytes = TotalTensorBytes(model.graph);
  const bool external = options.use_external_data ||
                        tensor_bytes > options.max_embedded_tensor_bytes;
  ExternalDataWriter data(paths.data_name);
  TensorPlacement placement;
  placement.external = external ? &data : nullptr;
  placement.threshold = options.external_data_threshold;
  placement.float8_e4m3fn = &options.float8_e4m3fn;

  onnx::ModelProto proto;
  FillModelFields(model, &proto);
  RETURN_IF_ERROR(
      Annotate(GraphToProto(model.graph, placement, proto.mutable_graph()),
               path));
  if (proto.graph().name().empty()) proto.mutable_graph()->set_name("main");
  const size_t proto_bytes = proto.ByteSizeLong();
  if (proto_bytes > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        path + ": the model would serialize to " +
        std::to_string(proto_bytes) +
        " bytes, over protobuf's 2 GiB limit; " +
        (external ? "lower external_data_threshold"
                  : "enable use_external_data"));
  }
  // The data file goes first: a model file is never renamed into place
  // before the data it points to exists.
  if (!data.empty()) {
    RETURN_IF_ERROR(data.WriteFile(paths.dir_prefix + paths.data_name));
  }
  return WriteModelFile(proto, path);
}

}  // namespace slimpack::onnx_format

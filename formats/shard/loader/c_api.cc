// The C API over Artifact. Every entry point catches everything (including
// std::bad_alloc) so no C++ exception crosses into C, JNI or Swift frames.
#include <new>
#include <string>

#include "formats/shard/loader/artifact.h"
#include "formats/shard/loader/slimpack_loader.h"

struct slimpack_artifact {
  std::unique_ptr<slimpack::loader::Artifact> impl;
};

struct slimpack_tensor_view {
  slimpack::loader::TensorView view;
};

namespace {

// The C layout codes are the LayoutKind values (slimpack_tensor_info.layout).
using slimpack::shard::LayoutKind;
static_assert(SLIMPACK_LAYOUT_PLAIN == static_cast<int>(LayoutKind::kPlain));
static_assert(SLIMPACK_LAYOUT_INT8_PER_CHANNEL == static_cast<int>(LayoutKind::kInt8PerChannel));
static_assert(SLIMPACK_LAYOUT_INT4_GROUPWISE == static_cast<int>(LayoutKind::kInt4GroupWise));
static_assert(SLIMPACK_LAYOUT_SPARSE_2_4 == static_cast<int>(LayoutKind::kSparse2of4));
static_assert(SLIMPACK_LAYOUT_INT8_GROUPWISE == static_cast<int>(LayoutKind::kInt8GroupWise));
static_assert(SLIMPACK_LAYOUT_GGML_BLOCKS == static_cast<int>(LayoutKind::kGgmlBlocks));
static_assert(SLIMPACK_LAYOUT_FP8_E4M3_GROUPWISE ==
              static_cast<int>(LayoutKind::kFp8E4M3GroupWise));

using slimpack::loader::Artifact;
using slimpack::loader::Status;
using slimpack::loader::StatusCode;

thread_local std::string g_last_error;

slimpack_status Report(const Status& s) {
  if (s.ok()) {
    g_last_error.clear();
    return SLIMPACK_OK;
  }
  g_last_error = s.message();
  return static_cast<slimpack_status>(s.code());
}

slimpack_status ReportMessage(slimpack_status code, const char* message) {
  g_last_error = message;
  return code;
}

// Runs `fn` (returning slimpack_status), turning exceptions into errors.
template <typename Fn>
slimpack_status Guard(Fn&& fn) {
#if defined(__cpp_exceptions)
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return ReportMessage(SLIMPACK_RESOURCE_EXHAUSTED, "out of memory");
  } catch (...) {
    return ReportMessage(SLIMPACK_INTERNAL, "internal error (exception)");
  }
#else
  return fn();
#endif
}

}  // namespace

extern "C" {

void slimpack_open_options_init(slimpack_open_options* options) {
  if (options == nullptr) return;
  options->memory_budget_bytes = 0;
  options->advice = SLIMPACK_ADVICE_NORMAL;
  options->check_manifest_hash = 1;
}

const char* slimpack_last_error_message(void) { return g_last_error.c_str(); }

const char* slimpack_status_name(slimpack_status status) {
  return slimpack::loader::StatusCodeName(static_cast<StatusCode>(status));
}

const char* slimpack_dtype_name(int32_t dtype) {
  // String views in kDTypes point at literals, so data() is NUL-terminated.
  for (const auto& e : slimpack::shard::kDTypes) {
    if (static_cast<int32_t>(e.dtype) == dtype) return e.name.data();
  }
  return "undefined";
}

slimpack_status slimpack_artifact_open(const char* dir,
                                       const slimpack_open_options* options,
                                       slimpack_artifact** out) {
  if (dir == nullptr || out == nullptr) {
    return ReportMessage(SLIMPACK_INVALID_ARGUMENT, "dir and out must not be NULL");
  }
  *out = nullptr;
  return Guard([&]() -> slimpack_status {
    slimpack::loader::OpenOptions opts;
    if (options != nullptr) {
      if (options->advice < SLIMPACK_ADVICE_NORMAL ||
          options->advice > SLIMPACK_ADVICE_WILLNEED) {
        return ReportMessage(SLIMPACK_INVALID_ARGUMENT, "unknown advice value");
      }
      opts.memory_budget_bytes = options->memory_budget_bytes;
      opts.advice = static_cast<slimpack::loader::AccessAdvice>(options->advice);
      opts.check_manifest_hash = options->check_manifest_hash != 0;
    }
    auto opened = Artifact::Open(dir, opts);
    if (!opened.ok()) return Report(opened.status());
    *out = new slimpack_artifact{std::move(opened).value()};
    return Report(Status());
  });
}

void slimpack_artifact_close(slimpack_artifact* artifact) { delete artifact; }

uint64_t slimpack_artifact_tensor_count(const slimpack_artifact* artifact) {
  return artifact == nullptr ? 0 : artifact->impl->num_tensors();
}

slimpack_status slimpack_artifact_find_tensor(const slimpack_artifact* artifact,
                                              const char* name, uint64_t* index) {
  if (artifact == nullptr || name == nullptr || index == nullptr) {
    return ReportMessage(SLIMPACK_INVALID_ARGUMENT, "NULL argument");
  }
  return Guard([&]() -> slimpack_status {
    const int32_t i = artifact->impl->manifest().FindTensor(name);
    if (i < 0) {
      return Report(slimpack::loader::NotFoundError(
          artifact->impl->dir() + ": no tensor named '" + name + "'"));
    }
    *index = static_cast<uint64_t>(i);
    return Report(Status());
  });
}

slimpack_status slimpack_artifact_tensor_info(const slimpack_artifact* artifact,
                                              uint64_t index,
                                              slimpack_tensor_info* out) {
  if (artifact == nullptr || out == nullptr) {
    return ReportMessage(SLIMPACK_INVALID_ARGUMENT, "NULL argument");
  }
  if (index >= artifact->impl->num_tensors()) {
    return ReportMessage(SLIMPACK_OUT_OF_RANGE, "tensor index out of range");
  }
  const auto& t = artifact->impl->tensor(static_cast<size_t>(index));
  out->name = t.name.c_str();
  out->dtype = static_cast<int32_t>(t.dtype);
  out->layout = static_cast<int32_t>(t.layout.kind);
  out->rank = static_cast<uint32_t>(t.shape.size());
  out->shape = t.shape.data();
  out->numel = t.numel;
  out->shard = t.shard;
  out->offset = t.offset;
  out->nbytes = t.nbytes;
  out->axis = t.layout.axis;
  out->group_size = t.layout.group_size;
  out->scale_index = t.layout.scale;
  out->zero_point_index = t.layout.zero_point;
  out->layer = t.layer;
  return Report(Status());
}

uint64_t slimpack_artifact_tensor_block_rows(const slimpack_artifact* artifact, uint64_t index) {
  if (artifact == nullptr || index >= artifact->impl->num_tensors()) return 0;
  return artifact->impl->tensor(static_cast<size_t>(index)).layout.block_rows;
}

const char* slimpack_artifact_tensor_block_type(const slimpack_artifact* artifact,
                                                uint64_t index) {
  if (artifact == nullptr || index >= artifact->impl->num_tensors()) return nullptr;
  const auto& t = artifact->impl->tensor(static_cast<size_t>(index));
  if (t.layout.kind != LayoutKind::kGgmlBlocks) return nullptr;
  const slimpack::shard::GgmlBlockType* type =
      slimpack::shard::FindGgmlBlockType(t.layout.block_type);
  // The names are string literals in format.h: static storage, NUL-terminated.
  return type ? type->name.data() : nullptr;
}

slimpack_status slimpack_artifact_map_tensor(slimpack_artifact* artifact,
                                             uint64_t index,
                                             slimpack_tensor_view** out) {
  if (artifact == nullptr || out == nullptr) {
    return ReportMessage(SLIMPACK_INVALID_ARGUMENT, "NULL argument");
  }
  *out = nullptr;
  return Guard([&]() -> slimpack_status {
    auto view = artifact->impl->GetTensor(static_cast<size_t>(index));
    if (!view.ok()) return Report(view.status());
    *out = new slimpack_tensor_view{std::move(view).value()};
    return Report(Status());
  });
}

const void* slimpack_tensor_view_data(const slimpack_tensor_view* view) {
  return view == nullptr ? nullptr : view->view.data();
}

uint64_t slimpack_tensor_view_size(const slimpack_tensor_view* view) {
  return view == nullptr ? 0 : view->view.size();
}

void slimpack_tensor_view_release(slimpack_tensor_view* view) { delete view; }

slimpack_status slimpack_artifact_dequantize_f32(slimpack_artifact* artifact,
                                                 uint64_t index, float* out,
                                                 uint64_t out_count) {
  if (artifact == nullptr || (out == nullptr && out_count > 0)) {
    return ReportMessage(SLIMPACK_INVALID_ARGUMENT, "NULL argument");
  }
  if (index >= artifact->impl->num_tensors()) {
    return ReportMessage(SLIMPACK_OUT_OF_RANGE, "tensor index out of range");
  }
  return Guard([&]() -> slimpack_status {
    const auto& t = artifact->impl->tensor(static_cast<size_t>(index));
    return Report(artifact->impl->DequantizeToF32(t.name, out, out_count));
  });
}

slimpack_status slimpack_artifact_expand_sparse(slimpack_artifact* artifact,
                                                uint64_t index, void* out,
                                                uint64_t out_bytes) {
  if (artifact == nullptr || (out == nullptr && out_bytes > 0)) {
    return ReportMessage(SLIMPACK_INVALID_ARGUMENT, "NULL argument");
  }
  if (index >= artifact->impl->num_tensors()) {
    return ReportMessage(SLIMPACK_OUT_OF_RANGE, "tensor index out of range");
  }
  return Guard([&]() -> slimpack_status {
    const auto& t = artifact->impl->tensor(static_cast<size_t>(index));
    return Report(artifact->impl->ExpandSparse(t.name, out, out_bytes));
  });
}

slimpack_status slimpack_artifact_verify(const slimpack_artifact* artifact) {
  if (artifact == nullptr) return ReportMessage(SLIMPACK_INVALID_ARGUMENT, "NULL argument");
  return Guard([&]() -> slimpack_status { return Report(artifact->impl->Verify()); });
}

uint64_t slimpack_artifact_carried_file_count(const slimpack_artifact* artifact) {
  return artifact == nullptr ? 0 : artifact->impl->manifest().carried_files.size();
}

const char* slimpack_artifact_carried_file_name(const slimpack_artifact* artifact,
                                                uint64_t index) {
  if (artifact == nullptr) return nullptr;
  const auto& files = artifact->impl->manifest().carried_files;
  return index < files.size() ? files[static_cast<size_t>(index)].file.c_str() : nullptr;
}

}  // extern "C"

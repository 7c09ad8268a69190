#include "formats/gguf/gguf_writer.h"

#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "support/atomic_file.h"
#include "support/checked_math.h"
#include "support/status_macros.h"

namespace slimpack::gguf {
namespace {

template <typename T>
void AppendPod(std::string& out, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));  // little-endian hosts only (x86-64, arm64)
  out.append(bytes, sizeof(T));
}

void AppendString(std::string& out, const std::string& s) {
  AppendPod<uint64_t>(out, s.size());
  out.append(s);
}

}  // namespace

GgufWriter::GgufWriter(uint64_t alignment) : alignment_(alignment) {}

void GgufWriter::AddKey(const std::string& key, ValueType type) {
  keys_.push_back(key);
  ++kv_count_;
  AppendString(kv_bytes_, key);
  AppendPod<uint32_t>(kv_bytes_, static_cast<uint32_t>(type));
}

void GgufWriter::AddU32(const std::string& key, uint32_t v) {
  AddKey(key, ValueType::kU32);
  AppendPod(kv_bytes_, v);
}
void GgufWriter::AddI32(const std::string& key, int32_t v) {
  AddKey(key, ValueType::kI32);
  AppendPod(kv_bytes_, v);
}
void GgufWriter::AddU64(const std::string& key, uint64_t v) {
  AddKey(key, ValueType::kU64);
  AppendPod(kv_bytes_, v);
}
void GgufWriter::AddI64(const std::string& key, int64_t v) {
  AddKey(key, ValueType::kI64);
  AppendPod(kv_bytes_, v);
}
void GgufWriter::AddF32(const std::string& key, float v) {
  AddKey(key, ValueType::kF32);
  AppendPod(kv_bytes_, v);
}
void GgufWriter::AddBool(const std::string& key, bool v) {
  AddKey(key, ValueType::kBool);
  AppendPod<uint8_t>(kv_bytes_, v ? 1 : 0);
}
void GgufWriter::AddString(const std::string& key, const std::string& v) {
  AddKey(key, ValueType::kString);
  AppendString(kv_bytes_, v);
}
void GgufWriter::AddStringArray(const std::string& key, const std::vector<std::string>& v) {
  AddKey(key, ValueType::kArray);
  AppendPod<uint32_t>(kv_bytes_, static_cast<uint32_t>(ValueType::kString));
  AppendPod<uint64_t>(kv_bytes_, v.size());
  for (const std::string& s : v) AppendString(kv_bytes_, s);
}
void GgufWriter::AddI32Array(const std::string& key, const std::vector<int32_t>& v) {
  AddKey(key, ValueType::kArray);
  AppendPod<uint32_t>(kv_bytes_, static_cast<uint32_t>(ValueType::kI32));
  AppendPod<uint64_t>(kv_bytes_, v.size());
  for (int32_t x : v) AppendPod(kv_bytes_, x);
}
void GgufWriter::AddF32Array(const std::string& key, const std::vector<float>& v) {
  AddKey(key, ValueType::kArray);
  AppendPod<uint32_t>(kv_bytes_, static_cast<uint32_t>(ValueType::kF32));
  AppendPod<uint64_t>(kv_bytes_, v.size());
  for (float x : v) AppendPod(kv_bytes_, x);
}

void GgufWriter::AddDeferredF32Array(const std::string& key, uint64_t count,
                                     std::function<std::vector<float>()> values) {
  AddKey(key, ValueType::kArray);
  AppendPod<uint32_t>(kv_bytes_, static_cast<uint32_t>(ValueType::kF32));
  AppendPod<uint64_t>(kv_bytes_, count);
  deferred_.push_back(Deferred{key, kv_bytes_.size(), count, std::move(values)});
  kv_bytes_.append(count * sizeof(float), '\0');
}

absl::Status GgufWriter::FillDeferred(const Deferred& d, std::vector<float>* values) const {
  *values = d.values();
  if (values->size() != d.count) {
    return absl::InternalError(absl::StrCat("GGUF metadata '", d.key, "': ", values->size(),
                                            " values for the ", d.count, " reserved"));
  }
  return absl::OkStatus();
}

void GgufWriter::AddEncoded(const std::string& key, ValueType type,
                            const std::string& value_bytes) {
  AddKey(key, type);
  kv_bytes_.append(value_bytes);
}

absl::StatusOr<uint64_t> GgufWriter::TensorBytes(const std::string& name,
                                                 const std::vector<int64_t>& ne,
                                                 TensorType type) {
  TypeTraits traits;
  if (!GetTypeTraits(static_cast<uint32_t>(type), &traits)) {
    return absl::InvalidArgumentError(absl::StrCat("GGUF tensor '", name, "': unknown ggml type ",
                                                   static_cast<uint32_t>(type)));
  }
  if (ne.empty() || ne.size() > kMaxDims) {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF tensor '", name, "': ", ne.size(), " dimensions (1 to ", kMaxDims, ")"));
  }
  uint64_t count = 1;
  for (int64_t d : ne) {
    std::optional<uint64_t> next;
    if (d > 0) next = CheckedMul(count, static_cast<uint64_t>(d));
    if (!next) {
      return absl::InvalidArgumentError(
          absl::StrCat("GGUF tensor '", name, "': dimension ", d, " is not a positive size"));
    }
    count = *next;
  }
  if (ne[0] % traits.block_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GGUF tensor '", name, "': row length ", ne[0], " is not a multiple of ",
                     std::string(traits.name), "'s block of ", traits.block_size));
  }
  const std::optional<uint64_t> bytes = CheckedMul(count / traits.block_size, traits.block_bytes);
  if (!bytes) return absl::InvalidArgumentError(absl::StrCat("GGUF tensor '", name, "' is too large"));
  return *bytes;
}

absl::Status GgufWriter::AddTensor(const std::string& name, const std::vector<int64_t>& ne,
                                   TensorType type, TensorFiller fill) {
  ASSIGN_OR_RETURN(const uint64_t bytes, TensorBytes(name, ne, type));
  tensors_.push_back(PendingTensor{name, ne, type, bytes, 0, std::move(fill), nullptr});
  return absl::OkStatus();
}

absl::Status GgufWriter::AddTensorStreamed(const std::string& name,
                                           const std::vector<int64_t>& ne, TensorType type,
                                           TensorStreamer stream) {
  ASSIGN_OR_RETURN(const uint64_t bytes, TensorBytes(name, ne, type));
  tensors_.push_back(PendingTensor{name, ne, type, bytes, 0, nullptr, std::move(stream)});
  return absl::OkStatus();
}

absl::Status GgufWriter::CheckUnique(const std::string& what) const {
  std::set<std::string> seen;
  for (const std::string& key : keys_) {
    if (!seen.insert(key).second) {
      return absl::InternalError(absl::StrCat(what, ": metadata key '", key, "' added twice"));
    }
  }
  seen.clear();
  for (const PendingTensor& t : tensors_) {
    if (!seen.insert(t.name).second) {
      return absl::InternalError(absl::StrCat(what, ": tensor '", t.name, "' added twice"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> GgufWriter::MetadataOnlyFile() const {
  if (!tensors_.empty()) {
    return absl::InternalError("a metadata-only GGUF was asked of a writer holding tensors");
  }
  RETURN_IF_ERROR(CheckUnique("metadata-only GGUF"));
  std::string header;
  AppendPod<uint32_t>(header, kMagic);
  AppendPod<uint32_t>(header, kVersion);
  AppendPod<uint64_t>(header, 0);
  AppendPod<uint64_t>(header, kv_count_);
  const size_t kv_start = header.size();
  header += kv_bytes_;
  for (const Deferred& d : deferred_) {
    std::vector<float> values;
    RETURN_IF_ERROR(FillDeferred(d, &values));
    std::memcpy(header.data() + kv_start + d.kv_offset, values.data(), values.size() * 4);
  }
  header.resize(*CheckedAlignUp(header.size(), alignment_), '\0');
  return header;
}

absl::StatusOr<WrittenFile> GgufWriter::Write(const std::string& path) {
  RETURN_IF_ERROR(CheckUnique(path));

  std::string header;
  AppendPod<uint32_t>(header, kMagic);
  AppendPod<uint32_t>(header, kVersion);
  AppendPod<uint64_t>(header, tensors_.size());
  AppendPod<uint64_t>(header, kv_count_);
  header += kv_bytes_;
  uint64_t offset = 0;
  for (PendingTensor& t : tensors_) {
    t.offset = offset;
    AppendString(header, t.name);
    AppendPod<uint32_t>(header, static_cast<uint32_t>(t.ne.size()));
    for (int64_t d : t.ne) AppendPod<uint64_t>(header, static_cast<uint64_t>(d));
    AppendPod<uint32_t>(header, static_cast<uint32_t>(t.type));
    AppendPod<uint64_t>(header, t.offset);
    offset = *CheckedAlignUp(offset + t.bytes, alignment_);
  }
  const uint64_t data_start = *CheckedAlignUp(header.size(), alignment_);
  header.resize(data_start, '\0');

  ASSIGN_OR_RETURN(std::unique_ptr<AtomicFile> file, AtomicFile::Create(path));
  RETURN_IF_ERROR(file->Write(header.data(), header.size()));
  WrittenFile written;
  std::vector<uint8_t> buffer;
  for (PendingTensor& t : tensors_) {
    const std::string where = absl::StrCat("GGUF tensor '", t.name, "'");
    if (t.stream) {
      uint64_t got = 0;
      absl::Status sink_error;  // kept even if a streamer dropped it
      absl::Status streamed = t.stream(t.bytes, [&](const uint8_t* data, uint64_t size) -> absl::Status {
        if (!sink_error.ok()) return sink_error;
        if (size > t.bytes - got) {
          sink_error = absl::InternalError(
              absl::StrCat(where, ": more than its ", t.bytes, " bytes handed over"));
          return sink_error;
        }
        sink_error = file->Write(data, size);
        if (!sink_error.ok()) sink_error = Annotate(sink_error, where);
        if (sink_error.ok()) got += size;
        return sink_error;
      });
      if (!sink_error.ok()) return sink_error;
      if (!streamed.ok()) return Annotate(streamed, where);
      if (got != t.bytes) {
        return absl::InternalError(
            absl::StrCat(where, ": ", got, " of its ", t.bytes, " bytes handed over"));
      }
    } else {
      buffer.assign(t.bytes, 0);
      absl::Status filled = t.fill(buffer.data(), t.bytes);
      if (!filled.ok()) return Annotate(filled, where);
      RETURN_IF_ERROR(file->Write(buffer.data(), buffer.size()));
    }
    RETURN_IF_ERROR(file->WriteZeros(*CheckedAlignUp(t.bytes, alignment_) - t.bytes));
    written.tensor_bytes += t.bytes;
    t.fill = nullptr;  // release what the filler captured
    t.stream = nullptr;
  }
  // The header's prefix before kv_bytes_: magic, version, two counts.
  constexpr uint64_t kKvStart = 4 + 4 + 8 + 8;
  for (const Deferred& d : deferred_) {
    std::vector<float> values;
    RETURN_IF_ERROR(FillDeferred(d, &values));
    RETURN_IF_ERROR(file->WriteAt(kKvStart + d.kv_offset, values.data(), values.size() * 4));
  }
  written.file_bytes = file->size();
  RETURN_IF_ERROR(file->Commit());
  return written;
}

}  // namespace slimpack::gguf

#include "formats/shard/writer/shard_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "formats/shard/format.h"
#include "formats/shard/writer/checked_io.h"
#include "formats/shard/writer/file_digest.h"
#include "support/status_macros.h"
#include "support/write_back.h"

namespace slimpack::shard_writer {
namespace {

using shard::kDataRegionOffset;

void PutLe(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// The 64-byte ShardHeader, little-endian whatever the host.
void EncodeHeader(uint32_t index, uint64_t file_size, uint8_t* out) {
  std::memset(out, 0, shard::kShardHeaderSize);
  std::memcpy(out + offsetof(shard::ShardHeader, magic), shard::kShardMagic, 8);
  PutLe(out + offsetof(shard::ShardHeader, version_major),
        shard::kFormatVersionMajor, 2);
  PutLe(out + offsetof(shard::ShardHeader, version_minor),
        shard::kFormatVersionMinor, 2);
  PutLe(out + offsetof(shard::ShardHeader, header_size),
        shard::kShardHeaderSize, 4);
  PutLe(out + offsetof(shard::ShardHeader, shard_index), index, 4);
  PutLe(out + offsetof(shard::ShardHeader, file_size), file_size, 8);
}

// Sequential writer that hashes every byte it writes and sends it back to
// disk as it goes (support/write_back.h). Small pieces (header, padding)
// are gathered in a 1 MiB buffer; chunks go straight out.
class HashingWriter {
 public:
  HashingWriter(int fd, std::string path, const ShardWriteContext& ctx)
      : fd_(fd), path_(std::move(path)), ctx_(ctx), buffer_(1 << 20), write_back_(fd) {}

  uint64_t position() const { return position_ + used_; }

  absl::Status Append(const void* data, uint64_t size) {
    sha_.Update(data, size);
    if (size >= buffer_.size()) {
      RETURN_IF_ERROR(Flush());
      RETURN_IF_ERROR(WriteAll(fd_, data, size, path_, position_));
      position_ += size;
      write_back_.Appended(position_);
      if (ctx_.on_bytes) ctx_.on_bytes(size);
      return absl::OkStatus();
    }
    if (used_ + size > buffer_.size()) RETURN_IF_ERROR(Flush());
    std::memcpy(buffer_.data() + used_, data, size);
    used_ += size;
    return absl::OkStatus();
  }

  absl::Status AppendZeros(uint64_t size) {
    static const uint8_t kZeros[4096] = {};
    while (size > 0) {
      uint64_t n = std::min<uint64_t>(size, sizeof(kZeros));
      RETURN_IF_ERROR(Append(kZeros, n));
      size -= n;
    }
    return absl::OkStatus();
  }

  absl::Status Flush() {
    if (used_ == 0) return absl::OkStatus();
    RETURN_IF_ERROR(WriteAll(fd_, buffer_.data(), used_, path_, position_));
    position_ += used_;
    write_back_.Appended(position_);
    if (ctx_.on_bytes) ctx_.on_bytes(used_);
    used_ = 0;
    return absl::OkStatus();
  }

  std::string FinishHex() { return sha_.FinishHex(); }
  // Waits for a background flush; its failure, which the final fsync may
  // no longer see.
  absl::Status FinishWriteBack() {
    const int err = write_back_.Finish();
    return err == 0 ? absl::OkStatus() : ErrnoStatus(err, path_ + ": fdatasync");
  }

 private:
  int fd_;
  std::string path_;
  const ShardWriteContext& ctx_;
  std::vector<uint8_t> buffer_;
  uint64_t used_ = 0;
  uint64_t position_ = 0;
  Sha256Stream sha_;
  support::WriteBack write_back_;
};

// Copies a tensor's bytes unchanged, chunk by chunk, releasing the input
// pages behind it.
absl::Status CopyPayload(const ShardWriteContext& ctx, const ir::Tensor& t,
                         HashingWriter& out) {
  const uint8_t* p = t.data.data();
  uint64_t left = t.data.size();
  while (left > 0) {
    uint64_t n = std::min(left, kChunkBytes);
    support::PrefaultRead(p, n);
    RETURN_IF_ERROR(out.Append(p, n));
    ctx.pages->Release(p, n);
    p += n;
    left -= n;
  }
  return absl::OkStatus();
}

// Converts a tensor to `to` through the encoder, one chunk of elements at a
// time, into a reused buffer.
absl::Status ConvertPayload(const ShardWriteContext& ctx, const ir::Tensor& t,
                            ir::DType to, std::vector<uint8_t>& buffer,
                            HashingWriter& out) {
  const int in_bits = ir::DTypeBits(t.dtype);
  const int out_bits = ir::DTypeBits(to);
  if (in_bits % 8 != 0 || out_bits % 8 != 0 || !ctx.encoder->convert) {
    return absl::UnimplementedError(
        "tensor '" + t.name + "': no conversion from " +
        std::string(ir::DTypeName(t.dtype)) + " to " +
        std::string(ir::DTypeName(to)) +
        " (converted dtypes must be whole bytes per element)");
  }
  const uint64_t in_size = static_cast<uint64_t>(in_bits / 8);
  const uint64_t out_size = static_cast<uint64_t>(out_bits / 8);
  const uint64_t numel = t.data.size() / in_size;
  const uint64_t chunk_elems = std::max<uint64_t>(1, kChunkBytes / out_size);
  buffer.resize(std::min(numel, chunk_elems) * out_size);
  for (uint64_t done = 0; done < numel;) {
    const uint64_t n = std::min(numel - done, chunk_elems);
    const uint8_t* src = t.data.data() + done * in_size;
    support::PrefaultRead(src, n * in_size);
    absl::Status s = ctx.encoder->convert(t.dtype, src, to, buffer.data(), n);
    if (!s.ok()) return Annotate(s, "tensor '" + t.name + "'");
    RETURN_IF_ERROR(out.Append(buffer.data(), n * out_size));
    ctx.pages->Release(src, n * in_size);
    done += n;
  }
  return absl::OkStatus();
}

// A tensor whose bytes are made now (TensorEncoder::produce): the same
// tensor with them, checked against the size it was planned with.
absl::StatusOr<ir::Tensor> ProduceDeferred(const ShardWriteContext& ctx, const ir::Tensor& t) {
  if (!ctx.encoder->produce) {
    return absl::InternalError("tensor '" + t.name +
                               "' has no bytes yet and the writer was given no producer");
  }
  ASSIGN_OR_RETURN(ir::TensorData bytes, ctx.encoder->produce(t));
  if (bytes.size() != t.data.size() || bytes.deferred()) {
    return absl::InternalError("tensor '" + t.name + "': produced " +
                               std::to_string(bytes.size()) + " bytes, planned " +
                               std::to_string(t.data.size()));
  }
  ir::Tensor made = t;
  made.data = std::move(bytes);
  return made;
}

// A deferred tensor's bytes written as the producer hands them over, each
// piece hashed and written while it makes the next; exactly t.data.size().
absl::Status ProduceStreamed(const ShardWriteContext& ctx, const ir::Tensor& t,
                             HashingWriter& out) {
  const uint64_t want = t.data.size();
  uint64_t got = 0;
  // The sink's own first error is what is returned, even if a producer
  // were to drop it.
  absl::Status sink_error;
  const absl::Status produced = ctx.encoder->produce_streamed(
      t, [&](const uint8_t* data, uint64_t size) -> absl::Status {
        if (!sink_error.ok()) return sink_error;
        if (size > want - got) {
          sink_error = absl::InternalError("tensor '" + t.name +
                                           "': produced more than the planned " +
                                           std::to_string(want) + " bytes");
          return sink_error;
        }
        sink_error = out.Append(data, size);
        if (sink_error.ok()) got += size;
        return sink_error;
      });
  RETURN_IF_ERROR(sink_error);
  RETURN_IF_ERROR(produced);
  if (got != want) {
    return absl::InternalError("tensor '" + t.name + "': produced " + std::to_string(got) +
                               " bytes, planned " + std::to_string(want));
  }
  return absl::OkStatus();
}

}  // namespace

std::string ShardFileName(uint32_t index) {
  char name[32];
  std::snprintf(name, sizeof(name), "shard-%05u.bin", index);
  return name;
}

absl::StatusOr<WrittenFile> WriteShardFile(
    const ShardWriteContext& ctx, uint32_t index, uint64_t file_size,
    const std::vector<ShardTensor>& tensors, std::atomic<size_t>* writing) {
  struct Done {  // every return says the tensors are done
    std::atomic<size_t>* writing;
    size_t n;
    ~Done() {
      if (writing) writing->store(n);
    }
  } done{writing, tensors.size()};
  WrittenFile result;
  result.file = ShardFileName(index);
  const std::string path = ctx.dir_for_errors + "/" + result.file;
  ASSIGN_OR_RETURN(int fd, CreateExclusive(ctx.dir_fd, result.file, path));
  absl::Status status = Preallocate(fd, file_size, path);
  HashingWriter out(fd, path, ctx);
  if (status.ok()) {
    uint8_t header[shard::kShardHeaderSize];
    EncodeHeader(index, file_size, header);
    status = out.Append(header, sizeof(header));
  }
  std::vector<uint8_t> buffer;
  for (size_t k = 0; k < tensors.size(); ++k) {
    if (!status.ok()) break;
    if (writing) writing->store(k);
    const ShardTensor& st = tensors[k];
    const ir::Tensor& t = *st.tensor;
    if (st.offset < out.position()) {
      status = absl::InternalError(path + ": tensor '" + t.name +
                                   "' planned at offset " +
                                   std::to_string(st.offset) + " below " +
                                   std::to_string(out.position()));
      break;
    }
    status = out.AppendZeros(st.offset - out.position());
    if (!status.ok()) break;
    if (t.data.deferred() && ctx.encoder->produce_streamed && st.output_dtype == t.dtype) {
      status = ProduceStreamed(ctx, t, out);
    } else if (t.data.deferred()) {
      auto produced = ProduceDeferred(ctx, t);
      if (!produced.ok()) {
        status = produced.status();
        break;
      }
      status = st.output_dtype == t.dtype
                   ? CopyPayload(ctx, *produced, out)
                   : ConvertPayload(ctx, *produced, st.output_dtype, buffer, out);
    } else {
      status = st.output_dtype == t.dtype
                   ? CopyPayload(ctx, t, out)
                   : ConvertPayload(ctx, t, st.output_dtype, buffer, out);
    }
    if (status.ok() && out.position() != st.offset + st.nbytes) {
      status = absl::InternalError(
          path + ": tensor '" + t.name + "' produced " +
          std::to_string(out.position() - st.offset) + " bytes, planned " +
          std::to_string(st.nbytes));
    }
  }
  if (status.ok() && out.position() < kDataRegionOffset) {
    status = out.AppendZeros(kDataRegionOffset - out.position());
  }
  if (status.ok() && out.position() > file_size) {
    status = absl::InternalError(path + ": wrote " +
                                 std::to_string(out.position()) +
                                 " bytes, planned " + std::to_string(file_size));
  }
  if (status.ok()) status = out.AppendZeros(file_size - out.position());
  if (status.ok()) status = out.Flush();
  if (absl::Status flushed = out.FinishWriteBack(); status.ok()) status = flushed;
  if (status.ok()) status = Fsync(fd, path);
  absl::Status closed = Close(fd, path);
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(closed);
  result.size = file_size;
  result.sha256 = out.FinishHex();
  return result;
}

}  // namespace slimpack::shard_writer

// .npz archives: a zip whose entries are .npy images. The reader trusts
// nothing: the end record, every central directory entry and every local
// header is bounds-checked, sizes come from the central directory (numpy
// writes Zip64 local headers with placeholder sizes), and CRC-32 is verified.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>
#include <optional>
#include <set>

#include "formats/numpy/npy_layout.h"
#include "formats/numpy/npz_zip.h"
#include "formats/numpy/numpy_io.h"
#include "ir/shape.h"
#include "support/checked_math.h"
#include "support/mapped_file.h"
#include "support/status_macros.h"

namespace slimpack::numpy {
namespace {

using zip::Crc32;
using zip::IsSafeEntryName;
using zip::kCentralSig;
using zip::kCentralSize;
using zip::kDeflate;
using zip::kEndSig;
using zip::kEndSize;
using zip::kLocalSig;
using zip::kLocalSize;
using zip::kMaxDeflateRatio;
using zip::kStored;
using zip::kZip64LocatorSig;
using zip::Le;

// Raw deflate of one entry, inflated piece by piece into caller buffers of
// exactly the sizes the entry declares: zlib never writes past them.
class EntryInflater {
 public:
  EntryInflater(const uint8_t* src, uint64_t compressed) : in_left_(compressed) {
    zs_.next_in = const_cast<Bytef*>(src);
  }
  ~EntryInflater() {
    if (ready_) inflateEnd(&zs_);
  }
  EntryInflater(const EntryInflater&) = delete;
  EntryInflater& operator=(const EntryInflater&) = delete;

  bool Init() {
    ready_ = inflateInit2(&zs_, -MAX_WBITS) == Z_OK;
    return ready_;
  }

  // Fills all of [dst, dst + n); false if the stream is corrupt or ends
  // first (produced() and rc() say how far it got).
  bool Read(uint8_t* dst, uint64_t n) {
    while (n > 0) {
      if (ended_) return false;
      Feed();
      // uInt is 32 bits: at most 1 GiB per call.
      const uInt chunk = static_cast<uInt>(std::min<uint64_t>(n, 1u << 30));
      zs_.next_out = dst;
      zs_.avail_out = chunk;
      rc_ = inflate(&zs_, Z_NO_FLUSH);
      const uint64_t made = chunk - zs_.avail_out;
      dst += made;
      n -= made;
      produced_ += made;
      if (rc_ == Z_STREAM_END) {
        ended_ = true;
      } else if (rc_ == Z_BUF_ERROR) {
        if (made == 0) return false;  // no progress: input exhausted
      } else if (rc_ != Z_OK) {
        return false;
      }
    }
    return true;
  }

  // After the declared bytes: true if the stream ends exactly here and used
  // all of its compressed bytes. One spare output byte tells "more data"
  // from "end of stream" without inflating the excess.
  bool EndsHere() {
    while (!ended_) {
      Feed();
      uint8_t spare;
      zs_.next_out = &spare;
      zs_.avail_out = 1;
      rc_ = inflate(&zs_, Z_NO_FLUSH);
      if (zs_.avail_out == 0) {
        ++produced_;
        more_ = true;
        return false;
      }
      if (rc_ == Z_STREAM_END) {
        ended_ = true;
      } else if (rc_ != Z_OK) {
        return false;  // corrupt, or truncated before the end of stream
      }
    }
    return zs_.avail_in == 0 && in_left_ == 0;
  }

  uint64_t produced() const { return produced_; }
  int rc() const { return rc_; }
  bool more() const { return more_; }

 private:
  void Feed() {
    if (zs_.avail_in == 0 && in_left_ > 0) {
      zs_.avail_in = static_cast<uInt>(std::min<uint64_t>(in_left_, 1u << 30));
      in_left_ -= zs_.avail_in;
    }
  }

  z_stream zs_{};
  uint64_t in_left_;
  uint64_t produced_ = 0;
  int rc_ = Z_OK;
  bool ready_ = false;
  bool ended_ = false;
  bool more_ = false;
};

struct Entry {
  std::string name;
  uint16_t flags = 0, method = 0;
  uint32_t crc = 0;
  uint64_t compressed = 0, uncompressed = 0, local_offset = 0;
};

class NpzReader {
 public:
  NpzReader(const MappedFile& file, const NpzReadOptions& options)
      : path_(file.path()), d_(file.data()), n_(file.size()), options_(options) {}

  absl::StatusOr<std::vector<ir::Tensor>> ReadAll() {
    ASSIGN_OR_RETURN(std::vector<Entry> entries, ReadCentralDirectory());
    std::vector<ir::Tensor> out;
    for (const Entry& e : entries) {
      ASSIGN_OR_RETURN(ir::Tensor t, ReadEntry(e));
      out.push_back(std::move(t));
    }
    return out;
  }

 private:
  absl::Status Err(absl::StatusCode code, const std::string& msg) const {
    return absl::Status(code, path_ + ": " + msg);
  }

  absl::StatusOr<uint64_t> FindEndRecord() const {
    if (n_ < kEndSize) {
      return Err(absl::StatusCode::kInvalidArgument,
                 "not a zip archive: " + std::to_string(n_) +
                     " bytes is smaller than the 22-byte end record");
    }
    // The end record sits at the end, followed by a comment of <= 65535 bytes.
    const uint64_t lowest = n_ > kEndSize + 0xFFFF ? n_ - kEndSize - 0xFFFF : 0;
    for (uint64_t pos = n_ - kEndSize + 1; pos-- > lowest;) {
      if (Le(d_ + pos, 4) == kEndSig && pos + kEndSize + Le(d_ + pos + 20, 2) == n_) {
        return pos;
      }
    }
    return Err(absl::StatusCode::kInvalidArgument,
               "not a zip archive: no end-of-central-directory record");
  }

  absl::StatusOr<std::vector<Entry>> ReadCentralDirectory() const {
    ASSIGN_OR_RETURN(uint64_t end, FindEndRecord());
    const uint8_t* e = d_ + end;
    const uint64_t disk = Le(e + 4, 2), cd_disk = Le(e + 6, 2);
    const uint64_t count_disk = Le(e + 8, 2), count = Le(e + 10, 2);
    const uint64_t cd_size = Le(e + 12, 4), cd_offset = Le(e + 16, 4);
    if ((end >= 20 && Le(d_ + end - 20, 4) == kZip64LocatorSig) || count == 0xFFFF ||
        cd_size == 0xFFFFFFFF || cd_offset == 0xFFFFFFFF) {
      return Err(absl::StatusCode::kUnimplemented,
                 "Zip64 end records are not supported (archives over 4 GiB or "
                 "65535 entries)");
    }
    if (disk != 0 || cd_disk != 0 || count_disk != count) {
      return Err(absl::StatusCode::kUnimplemented,
                 "multi-disk archives are not supported (disk " + std::to_string(disk) +
                     ", entries on this disk " + std::to_string(count_disk) + " of " +
                     std::to_string(count) + ")");
    }
    if (cd_offset > end || cd_size > end - cd_offset) {
      return Err(absl::StatusCode::kOutOfRange,
                 "central directory [" + std::to_string(cd_offset) + ", +" +
                     std::to_string(cd_size) + ") extends past the end record at " +
                     std::to_string(end));
    }
    std::vector<Entry> entries;
    std::set<std::string> names;
    uint64_t pos = cd_offset;
    const uint64_t cd_end = cd_offset + cd_size;
    for (uint64_t i = 0; i < count; ++i) {
      const std::string where = "central directory entry " + std::to_string(i) +
                                " at offset " + std::to_string(pos);
      if (cd_end - pos < kCentralSize) {
        return Err(absl::StatusCode::kOutOfRange,
                   where + ": record runs past the central directory end " +
                       std::to_string(cd_end) + " (end record claims " +
                       std::to_string(count) + " entries)");
      }
      const uint8_t* c = d_ + pos;
      if (Le(c, 4) != kCentralSig) {
        return Err(absl::StatusCode::kInvalidArgument, where + ": bad signature");
      }
      Entry en;
      en.flags = static_cast<uint16_t>(Le(c + 8, 2));
      en.method = static_cast<uint16_t>(Le(c + 10, 2));
      en.crc = static_cast<uint32_t>(Le(c + 16, 4));
      en.compressed = Le(c + 20, 4);
      en.uncompressed = Le(c + 24, 4);
      const uint64_t name_len = Le(c + 28, 2), extra_len = Le(c + 30, 2),
                     comment_len = Le(c + 32, 2);
      en.local_offset = Le(c + 42, 4);
      const uint64_t record = kCentralSize + name_len + extra_len + comment_len;
      if (cd_end - pos < record) {
        return Err(absl::StatusCode::kOutOfRange,
                   where + ": name/extra/comment run past the central directory end");
      }
      en.name.assign(reinterpret_cast<const char*>(c + kCentralSize), name_len);
      RETURN_IF_ERROR(ApplyZip64Extra(c + kCentralSize + name_len, extra_len, en, where));
      RETURN_IF_ERROR(CheckName(en.name, where));
      if (!names.insert(en.name).second) {
        return Err(absl::StatusCode::kInvalidArgument,
                   where + ": duplicate entry '" + en.name + "'");
      }
      entries.push_back(std::move(en));
      pos += record;
    }
    if (pos != cd_end) {
      return Err(absl::StatusCode::kInvalidArgument,
                 "central directory holds " + std::to_string(cd_end - pos) +
                     " bytes beyond its " + std::to_string(count) + " entries");
    }
    cd_offset_ = cd_offset;
    return entries;
  }

  // Sizes/offset of 0xFFFFFFFF are in the Zip64 extra field (id 1), in order.
  absl::Status ApplyZip64Extra(const uint8_t* x, uint64_t len, Entry& en,
                               const std::string& where) const {
    uint64_t* fields[] = {&en.uncompressed, &en.compressed, &en.local_offset};
    bool needed = false;
    for (uint64_t* f : fields) needed |= *f == 0xFFFFFFFF;
    if (!needed) return absl::OkStatus();
    uint64_t p = 0;
    while (len - p >= 4) {
      const uint64_t id = Le(x + p, 2), size = Le(x + p + 2, 2);
      if (size > len - p - 4) break;
      if (id == 1) {
        uint64_t q = 0;
        for (uint64_t* f : fields) {
          if (*f != 0xFFFFFFFF) continue;
          if (size - q < 8) break;
          *f = Le(x + p + 4 + q, 8);
          q += 8;
        }
        return absl::OkStatus();
      }
      p += 4 + size;
    }
    return Err(absl::StatusCode::kInvalidArgument,
               where + " ('" + en.name + "'): size 0xFFFFFFFF without a Zip64 extra field");
  }

  absl::Status CheckName(const std::string& name, const std::string& where) const {
    const bool npy = name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0;
    if (!npy || !IsSafeEntryName(name.substr(0, name.size() - 4))) {
      return Err(absl::StatusCode::kInvalidArgument,
                 where + ": entry name '" + name +
                     "' is not '<name>.npy' with a relative name (no '.', '..' or empty parts)");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<ir::Tensor> ReadEntry(const Entry& en) const {
    const std::string where = "entry '" + en.name + "'";
    if (en.flags & 0x41) {
      return Err(absl::StatusCode::kUnimplemented, where + " is encrypted");
    }
    if (en.method != kStored && en.method != kDeflate) {
      return Err(absl::StatusCode::kUnimplemented,
                 where + ": compression method " + std::to_string(en.method) +
                     " (supported: 0 stored, 8 deflate)");
    }
    if (en.local_offset > cd_offset_ || cd_offset_ - en.local_offset < kLocalSize) {
      return Err(absl::StatusCode::kOutOfRange,
                 where + ": local header offset " + std::to_string(en.local_offset) +
                     " is not before the central directory at " +
                     std::to_string(cd_offset_));
    }
    const uint8_t* l = d_ + en.local_offset;
    if (Le(l, 4) != kLocalSig) {
      return Err(absl::StatusCode::kInvalidArgument,
                 where + ": bad local header signature at offset " +
                     std::to_string(en.local_offset));
    }
    const uint64_t name_len = Le(l + 26, 2), extra_len = Le(l + 28, 2);
    const uint64_t data_offset = en.local_offset + kLocalSize + name_len + extra_len;
    const auto data_end = CheckedAdd(data_offset, en.compressed);
    if (!data_end || *data_end > cd_offset_) {
      return Err(absl::StatusCode::kOutOfRange,
                 where + ": data [" + std::to_string(data_offset) + ", +" +
                     std::to_string(en.compressed) +
                     ") runs into the central directory at " + std::to_string(cd_offset_));
    }
    if (std::string_view(reinterpret_cast<const char*>(l + kLocalSize), name_len) != en.name ||
        Le(l + 8, 2) != en.method) {
      return Err(absl::StatusCode::kInvalidArgument,
                 where + ": local header (name or method) disagrees with the central directory");
    }
    const uint8_t* src = d_ + data_offset;
    const std::string stem = en.name.substr(0, en.name.size() - 4);
    if (en.method == kDeflate) return ReadDeflated(en, src, where, stem);
    if (en.compressed != en.uncompressed) {
      return Err(absl::StatusCode::kInvalidArgument,
                 where + ": stored entry has compressed size " +
                     std::to_string(en.compressed) + " != uncompressed size " +
                     std::to_string(en.uncompressed));
    }
    const uint32_t crc = static_cast<uint32_t>(Crc32(src, en.uncompressed));
    if (crc != en.crc) {
      return Err(absl::StatusCode::kDataLoss,
                 where + ": CRC-32 " + Hex(crc) + " != recorded " + Hex(en.crc));
    }
    return ParseNpy(src, en.uncompressed, stem, path_ + ":" + en.name);
  }

  // The budget, read once per archive and only if it has a deflated entry.
  const NpzInflateBudget& Budget() const {
    if (!budget_) {
      budget_ = options_.max_inflated_bytes > 0
                    ? NpzInflateBudget{options_.max_inflated_bytes,
                                       "NpzReadOptions::max_inflated_bytes"}
                    : DefaultNpzInflateBudget();
    }
    return *budget_;
  }

  // A deflated entry: everything that can be decided from the declared
  // sizes and the .npy header is decided before the data is allocated, and
  // zlib only ever writes into buffers of the declared sizes.
  absl::StatusOr<ir::Tensor> ReadDeflated(const Entry& en, const uint8_t* src,
                                          const std::string& where,
                                          const std::string& stem) const {
    const std::string source = path_ + ":" + en.name;
    const uint64_t declared = en.uncompressed;
    if (declared / kMaxDeflateRatio > en.compressed + 1) {
      return Err(absl::StatusCode::kInvalidArgument,
                 where + ": claims " + std::to_string(declared) + " bytes from " +
                     std::to_string(en.compressed) + " deflated (ratio above deflate's limit)");
    }
    const NpzInflateBudget& budget = Budget();
    const auto total = CheckedAdd(inflated_, declared);
    if (!total || *total > budget.bytes) {
      return Err(absl::StatusCode::kResourceExhausted,
                 where + ": declares " + std::to_string(declared) +
                     " uncompressed bytes (" + std::to_string(en.compressed) +
                     " compressed)" +
                     (inflated_ > 0 ? ", after " + std::to_string(inflated_) +
                                          " bytes of earlier entries,"
                                    : std::string()) +
                     " over the decompression limit of " + std::to_string(budget.bytes) +
                     " bytes (" + budget.source + "); refusing to inflate it");
    }
    EntryInflater z(src, en.compressed);
    if (!z.Init()) return absl::InternalError("zlib inflateInit2 failed");
    auto corrupt = [&](const std::string& what) {
      return Err(absl::StatusCode::kDataLoss,
                 where + ": deflate stream " + what + " (zlib " + std::to_string(z.rc()) +
                     ", produced " + std::to_string(z.produced()) + " of the declared " +
                     std::to_string(declared) + " bytes)");
    };
    // 1. Magic, version and header length, then the header dict alone.
    std::vector<uint8_t> head(std::min<uint64_t>(declared, kNpyMagicAndVersionBytes + 4));
    if (!z.Read(head.data(), head.size())) return corrupt("is corrupt or ends early");
    const uint64_t prefix = head.size() >= kNpyMagicAndVersionBytes ? NpyPrefixBytes(head[6]) : 0;
    if (prefix == 0 || head.size() < prefix || std::memcmp(head.data(), "\x93NUMPY", 6) != 0) {
      // Too short or not a .npy: ParseNpyLayout names what is wrong.
      auto bad = ParseNpyLayout(head.data(), head.size(), source);
      if (bad.ok()) return absl::InternalError(source + ": unexpected valid .npy prefix");
      return bad.status();
    }
    uint64_t header_len = 0;
    for (uint64_t i = prefix; i-- > kNpyMagicAndVersionBytes;) {
      header_len = header_len << 8 | head[i];  // little-endian u16 / u32
    }
    if (header_len > kMaxNpyHeaderBytes || prefix + header_len > declared) {
      return Err(absl::StatusCode::kInvalidArgument,
                 where + ": .npy header length " + std::to_string(header_len) +
                     " does not fit the declared " + std::to_string(declared) +
                     " uncompressed bytes (or exceeds " + std::to_string(kMaxNpyHeaderBytes) +
                     ")");
    }
    const uint64_t have = head.size();
    head.resize(prefix + header_len);
    if (head.size() > have && !z.Read(head.data() + have, head.size() - have)) {
      return corrupt("is corrupt or ends early");
    }
    ASSIGN_OR_RETURN(NpyLayout layout, ParseNpyLayout(head.data(), head.size(), source));
    // 2. The declared size must be exactly what the header describes.
    const auto described = CheckedAdd(layout.data_offset, layout.nbytes);
    if (!described || *described != declared) {
      return Err(absl::StatusCode::kInvalidArgument,
                 where + ": declares " + std::to_string(declared) +
                     " uncompressed bytes, but its .npy header (shape " +
                     ir::Shape::FromDims(layout.shape).ToString() + " of " + layout.descr +
                     ") describes " +
                     (described ? std::to_string(*described) : std::string("more than 2^64")) +
                     " (" + std::to_string(layout.data_offset) + " header + " +
                     std::to_string(layout.nbytes) + " data); refusing to inflate it");
    }
    // 3. The data, straight into the tensor's buffer.
    std::vector<uint8_t> data;
    try {
      data.resize(layout.nbytes);
    } catch (const std::bad_alloc&) {
      return Err(absl::StatusCode::kResourceExhausted,
                 where + ": cannot allocate " + std::to_string(layout.nbytes) +
                     " bytes for the inflated data");
    }
    if (!z.Read(data.data(), data.size())) return corrupt("is corrupt or ends early");
    if (!z.EndsHere()) {
      return corrupt(z.more() ? "holds more than the declared size; the rest was not inflated"
                              : "does not end at the declared size or is corrupt");
    }
    uLong crc = crc32(0L, head.data(), static_cast<uInt>(head.size()));
    crc = crc32_combine(crc, static_cast<uLong>(Crc32(data.data(), data.size())),
                        static_cast<z_off_t>(data.size()));
    if (static_cast<uint32_t>(crc) != en.crc) {
      return Err(absl::StatusCode::kDataLoss,
                 where + ": CRC-32 " + Hex(static_cast<uint32_t>(crc)) + " != recorded " +
                     Hex(en.crc));
    }
    inflated_ = *total;
    ir::Tensor t;
    t.name = stem;
    t.dtype = layout.dtype;
    t.dims = layout.shape;
    t.data = ir::TensorData::Owned(std::move(data));
    t.provenance = ir::Provenance::FromFile(source, static_cast<int64_t>(layout.data_offset));
    return t;
  }

  static std::string Hex(uint32_t v) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "0x%08x", v);
    return buf;
  }

  std::string path_;
  const uint8_t* d_;
  uint64_t n_;
  NpzReadOptions options_;
  mutable std::optional<NpzInflateBudget> budget_;
  mutable uint64_t inflated_ = 0;  // declared bytes of deflated entries read
  mutable uint64_t cd_offset_ = 0;
};


}  // namespace


absl::StatusOr<std::vector<ir::Tensor>> ReadNpz(const std::string& path) {
  return ReadNpz(path, NpzReadOptions{});
}

absl::StatusOr<std::vector<ir::Tensor>> ReadNpz(const std::string& path,
                                                const NpzReadOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(path));
  return NpzReader(*file, options).ReadAll();
}

}  // namespace slimpack::numpy

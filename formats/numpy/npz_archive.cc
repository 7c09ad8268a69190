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
#include <fstream>
#include <new>
#include <optional>
#include <set>
#include <sstream>

#include "formats/numpy/npy_encode.h"
#include "formats/numpy/npy_layout.h"
#include "formats/numpy/numpy_io.h"
#include "ir/shape.h"
#include "support/atomic_file.h"
#include "support/checked_math.h"
#include "support/mapped_file.h"
#include "support/status_macros.h"

namespace slimpack::numpy {
namespace {

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50,
                   kEndSig = 0x06054b50, kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kLocalSize = 30, kCentralSize = 46, kEndSize = 22;
constexpr uint16_t kStored = 0, kDeflate = 8;
// Deflate cannot expand more than ~1032:1; a larger claim is a zip bomb.
constexpr uint64_t kMaxDeflateRatio = 1100;

// ONNX value names like "/model/Add_output_0" are legal keys (numpy.savez
// accepts them too); what is refused is anything that could escape a
// directory if someone extracted the archive: absolute paths, '.', '..',
// empty parts, backslashes and NUL.
bool IsSafeEntryName(const std::string& stem) {
  if (stem.empty() || stem.find('\\') != std::string::npos ||
      stem.find('\0') != std::string::npos) {
    return false;
  }
  size_t start = 0;
  while (true) {
    const size_t slash = stem.find('/', start);
    const std::string part = stem.substr(start, slash == std::string::npos ? slash : slash - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
}

uint64_t Le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

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

// The first number in `text`, or 0.
uint64_t LeadingNumber(const std::string& text) {
  return std::strtoull(text.c_str(), nullptr, 10);
}

std::string ReadProcFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// MemAvailable of /proc/meminfo in bytes, or 0.
uint64_t MemAvailable() {
  const std::string info = ReadProcFile("/proc/meminfo");
  const size_t pos = info.find("MemAvailable:");
  if (pos == std::string::npos) return 0;
  return LeadingNumber(info.substr(pos + 13)) * 1024;
}

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
    const uint32_t crc = static_cast<uint32_t>(CrcOf(src, en.uncompressed));
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
    crc = crc32_combine(crc, static_cast<uLong>(CrcOf(data.data(), data.size())),
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

  static uint64_t CrcOf(const uint8_t* p, uint64_t n) {
    uLong crc = crc32(0L, Z_NULL, 0);
    while (n > 0) {
      const uInt chunk = static_cast<uInt>(std::min<uint64_t>(n, 1u << 30));
      crc = crc32(crc, p, chunk);
      p += chunk;
      n -= chunk;
    }
    return crc;
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

 public:
  static uint64_t Crc(const uint8_t* p, uint64_t n) { return CrcOf(p, n); }
};

void Put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

NpzInflateBudget DefaultNpzInflateBudget() {
  if (const char* env = std::getenv("SLIMPACK_NPZ_MAX_INFLATE_BYTES")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end != env && *end == '\0' && v > 0) {
      return {v, "$SLIMPACK_NPZ_MAX_INFLATE_BYTES"};
    }
  }
  NpzInflateBudget b;
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  b.bytes = pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                  : UINT64_MAX;
  b.source = "physical memory";
  if (const uint64_t avail = MemAvailable(); avail > 0 && avail < b.bytes) {
    b.bytes = avail;
    b.source = "memory available now, MemAvailable in /proc/meminfo";
  }
  const std::string max = ReadProcFile("/sys/fs/cgroup/memory.max");
  if (!max.empty() && max.compare(0, 3, "max") != 0) {
    const uint64_t limit = LeadingNumber(max);
    const uint64_t used = LeadingNumber(ReadProcFile("/sys/fs/cgroup/memory.current"));
    const uint64_t left = limit > used ? limit - used : 0;
    if (limit > 0 && left < b.bytes) {
      b.bytes = left;
      b.source = "memory left under the cgroup limit, /sys/fs/cgroup/memory.max";
    }
  }
  b.source += "; set SLIMPACK_NPZ_MAX_INFLATE_BYTES to change it";
  return b;
}

absl::StatusOr<std::vector<ir::Tensor>> ReadNpz(const std::string& path) {
  return ReadNpz(path, NpzReadOptions{});
}

absl::StatusOr<std::vector<ir::Tensor>> ReadNpz(const std::string& path,
                                                const NpzReadOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(path));
  return NpzReader(*file, options).ReadAll();
}

bool IsNpzWrittenBySlimpack(const std::string& path) {
  const uint64_t comment = sizeof(kNpzWriterComment) - 1;
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;
  struct stat st;
  std::string tail(kEndSize + comment, '\0');
  bool ours = false;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<uint64_t>(st.st_size) >= tail.size() &&
      ::pread(fd, tail.data(), tail.size(),
              static_cast<off_t>(static_cast<uint64_t>(st.st_size) - tail.size())) ==
          static_cast<ssize_t>(tail.size())) {
    const auto* e = reinterpret_cast<const uint8_t*>(tail.data());
    ours = Le(e, 4) == kEndSig && Le(e + 20, 2) == comment &&
           tail.compare(kEndSize, comment, kNpzWriterComment) == 0;
  }
  ::close(fd);
  return ours;
}

absl::Status WriteNpz(const std::string& path, const std::vector<ir::Tensor>& tensors) {
  if (tensors.size() >= 0xFFFF) {
    return absl::UnimplementedError(path + ": " + std::to_string(tensors.size()) +
                                    " entries need Zip64, which the writer does not produce");
  }
  // Reserved up front: the pieces are string_views into these strings.
  std::vector<std::string> locals;
  locals.reserve(tensors.size());
  std::vector<std::string_view> pieces;
  std::string central;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const ir::Tensor& t : tensors) {
    if (!IsSafeEntryName(t.name) || !names.insert(t.name).second) {
      return absl::InvalidArgumentError(
          path + ": tensor name '" + t.name +
          "' is duplicate or not a safe relative entry name (no '.', '..' or empty parts)");
    }
    ASSIGN_OR_RETURN(std::string npy_header, EncodeNpyHeader(t));
    const std::string name = t.name + ".npy";
    const uint64_t size = npy_header.size() + t.data.size();
    if (size >= 0xFFFFFFFF || offset >= 0xFFFFFFFF) {
      return absl::UnimplementedError(path + ": entry '" + name +
                                      "' needs Zip64 (over 4 GiB), which the writer does not produce");
    }
    uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(npy_header.data()),
                      static_cast<uInt>(npy_header.size()));
    crc = crc32_combine(crc, NpzReader::Crc(t.data.data(), t.data.size()),
                        static_cast<z_off_t>(t.data.size()));
    // Fixed 1980-01-01 timestamps keep the output deterministic.
    auto common = [&](std::string& s) {
      Put(s, 20, 2);  // version needed
      Put(s, 0, 2);   // flags
      Put(s, kStored, 2);
      Put(s, 0, 2);       // time
      Put(s, 0x21, 2);    // date
      Put(s, crc, 4);
      Put(s, size, 4);
      Put(s, size, 4);
      Put(s, name.size(), 2);
      Put(s, 0, 2);  // extra
    };
    std::string local;
    Put(local, kLocalSig, 4);
    common(local);
    local += name;
    local += npy_header;
    Put(central, kCentralSig, 4);
    Put(central, 20, 2);  // version made by
    common(central);
    Put(central, 0, 2);  // comment
    Put(central, 0, 2);  // disk
    Put(central, 0, 2);  // internal attributes
    Put(central, 0, 4);  // external attributes
    Put(central, offset, 4);
    central += name;
    offset += local.size() + t.data.size();
    locals.push_back(std::move(local));
    pieces.push_back(locals.back());
    pieces.emplace_back(reinterpret_cast<const char*>(t.data.data()), t.data.size());
  }
  if (offset >= 0xFFFFFFFF) {
    return absl::UnimplementedError(path + ": archive over 4 GiB needs Zip64");
  }
  std::string end;
  Put(end, kEndSig, 4);
  Put(end, 0, 2);
  Put(end, 0, 2);
  Put(end, tensors.size(), 2);
  Put(end, tensors.size(), 2);
  Put(end, central.size(), 4);
  Put(end, offset, 4);
  // The archive comment says who wrote it (IsNpzWrittenBySlimpack).
  Put(end, sizeof(kNpzWriterComment) - 1, 2);
  end += kNpzWriterComment;
  pieces.push_back(central);
  pieces.push_back(end);
  return WriteFileAtomically(path, pieces);
}

}  // namespace slimpack::numpy

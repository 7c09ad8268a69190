// .npz writing (numpy.load reads it): stored entries, fixed timestamps so
// the bytes are deterministic, and an archive comment saying who wrote it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "formats/numpy/npy_encode.h"
#include "formats/numpy/npz_zip.h"
#include "formats/numpy/numpy_io.h"
#include "support/atomic_file.h"
#include "support/status_macros.h"

namespace slimpack::numpy {
namespace {

using zip::kCentralSig;
using zip::kEndSig;
using zip::kEndSize;
using zip::kLocalSig;
using zip::kStored;
using zip::Le;

void Put(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

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
    if (!zip::IsSafeEntryName(t.name) || !names.insert(t.name).second) {
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
    crc = crc32_combine(crc, zip::Crc32(t.data.data(), t.data.size()),
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

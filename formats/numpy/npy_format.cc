// .npy images: magic "\x93NUMPY", version, header length (u16 for 1.0, u32
// for 2.0/3.0), the header dict padded so data starts on a 64-byte boundary,
// then the raw C-order little-endian data.
#include <cstring>
#include <new>

#include "ir/shape.h"
#include "formats/numpy/npy_descr.h"
#include "formats/numpy/npy_encode.h"
#include "formats/numpy/npy_header.h"
#include "formats/numpy/npy_layout.h"
#include "formats/numpy/numpy_io.h"
#include "support/atomic_file.h"
#include "support/checked_math.h"
#include "support/mapped_file.h"
#include "support/status_macros.h"

namespace slimpack::numpy {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr uint64_t kMagicSize = 6;

uint32_t LoadLe(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::string Stem(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const size_t dot = base.find_last_of('.');
  return dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
}

}  // namespace

uint64_t NpyPrefixBytes(int major) {
  if (major == 1) return kNpyMagicAndVersionBytes + 2;
  if (major == 2 || major == 3) return kNpyMagicAndVersionBytes + 4;
  return 0;
}

absl::StatusOr<NpyLayout> ParseNpyLayout(const uint8_t* data, uint64_t size,
                                         const std::string& source) {
  auto err = [&](absl::StatusCode code, const std::string& msg) {
    return absl::Status(code, source + ": " + msg);
  };
  if (size < kMagicSize + 2 || std::memcmp(data, kMagic, kMagicSize) != 0) {
    return err(absl::StatusCode::kInvalidArgument,
               "not a .npy file: expected magic \\x93NUMPY at offset 0");
  }
  const int major = data[6], minor = data[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return err(absl::StatusCode::kInvalidArgument,
               "unsupported .npy version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)");
  }
  const int len_bytes = major == 1 ? 2 : 4;
  const uint64_t prefix = NpyPrefixBytes(major);
  if (size < prefix) {
    return err(absl::StatusCode::kOutOfRange, "truncated before the header length");
  }
  const uint64_t header_len = LoadLe(data + 8, len_bytes);
  if (header_len > size - prefix) {
    return err(absl::StatusCode::kOutOfRange,
               "header length " + std::to_string(header_len) + " exceeds the " +
                   std::to_string(size - prefix) + " bytes after the prefix");
  }
  const std::string_view text(reinterpret_cast<const char*>(data + prefix), header_len);
  if (major < 3) {
    for (char c : text) {
      if (static_cast<unsigned char>(c) >= 0x80) {
        return err(absl::StatusCode::kInvalidArgument,
                   "header of a version " + std::to_string(major) +
                       ".0 file is not ASCII (only 3.0 allows UTF-8)");
      }
    }
  }
  auto header = ParseNpyHeaderDict(text);
  if (!header.ok()) return Annotate(header.status(), source);
  if (header->fortran_order) {
    return err(absl::StatusCode::kUnimplemented,
               "'fortran_order': True is not supported (only C order); save "
               "with np.ascontiguousarray");
  }
  if (!header->descr.empty() && header->descr[0] == '>') {
    return err(absl::StatusCode::kUnimplemented,
               "big-endian descr '" + header->descr +
                   "' is not supported (supported: " + SupportedDescrs() + ")");
  }
  const std::optional<ir::DType> dtype = DTypeFromDescr(header->descr);
  if (!dtype) {
    return err(absl::StatusCode::kUnimplemented,
               "unsupported descr '" + header->descr + "' (supported: " +
                   SupportedDescrs() + ")");
  }
  const auto numel = ir::CheckedNumElements(header->shape);
  const auto nbytes = numel ? ir::DTypeByteSize(*dtype, *numel) : std::nullopt;
  if (!nbytes) {
    return err(absl::StatusCode::kInvalidArgument,
               "'shape' " + ir::Shape::FromDims(header->shape).ToString() +
                   " overflows the element count");
  }
  NpyLayout layout;
  layout.descr = header->descr;
  layout.dtype = *dtype;
  layout.shape = header->shape;
  layout.data_offset = prefix + header_len;
  layout.nbytes = *nbytes;
  return layout;
}

absl::StatusOr<ir::Tensor> ParseNpy(const uint8_t* data, uint64_t size,
                                    const std::string& name,
                                    const std::string& source) {
  ASSIGN_OR_RETURN(NpyLayout layout, ParseNpyLayout(data, size, source));
  const uint64_t available = size - layout.data_offset;
  if (layout.nbytes > available) {
    return absl::OutOfRangeError(
        source + ": data truncated: shape " + ir::Shape::FromDims(layout.shape).ToString() +
        " of " + layout.descr + " needs " + std::to_string(layout.nbytes) +
        " bytes at offset " + std::to_string(layout.data_offset) + ", file has " +
        std::to_string(available));
  }
  if (layout.nbytes < available) {
    return absl::InvalidArgumentError(
        source + ": " + std::to_string(available - layout.nbytes) +
        " trailing bytes after the " + std::to_string(layout.nbytes) + " data bytes");
  }
  ir::Tensor t;
  t.name = name;
  t.dtype = layout.dtype;
  t.dims = layout.shape;
  const uint8_t* begin = data + layout.data_offset;
  try {
    t.data = ir::TensorData::Owned(std::vector<uint8_t>(begin, begin + layout.nbytes));
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(source + ": cannot allocate " +
                                        std::to_string(layout.nbytes) +
                                        " bytes for the array's copy");
  }
  t.provenance = ir::Provenance::FromFile(source, static_cast<int64_t>(layout.data_offset));
  return t;
}

absl::StatusOr<ir::Tensor> ReadNpy(const std::string& path) {
  ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> file, MappedFile::Open(path));
  return ParseNpy(file->data(), file->size(), Stem(path), path);
}

absl::StatusOr<std::string> EncodeNpyHeader(const ir::Tensor& tensor) {
  const std::optional<std::string> descr = DescrFromDType(tensor.dtype);
  if (!descr) {
    return absl::UnimplementedError(
        "tensor '" + tensor.name + "': dtype " +
        std::string(ir::DTypeName(tensor.dtype)) +
        " has no NumPy equivalent (supported: " + SupportedDescrs() + ")");
  }
  ASSIGN_OR_RETURN(uint64_t nbytes, tensor.ExpectedBytes());
  if (nbytes != tensor.data.size()) {
    return absl::InvalidArgumentError(
        "tensor '" + tensor.name + "': holds " + std::to_string(tensor.data.size()) +
        " bytes, dtype and shape need " + std::to_string(nbytes));
  }
  std::string dict = FormatNpyHeaderDict({*descr, false, tensor.dims});
  // Pad with spaces and a final '\n' so the data starts 64-byte aligned.
  int major = 1;
  uint64_t prefix = 10;
  uint64_t total = CheckedAlignUp(prefix + dict.size() + 1, 64).value();
  if (total - prefix > 0xFFFF) {
    major = 2;
    prefix = 12;
    total = CheckedAlignUp(prefix + dict.size() + 1, 64).value();
  }
  const uint64_t header_len = total - prefix;
  dict.append(header_len - dict.size() - 1, ' ');
  dict.push_back('\n');
  std::string out(kMagic, kMagicSize);
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  for (uint64_t i = 0; i < prefix - 8; ++i) {
    out.push_back(static_cast<char>((header_len >> (8 * i)) & 0xFF));
  }
  out += dict;
  return out;
}

absl::StatusOr<std::string> EncodeNpy(const ir::Tensor& tensor) {
  ASSIGN_OR_RETURN(std::string out, EncodeNpyHeader(tensor));
  out.append(reinterpret_cast<const char*>(tensor.data.data()), tensor.data.size());
  return out;
}

absl::Status WriteNpy(const std::string& path, const ir::Tensor& tensor) {
  ASSIGN_OR_RETURN(std::string header, EncodeNpyHeader(tensor));
  return WriteFileAtomically(
      path, {header, std::string_view(reinterpret_cast<const char*>(tensor.data.data()),
                                      tensor.data.size())});
}

absl::StatusOr<std::vector<ir::Tensor>> ReadNpyOrNpz(const std::string& path) {
  auto ends_with = [&](const char* ext) {
    const size_t n = std::strlen(ext);
    return path.size() >= n && path.compare(path.size() - n, n, ext) == 0;
  };
  if (ends_with(".npz")) return ReadNpz(path);
  if (ends_with(".npy")) {
    ASSIGN_OR_RETURN(ir::Tensor t, ReadNpy(path));
    std::vector<ir::Tensor> out;
    out.push_back(std::move(t));
    return out;
  }
  return absl::InvalidArgumentError(path + ": expected a .npy or .npz file");
}

}  // namespace slimpack::numpy

// Output preflight shared by every writer: parent checks with a real write
// probe, input/output identity by device and inode, free space, and the
// "replace only what we wrote, or with --force" rule for single files.
#include "support/output_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "nlohmann/json.hpp"
#include "support/atomic_file.h"
#include "support/file_type.h"

namespace slimpack::support {
namespace {

// Creates and removes "<dir>/.slimpack-probe-<pid>-<random>". Returns 0 on
// success, else the errno of the failed create.
int ProbeCreate(const std::string& dir) {
  std::random_device rd;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%08x%08x", rd(), rd());
  const std::string probe = (dir == "/" ? std::string("/") : dir + "/") +
                            ".slimpack-probe-" + std::to_string(::getpid()) +
                            "-" + hex;
  int fd;
  do {
    fd = ::open(probe.c_str(),
                O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  ::close(fd);
  ::unlink(probe.c_str());
  return 0;
}

// stat(2) of `path` (symlinks followed), or false if it does not exist.
bool Identify(const std::string& path, struct stat* st) {
  return ::stat(path.c_str(), st) == 0;
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// Stops at the top-level "format" member; every other event is accepted.
class FormatFinder : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit FormatFinder(std::string_view want) : want_(want) {}
  bool found() const { return found_; }

  bool null() override { return Value(); }
  bool boolean(bool) override { return Value(); }
  bool number_integer(number_integer_t) override { return Value(); }
  bool number_unsigned(number_unsigned_t) override { return Value(); }
  bool number_float(number_float_t, const string_t&) override { return Value(); }
  bool string(string_t& s) override {
    if (depth_ == 1 && format_key_) {
      found_ = s == want_;
      return false;  // decided: stop parsing
    }
    return Value();
  }
  bool binary(binary_t&) override { return Value(); }
  bool start_object(std::size_t) override {
    if (depth_ == 1 && format_key_) return false;  // "format" is not a string
    if (depth_ == 0 && seen_top_) return false;
    seen_top_ = true;
    ++depth_;
    format_key_ = false;
    return true;
  }
  bool key(string_t& k) override {
    format_key_ = depth_ == 1 && k == "format";
    return true;
  }
  bool end_object() override {
    --depth_;
    format_key_ = false;
    return depth_ > 0;  // the top-level object ended without "format"
  }
  bool start_array(std::size_t) override {
    if (depth_ == 0) return false;  // top level is not an object
    if (depth_ == 1 && format_key_) return false;
    ++depth_;
    format_key_ = false;
    return true;
  }
  bool end_array() override {
    --depth_;
    return true;
  }
  bool parse_error(std::size_t, const std::string&,
                   const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  bool Value() {
    if (depth_ == 0) return false;  // top level is not an object
    if (depth_ == 1 && format_key_) return false;  // "format" is not a string
    format_key_ = false;
    return true;
  }

  std::string_view want_;
  int depth_ = 0;
  bool seen_top_ = false;
  bool format_key_ = false;
  bool found_ = false;
};

}  // namespace

std::string NormalizeOutputPath(const std::string& output) {
  std::string out = output;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string ParentDirectory(const std::string& normalized) {
  size_t slash = normalized.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return normalized.substr(0, slash);
}

std::string BaseName(const std::string& normalized) {
  return normalized.substr(normalized.rfind('/') + 1);
}

absl::Status CheckParentWritable(const std::string& output) {
  const std::string out = NormalizeOutputPath(output);
  const std::string parent = ParentDirectory(out);
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0) {
    if (errno == ENOENT) {
      return absl::NotFoundError(out + ": parent directory '" + parent +
                                 "' does not exist");
    }
    return ErrnoToStatus(errno, out + ": parent directory '" + parent + "'");
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::InvalidArgumentError(out + ": parent '" + parent +
                                      "' is not a directory");
  }
  const int err = ProbeCreate(parent);
  if (err != 0) {
    return absl::PermissionDeniedError(
        out + ": directory '" + parent + "' is not writable (creating a file there failed: " +
        std::strerror(err) + ")");
  }
  return absl::OkStatus();
}

absl::Status CheckInputsOutsideOutput(const std::vector<std::string>& inputs,
                                      const std::string& output) {
  const std::string out = NormalizeOutputPath(output);
  struct stat out_st;
  if (!Identify(out, &out_st)) return absl::OkStatus();
  for (const std::string& input : inputs) {
    char resolved[PATH_MAX];
    if (input.empty() || !::realpath(input.c_str(), resolved)) continue;
    // From the input itself up to "/": any component that is the output
    // (same device and inode) means replacing the output destroys it.
    std::string p = resolved;
    for (;;) {
      struct stat st;
      if (Identify(p, &st) && SameFile(st, out_st)) {
        return absl::InvalidArgumentError(
            "input '" + input + "' " +
            (p == resolved ? std::string("is") : std::string("is inside")) +
            " the output '" + out + "'; write the output somewhere else");
      }
      if (p == "/") break;
      size_t slash = p.rfind('/');
      p = slash == 0 ? "/" : p.substr(0, slash);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOutputIsNotAnInput(const std::vector<std::string>& inputs,
                                     const std::string& output,
                                     std::string_view flag) {
  const std::string out = NormalizeOutputPath(output);
  struct stat out_st;
  if (!Identify(out, &out_st)) return absl::OkStatus();
  for (const std::string& input : inputs) {
    struct stat st;
    if (input.empty() || !Identify(input, &st) || !SameFile(st, out_st)) continue;
    return absl::InvalidArgumentError(
        std::string(flag) + " '" + output + "' is the input '" + input +
        "' (the same " + (S_ISDIR(st.st_mode) ? "directory" : "file") +
        ", by device and inode); refusing to overwrite what this command "
        "reads: choose another output");
  }
  return absl::OkStatus();
}

absl::Status CheckFreeSpace(const std::string& output, uint64_t bytes) {
  const std::string out = NormalizeOutputPath(output);
  const std::string parent = ParentDirectory(out);
  struct statvfs vfs;
  if (::statvfs(parent.c_str(), &vfs) != 0) return absl::OkStatus();
  const uint64_t block = vfs.f_frsize ? vfs.f_frsize : 1;
  const uint64_t blocks_needed = bytes / block + (bytes % block ? 1 : 0);
  if (vfs.f_bavail < blocks_needed) {
    if (vfs.f_blocks == 0) {
      // procfs, sysfs and the like report no storage at all: the real
      // problem is that nothing can be stored there.
      return absl::PermissionDeniedError(
          out + ": directory '" + parent +
          "' is on a file system without storage (such as /proc); it is "
          "not writable");
    }
    const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * block;
    return absl::ResourceExhaustedError(
        out + ": needs " + std::to_string(bytes) + " bytes but only " +
        std::to_string(avail) + " are free in '" + parent + "'");
  }
  return absl::OkStatus();
}

absl::StatusOr<ExistingOutput> PreflightOutputFile(const std::string& output,
                                                   bool force,
                                                   const OutputKind& kind) {
  if (output.empty() || output.back() == '/') {
    return absl::InvalidArgumentError("output '" + output +
                                      "': name a file to write, not a directory");
  }
  const std::string base = BaseName(output);
  if (base == "." || base == "..") {
    return absl::InvalidArgumentError("output '" + output + "': name a file to write");
  }
  if (absl::Status s = CheckParentWritable(output); !s.ok()) return s;
  struct stat st;
  if (::lstat(output.c_str(), &st) != 0) {
    if (errno == ENOENT) return ExistingOutput::kAbsent;
    return ErrnoToStatus(errno, output);
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::InvalidArgumentError(
        output + ": is a symbolic link; refusing to replace it (name the real file)");
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(output + ": is " + FileTypeName(st.st_mode) +
                                      ", not a regular file; refusing to replace it");
  }
  if (kind.written_by_us && kind.written_by_us(output)) return ExistingOutput::kOurs;
  if (!force) {
    return absl::AlreadyExistsError(output + ": exists and is not " + kind.description +
                                    "; pass --force to replace it");
  }
  return ExistingOutput::kReplaced;
}

bool JsonFileHasFormat(const std::string& path, std::string_view format) {
  constexpr size_t kMaxPrefix = 1 << 20;
  int fd;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return false;
  }
  std::string text;
  char buf[65536];
  while (text.size() < kMaxPrefix) {
    const size_t want = std::min(sizeof(buf), kMaxPrefix - text.size());
    ssize_t n = ::read(fd, buf, want);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  FormatFinder finder(format);
  nlohmann::json::sax_parse(text, &finder, nlohmann::json::input_format_t::json,
                            /*strict=*/false);
  return finder.found();
}

}  // namespace slimpack::support

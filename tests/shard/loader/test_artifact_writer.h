// A tiny test-only artifact writer: lays tensors out as spec.md section 7
// plans them, builds an editable manifest tree and writes shards and a
// sealed manifest, so tests can make valid artifacts and then corrupt them.
// Not the product writer (that lives in the converter).
#ifndef SLIMPACK_TESTS_SHARD_LOADER_TEST_ARTIFACT_WRITER_H_
#define SLIMPACK_TESTS_SHARD_LOADER_TEST_ARTIFACT_WRITER_H_

#include "tests/testing/temp_dir.h"
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/shard/loader/status.h"

namespace slimpack::loader::testing {

// A small editable JSON tree. Objects keep insertion order and are sorted
// on output (so the output is canonical); Raw() splices text verbatim, for
// values a well-behaved writer cannot produce (NaN, 1e999).
class J {
 public:
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kArray, kObject, kRaw };

  J() = default;
  J(bool b) : kind_(Kind::kBool), b_(b) {}                       // NOLINT
  J(int v) : kind_(Kind::kInt), i_(v) {}                         // NOLINT
  J(int64_t v) : kind_(Kind::kInt), i_(v) {}                     // NOLINT
  J(uint64_t v) : kind_(Kind::kInt), i_(static_cast<int64_t>(v)) {}  // NOLINT
  J(double v) : kind_(Kind::kDouble), d_(v) {}                   // NOLINT
  J(const char* s) : kind_(Kind::kString), s_(s) {}              // NOLINT
  J(std::string s) : kind_(Kind::kString), s_(std::move(s)) {}   // NOLINT
  static J Array(std::vector<J> items = {});
  static J Object();
  static J Raw(std::string text);

  Kind kind() const { return kind_; }
  // Object member (created as null if absent) / array element.
  J& operator[](const std::string& key);
  J& operator[](const char* key) { return (*this)[std::string(key)]; }
  J& operator[](size_t index) { return items_.at(index); }
  J& operator[](int index) { return items_.at(static_cast<size_t>(index)); }
  bool Has(const std::string& key) const;
  void Erase(const std::string& key);
  void Push(J v) { items_.push_back(std::move(v)); }
  size_t size() const { return kind_ == Kind::kObject ? members_.size() : items_.size(); }
  const std::string& str() const { return s_; }
  int64_t integer() const { return i_; }

  // nlohmann::json::dump(1)-style text: sorted keys, one-space indent.
  std::string Dump() const;

 private:
  void DumpTo(std::string* out, int indent) const;
  Kind kind_ = Kind::kNull;
  bool b_ = false;
  int64_t i_ = 0;
  double d_ = 0;
  std::string s_;
  std::vector<J> items_;
  std::vector<std::pair<std::string, J>> members_;
};

struct TestTensor {
  TestTensor() = default;
  TestTensor(std::string n, std::string dt, std::vector<uint64_t> s,
             std::vector<uint8_t> bytes, int64_t l = -1)
      : name(std::move(n)), dtype(std::move(dt)), shape(std::move(s)),
        data(std::move(bytes)), layer(l) {}

  std::string name;
  std::string dtype = "f32";
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;  // payload, exactly nbytes
  J layout;                   // null: {"kind": "plain"}
  int64_t layer = -1;
};

// Helpers for payloads.
std::vector<uint8_t> F32Bytes(const std::vector<float>& v);
// `n` bytes of a deterministic pattern seeded by `seed`.
std::vector<uint8_t> PatternBytes(uint64_t n, uint32_t seed);

struct TestArtifactSpec {
  std::vector<TestTensor> tensors;
  uint64_t shard_size_cap = 1 << 20;
  std::vector<std::pair<std::string, std::string>> carried_files;  // name, bytes
  J model;  // null: {"source_format": "safetensors"}
};

class TestArtifact {
 public:
  // Plans shards (spec.md section 7), fills shard bytes and the manifest.
  static TestArtifact Build(const TestArtifactSpec& spec);

  // Editable before Write.
  J manifest;
  std::vector<std::string> shard_files;   // names
  std::vector<std::string> shard_bytes;   // contents
  std::vector<std::pair<std::string, std::string>> carried_files;

  // Manifest text; with `seal`, manifest_sha256 is recomputed for the text.
  std::string ManifestText(bool seal = true) const;
  // Recomputes every shard's size and sha256 in `manifest` from shard_bytes.
  void RehashShards();
  // Writes all files into `dir` (which must exist).
  Status Write(const std::string& dir, bool seal = true) const;
};

// Replaces the manifest_sha256 value in manifest `text` with the correct
// self-hash (spec.md section 8); returns text unchanged if it has none.
std::string SealManifestText(std::string text);

using ::slimpack::testing::TempDir;  // tests/testing/temp_dir.h

// Whole-file helpers for tests.
std::string ReadFileOrDie(const std::string& path);
void WriteFileOrDie(const std::string& path, const std::string& bytes);

}  // namespace slimpack::loader::testing

#endif  // SLIMPACK_TESTS_SHARD_LOADER_TEST_ARTIFACT_WRITER_H_

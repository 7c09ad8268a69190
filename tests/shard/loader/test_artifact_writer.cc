// Test-only artifact writer (see the header). "OrDie" helpers abort on I/O
// failure: they only ever touch the test's own temporary directory.
#include "tests/shard/loader/test_artifact_writer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "formats/shard/format.h"
#include "formats/shard/loader/manifest.h"
#include "formats/shard/loader/sha256.h"

namespace slimpack::loader::testing {
namespace {

uint64_t AlignUp(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

void EscapeTo(const std::string& s, std::string* out) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': *out += "\\\""; break;
      case '\\': *out += "\\\\"; break;
      case '\b': *out += "\\b"; break;
      case '\f': *out += "\\f"; break;
      case '\n': *out += "\\n"; break;
      case '\r': *out += "\\r"; break;
      case '\t': *out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          *out += buf;
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

std::string DoubleText(double d) {
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof(buf), "%.*g", prec, d);
    if (std::strtod(buf, nullptr) == d) break;
  }
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

}  // namespace

J J::Array(std::vector<J> items) {
  J j;
  j.kind_ = Kind::kArray;
  j.items_ = std::move(items);
  return j;
}

J J::Object() {
  J j;
  j.kind_ = Kind::kObject;
  return j;
}

J J::Raw(std::string text) {
  J j;
  j.kind_ = Kind::kRaw;
  j.s_ = std::move(text);
  return j;
}

J& J::operator[](const std::string& key) {
  if (kind_ == Kind::kNull) kind_ = Kind::kObject;
  for (auto& m : members_) {
    if (m.first == key) return m.second;
  }
  members_.emplace_back(key, J());
  return members_.back().second;
}

bool J::Has(const std::string& key) const {
  for (const auto& m : members_) {
    if (m.first == key) return true;
  }
  return false;
}

void J::Erase(const std::string& key) {
  members_.erase(std::remove_if(members_.begin(), members_.end(),
                                [&](const auto& m) { return m.first == key; }),
                 members_.end());
}

std::string J::Dump() const {
  std::string out;
  DumpTo(&out, 0);
  out.push_back('\n');
  return out;
}

void J::DumpTo(std::string* out, int indent) const {
  const std::string pad(static_cast<size_t>(indent + 1), ' ');
  const std::string close_pad(static_cast<size_t>(indent), ' ');
  switch (kind_) {
    case Kind::kNull: *out += "null"; return;
    case Kind::kBool: *out += b_ ? "true" : "false"; return;
    case Kind::kInt: *out += std::to_string(i_); return;
    case Kind::kDouble: *out += DoubleText(d_); return;
    case Kind::kString: EscapeTo(s_, out); return;
    case Kind::kRaw: *out += s_; return;
    case Kind::kArray:
      if (items_.empty()) {
        *out += "[]";
        return;
      }
      *out += "[\n";
      for (size_t i = 0; i < items_.size(); ++i) {
        *out += pad;
        items_[i].DumpTo(out, indent + 1);
        *out += i + 1 < items_.size() ? ",\n" : "\n";
      }
      *out += close_pad + "]";
      return;
    case Kind::kObject: {
      if (members_.empty()) {
        *out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, J>*> sorted;
      for (const auto& m : members_) sorted.push_back(&m);
      std::stable_sort(sorted.begin(), sorted.end(),
                       [](auto* a, auto* b) { return a->first < b->first; });
      *out += "{\n";
      for (size_t i = 0; i < sorted.size(); ++i) {
        *out += pad;
        EscapeTo(sorted[i]->first, out);
        *out += ": ";
        sorted[i]->second.DumpTo(out, indent + 1);
        *out += i + 1 < sorted.size() ? ",\n" : "\n";
      }
      *out += close_pad + "}";
      return;
    }
  }
}

std::vector<uint8_t> F32Bytes(const std::vector<float>& v) {
  std::vector<uint8_t> out(v.size() * 4);
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());  // tests run on LE
  return out;
}

std::vector<uint8_t> PatternBytes(uint64_t n, uint32_t seed) {
  std::vector<uint8_t> out(n);
  uint32_t x = seed * 2654435761u + 12345u;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    out[i] = static_cast<uint8_t>(x >> 24);
  }
  return out;
}

TestArtifact TestArtifact::Build(const TestArtifactSpec& spec) {
  // Groups and order: spec.md section 7.
  std::vector<const TestTensor*> globals, layered;
  for (const TestTensor& t : spec.tensors) (t.layer < 0 ? globals : layered).push_back(&t);
  auto by_name = [](const TestTensor* a, const TestTensor* b) { return a->name < b->name; };
  std::sort(globals.begin(), globals.end(), by_name);
  std::stable_sort(layered.begin(), layered.end(), [](auto* a, auto* b) {
    return a->layer != b->layer ? a->layer < b->layer : a->name < b->name;
  });
  std::vector<std::vector<const TestTensor*>> groups;
  for (const TestTensor* t : globals) groups.push_back({t});
  for (const TestTensor* t : layered) {
    if (groups.empty() || groups.back().front()->layer != t->layer ||
        t->layer < 0) {
      groups.push_back({});
    }
    groups.back().push_back(t);
  }

  struct Placed {
    const TestTensor* t;
    uint32_t shard;
    uint64_t offset;
  };
  std::vector<Placed> placed;
  std::vector<uint64_t> shard_end;  // end of last payload per shard
  const uint64_t cap = spec.shard_size_cap;
  auto new_shard = [&] { shard_end.push_back(shard::kDataRegionOffset); };
  auto end_after = [](uint64_t e, const std::vector<const TestTensor*>& ts) {
    for (const TestTensor* t : ts) e = AlignUp(e, 64) + t->data.size();
    return AlignUp(e, 64);
  };
  auto place = [&](const TestTensor* t) {
    uint64_t off = AlignUp(shard_end.back(), 64);
    placed.push_back({t, static_cast<uint32_t>(shard_end.size() - 1), off});
    shard_end.back() = off + t->data.size();
  };
  for (const auto& g : groups) {
    if (shard_end.empty()) new_shard();
    if (end_after(shard_end.back(), g) <= cap) {
      for (auto* t : g) place(t);
      continue;
    }
    if (shard_end.back() > shard::kDataRegionOffset) new_shard();
    if (end_after(shard_end.back(), g) <= cap) {
      for (auto* t : g) place(t);
      continue;
    }
    for (const TestTensor* t : g) {
      if (shard_end.back() > shard::kDataRegionOffset &&
          end_after(shard_end.back(), {t}) > cap) {
        new_shard();
      }
      place(t);
      if (end_after(shard::kDataRegionOffset, {t}) > cap) new_shard();
    }
  }
  // A trailing shard opened after an oversized tensor may be empty.
  if (!shard_end.empty() && shard_end.back() == shard::kDataRegionOffset &&
      (placed.empty() || placed.back().shard + 1 == shard_end.size())) {
    shard_end.pop_back();
  }

  TestArtifact a;
  a.carried_files = spec.carried_files;
  for (size_t s = 0; s < shard_end.size(); ++s) {
    char name[32];
    std::snprintf(name, sizeof(name), "shard-%05zu.bin", s);
    a.shard_files.push_back(name);
    std::string bytes(AlignUp(shard_end[s], 64), '\0');
    shard::ShardHeader h{};
    std::memcpy(h.magic, shard::kShardMagic, 8);
    h.version_major = shard::kFormatVersionMajor;
    h.version_minor = shard::kFormatVersionMinor;
    h.header_size = shard::kShardHeaderSize;
    h.shard_index = static_cast<uint32_t>(s);
    h.file_size = bytes.size();
    std::memcpy(bytes.data(), &h, sizeof(h));  // tests run on little-endian hosts
    a.shard_bytes.push_back(std::move(bytes));
  }
  std::sort(placed.begin(), placed.end(), [](const Placed& x, const Placed& y) {
    if (x.shard != y.shard) return x.shard < y.shard;
    if (x.offset != y.offset) return x.offset < y.offset;
    if (x.t->data.size() != y.t->data.size()) return x.t->data.size() < y.t->data.size();
    return x.t->name < y.t->name;
  });

  J& m = a.manifest;
  m["format"] = "slimpack-shard";
  m["format_version"]["major"] = static_cast<int>(shard::kFormatVersionMajor);
  m["format_version"]["minor"] = static_cast<int>(shard::kFormatVersionMinor);
  m["required_features"] = J::Array();
  m["producer"]["name"] = "slimpack-test";
  m["producer"]["version"] = "0.0.0";
  m["producer"]["recipe"]["name"] = "test";
  m["producer"]["inputs"] = J::Array();
  if (spec.model.kind() == J::Kind::kNull) {
    m["model"]["source_format"] = "safetensors";
  } else {
    m["model"] = spec.model;
  }
  m["tensors"] = J::Array();
  for (const Placed& p : placed) {
    if (!p.t->data.empty()) {
      std::memcpy(a.shard_bytes[p.shard].data() + p.offset, p.t->data.data(),
                  p.t->data.size());
    }
    J t;
    t["name"] = p.t->name;
    t["dtype"] = p.t->dtype;
    J shape = J::Array();
    for (uint64_t d : p.t->shape) shape.Push(J(d));
    t["shape"] = shape;
    t["shard"] = static_cast<uint64_t>(p.shard);
    t["offset"] = p.offset;
    t["nbytes"] = static_cast<uint64_t>(p.t->data.size());
    if (p.t->layout.kind() == J::Kind::kNull) {
      t["layout"]["kind"] = "plain";
    } else {
      t["layout"] = p.t->layout;
    }
    if (p.t->layer >= 0) t["layer"] = p.t->layer;
    m["tensors"].Push(t);
  }
  m["shards"] = J::Array();
  for (size_t s = 0; s < a.shard_files.size(); ++s) {
    J sh;
    sh["file"] = a.shard_files[s];
    sh["index"] = static_cast<uint64_t>(s);
    m["shards"].Push(sh);
  }
  a.RehashShards();
  std::vector<std::pair<std::string, std::string>> carried = spec.carried_files;
  std::sort(carried.begin(), carried.end());
  m["carried_files"] = J::Array();
  for (const auto& [name, bytes] : carried) {
    J f;
    f["file"] = name;
    f["size"] = static_cast<uint64_t>(bytes.size());
    f["sha256"] = Sha256::HashHex(bytes);
    m["carried_files"].Push(f);
  }
  m["complete"] = true;
  m["manifest_sha256"] = std::string(64, '0');
  return a;
}

void TestArtifact::RehashShards() {
  for (size_t s = 0; s < shard_bytes.size(); ++s) {
    J& sh = manifest["shards"][s];
    sh["size"] = static_cast<uint64_t>(shard_bytes[s].size());
    sh["sha256"] = Sha256::HashHex(shard_bytes[s]);
  }
}

std::string SealManifestText(std::string text) {
  Result<std::string> hash = ComputeManifestSelfHash(text);
  if (!hash.ok()) return text;
  const std::string key = "\"manifest_sha256\": \"";
  size_t pos = text.find(key);
  if (pos == std::string::npos) return text;
  text.replace(pos + key.size(), 64, *hash);
  return text;
}

std::string TestArtifact::ManifestText(bool seal) const {
  std::string text = manifest.Dump();
  return seal ? SealManifestText(std::move(text)) : text;
}

Status TestArtifact::Write(const std::string& dir, bool seal) const {
  for (size_t s = 0; s < shard_files.size(); ++s) {
    WriteFileOrDie(dir + "/" + shard_files[s], shard_bytes[s]);
  }
  for (const auto& [name, bytes] : carried_files) WriteFileOrDie(dir + "/" + name, bytes);
  WriteFileOrDie(dir + "/manifest.json", ManifestText(seal));
  return OkStatus();
}

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::abort();
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFileOrDie(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

}  // namespace slimpack::loader::testing

// NameIndex: linear-probing hash table of tensor names.
#include <functional>

#include "formats/shard/loader/manifest.h"

namespace slimpack::loader {

void NameIndex::Reserve(size_t n) {
  size_t capacity = 16;
  while (capacity < 2 * n) capacity *= 2;
  if (capacity <= slots_.size()) return;
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot());
  size_ = 0;
  for (const Slot& s : old) {
    if (s.index >= 0) {
      int32_t unused;
      Insert(s.name, s.index, &unused);
    }
  }
}

void NameIndex::Grow() { Reserve(slots_.size()); }

bool NameIndex::Insert(std::string_view name, int32_t index, int32_t* existing) {
  if (2 * (size_ + 1) > slots_.size()) Grow();
  const size_t hash = std::hash<std::string_view>()(name);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.index < 0) {
      s = Slot{hash, name, index};
      ++size_;
      return true;
    }
    if (s.hash == hash && s.name == name) {
      *existing = s.index;
      return false;
    }
  }
}

int32_t NameIndex::Find(std::string_view name) const {
  if (slots_.empty()) return -1;
  const size_t hash = std::hash<std::string_view>()(name);
  const size_t mask = slots_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (s.index < 0) return -1;
    if (s.hash == hash && s.name == name) return s.index;
  }
}

}  // namespace slimpack::loader

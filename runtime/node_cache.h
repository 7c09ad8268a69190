// What a kernel derives from a node's constant inputs (initializers no
// graph input can override), kept for the life of the interpreter's plan
// instead of recomputed on every run: the W8A8 kernels keep their centred
// float weights here. One per plan step; thread-safe, since several runs
// of one interpreter may execute the same step at once.
#ifndef SLIMPACK_RUNTIME_NODE_CACHE_H_
#define SLIMPACK_RUNTIME_NODE_CACHE_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"

namespace slimpack::runtime {

class NodeCache {
 public:
  // The value stored under `key`, built by `build` on the first call (a
  // failed build stores nothing and returns its error). A kernel uses one
  // key per kind of value, and builds only from constant inputs, so the
  // value stays valid for every later run.
  template <typename T>
  absl::StatusOr<std::shared_ptr<const T>> GetOrBuild(
      int key, const std::function<absl::StatusOr<std::shared_ptr<const T>>()>& build) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = values_.find(key); it != values_.end()) {
      return std::static_pointer_cast<const T>(it->second);
    }
    absl::StatusOr<std::shared_ptr<const T>> built = build();
    if (built.ok()) values_[key] = *built;
    return built;
  }

 private:
  std::mutex mu_;
  std::map<int, std::shared_ptr<const void>> values_;
};

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_NODE_CACHE_H_

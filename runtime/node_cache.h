// What a kernel derives from a node's constant inputs (initializers no
// graph input can override), kept for the life of the interpreter's plan
// instead of recomputed on every run: the W8A8 kernels keep their centred
// float weights here. One per plan step; thread-safe, since several runs
// of one interpreter may execute the same step at once.
#ifndef SLIMPACK_RUNTIME_NODE_CACHE_H_
#define SLIMPACK_RUNTIME_NODE_CACHE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"

namespace slimpack::runtime {

// Bytes the node caches of one plan may hold together. Past it a value is
// built for its call and not kept: a W8A8 decoder's centred float weights
// would be four times its int8 ones, more memory than the model.
class CacheBudget {
 public:
  static constexpr int64_t kDefaultBytes = int64_t{256} << 20;
  explicit CacheBudget(int64_t bytes = kDefaultBytes) : left_(bytes) {}
  // Takes `bytes` from the budget if that many are left.
  bool Take(int64_t bytes) {
    int64_t left = left_.load();
    while (left >= bytes) {
      if (left_.compare_exchange_weak(left, left - bytes)) return true;
    }
    return false;
  }
  int64_t left() const { return left_.load(); }

 private:
  std::atomic<int64_t> left_;
};

class NodeCache {
 public:
  explicit NodeCache(std::shared_ptr<CacheBudget> budget) : budget_(std::move(budget)) {}

  // The value stored under `key`, built by `build` on the first call and
  // kept when the budget has T::bytes() left (otherwise built again on the
  // next call); a failed build stores nothing and returns its error. A
  // kernel uses one key per kind of value, and builds only from constant
  // inputs, so a kept value stays valid for every later run.
  // Whether a value of `bytes` built now would be kept: `key` holds one
  // already, or the budget has that much left. A kernel whose value is as
  // large as a weight asks first, and past the budget does its work without
  // building a copy only to drop it after the call.
  bool WouldKeep(int key, int64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    return values_.count(key) != 0 || (budget_ != nullptr && budget_->left() >= bytes);
  }

  template <typename T>
  absl::StatusOr<std::shared_ptr<const T>> GetOrBuild(
      int key, const std::function<absl::StatusOr<std::shared_ptr<const T>>()>& build) {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = values_.find(key); it != values_.end()) {
      return std::static_pointer_cast<const T>(it->second);
    }
    absl::StatusOr<std::shared_ptr<const T>> built = build();
    if (built.ok() && budget_ != nullptr && budget_->Take((*built)->bytes())) {
      values_[key] = *built;
    }
    return built;
  }

 private:
  std::shared_ptr<CacheBudget> budget_;
  std::mutex mu_;
  std::map<int, std::shared_ptr<const void>> values_;
};

}  // namespace slimpack::runtime

#endif  // SLIMPACK_RUNTIME_NODE_CACHE_H_

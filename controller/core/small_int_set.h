#pragma once

#include <algorithm>
#include <initializer_list>
#include <set>

#include "absl/container/inlined_vector.h"

namespace dcu::controller {

// A set of small ints (device indices, ports) for ScheduleNode: a sorted
// vector with room for 8 inline. A reconcile pass copies every node's
// summary and takes the devices and ports of every attempt into it; with
// std::set that was an allocation per element and per copy (a tenth of the
// controller's CPU at 10,000 nodes, BENCHMARKS.md), here it is none for
// nodes of up to 8 devices and instances.
class SmallIntSet {
 public:
  SmallIntSet() = default;
  SmallIntSet(std::initializer_list<int> values) {
    for (int v : values) insert(v);
  }
  explicit SmallIntSet(const std::set<int>& values) : items_(values.begin(), values.end()) {}

  // True when `v` was not there.
  bool insert(int v) {
    auto it = std::lower_bound(items_.begin(), items_.end(), v);
    if (it != items_.end() && *it == v) return false;
    items_.insert(it, v);
    return true;
  }
  template <typename It>
  void insert(It first, It last) {
    for (; first != last; ++first) insert(*first);
  }
  // How many were removed (0 or 1), as std::set::erase.
  size_t erase(int v) {
    auto it = std::lower_bound(items_.begin(), items_.end(), v);
    if (it == items_.end() || *it != v) return 0;
    items_.erase(it);
    return 1;
  }
  size_t count(int v) const { return std::binary_search(items_.begin(), items_.end(), v) ? 1 : 0; }
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  bool operator==(const SmallIntSet& other) const { return items_ == other.items_; }

 private:
  absl::InlinedVector<int, 8> items_;
};

}  // namespace dcu::controller

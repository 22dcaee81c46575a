#pragma once
// A FIFO whose slots are reused in place: once it has grown to the depth in
// use, pushing and popping allocate nothing (std::deque allocates and frees a
// node every few elements), and a slot's members keep their storage between
// uses.
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace vkml {

template <typename T>
class Ring {
 public:
  // Slots made up front: no allocation until `capacity` elements are held.
  explicit Ring(size_t capacity = 0) : slots_(capacity) {}
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  T& front() { return slots_[head_]; }
  T& back() { return slots_[index(count_ - 1)]; }
  // Appends the next slot, as its previous occupant left it.
  T& push_back() {
    if (count_ == slots_.size()) grow();
    ++count_;
    return back();
  }
  void pop_front() {
    head_ = index(1);
    --count_;
  }

 private:
  size_t index(size_t i) const { return (head_ + i) % slots_.size(); }
  void grow() {
    std::vector<T> bigger(std::max<size_t>(8, slots_.size() * 2));
    for (size_t i = 0; i < count_; ++i) bigger[i] = std::move(slots_[index(i)]);
    slots_.swap(bigger);
    head_ = 0;
  }

  std::vector<T> slots_;
  size_t head_ = 0, count_ = 0;
};

}  // namespace vkml

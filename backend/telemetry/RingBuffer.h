// RingBuffer.h — a fixed-capacity ring, allocated once: push() overwrites the oldest element
// when full and never allocates, so the sampler's steady state allocates nothing per metric.
// Not synchronised: the Sampler guards its rings with its own mutex.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace lorascope::telemetry {

template <typename T>
class RingBuffer {
 public:
  explicit RingBuffer(std::size_t capacity) : slots_(capacity) {
    if (capacity == 0) {
      throw std::invalid_argument("RingBuffer capacity must be at least 1");
    }
  }

  void push(const T& value) {
    slots_[next_] = value;
    next_ = (next_ + 1) % slots_.size();
    if (size_ < slots_.size()) {
      ++size_;
    }
  }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return slots_.size(); }
  bool empty() const { return size_ == 0; }

  // i = 0 is the oldest element kept.
  const T& at(std::size_t i) const {
    if (i >= size_) {
      throw std::out_of_range("RingBuffer index past the elements kept");
    }
    return slots_[(next_ + slots_.size() - size_ + i) % slots_.size()];
  }
  const T& newest() const { return at(size_ - 1); }

  // Oldest first, into `out` (cleared first; reuse it to avoid allocating per tick).
  void copyTo(std::vector<T>& out) const {
    out.clear();
    for (std::size_t i = 0; i < size_; ++i) {
      out.push_back(at(i));
    }
  }

 private:
  std::vector<T> slots_;
  std::size_t next_ = 0;
  std::size_t size_ = 0;
};

}  // namespace lorascope::telemetry

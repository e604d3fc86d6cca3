// hip/OpTimer.cpp — per-op timing in the hip flavours: the event brackets and their sums (the
// on/off flag is in ../OpTiming.cpp, shared with the cpu flavour).
#include "runtime/OpTiming.h"

#include <map>
#include <mutex>
#include <stdexcept>

#include "runtime/hip/GpuLaunch.h"  // defines: recordOpStart, recordOpEnd

namespace lorascope::runtime::gpu {
namespace {

struct Bracket {
  const char* op = nullptr;     // a string literal (LaunchControl::enterOp's contract)
  const char* scope = nullptr;  // the launching thread's OpTimingScope, or nullptr
  hipEvent_t start = nullptr;
  hipEvent_t end = nullptr;  // nullptr while open, and for ever when the launch failed
};

class OpTimer {
 public:
  ~OpTimer() {
    for (hipEvent_t event : free_) {
      (void)hipEventDestroy(event);
    }
    for (const Bracket& bracket : brackets_) {
      (void)hipEventDestroy(bracket.start);
      if (bracket.end != nullptr) {
        (void)hipEventDestroy(bracket.end);
      }
    }
  }

  hipError_t start(const char* op, hipStream_t stream) {
    std::lock_guard lock(mutex_);
    hipEvent_t event = nullptr;
    if (const hipError_t error = take(event); error != hipSuccess) {
      return error;
    }
    brackets_.push_back({op, currentOpTimingScope(), event, nullptr});
    open_ = brackets_.size() - 1;
    return hipEventRecord(event, stream);
  }

  hipError_t end(hipStream_t stream) {
    std::lock_guard lock(mutex_);
    if (open_ >= brackets_.size()) {
      return hipSuccess;  // timing was switched on between this launch's two hooks
    }
    hipEvent_t event = nullptr;
    if (const hipError_t error = take(event); error != hipSuccess) {
      return error;
    }
    brackets_[open_].end = event;
    open_ = kNone;
    return hipEventRecord(event, stream);
  }

  std::vector<OpTime> collect() {
    std::lock_guard lock(mutex_);
    std::map<std::string, OpTime> byOp;
    std::string failure;
    for (const Bracket& bracket : brackets_) {
      if (bracket.end != nullptr && failure.empty()) {
        const std::string name =
            bracket.scope != nullptr ? std::string(bracket.scope) + "/" + bracket.op : bracket.op;
        float ms = 0.0f;
        hipError_t error = hipEventSynchronize(bracket.end);
        if (error == hipSuccess) {
          error = hipEventElapsedTime(&ms, bracket.start, bracket.end);
        }
        if (error != hipSuccess) {
          failure = "op timing of " + name + ": " + hipGetErrorName(error) + " (" +
                    hipGetErrorString(error) + ")";
        }
        OpTime& sum = byOp[name];
        sum.op = name;
        sum.launches += 1;
        sum.milliseconds += ms;
      }
      free_.push_back(bracket.start);
      if (bracket.end != nullptr) {
        free_.push_back(bracket.end);
      }
    }
    brackets_.clear();
    open_ = kNone;
    if (!failure.empty()) {
      throw std::runtime_error(failure);
    }
    std::vector<OpTime> out;
    out.reserve(byOp.size());
    for (auto& entry : byOp) {
      out.push_back(std::move(entry.second));
    }
    return out;
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  // An event from the pool, or a new one (with timing: the default flags).
  hipError_t take(hipEvent_t& event) {
    if (!free_.empty()) {
      event = free_.back();
      free_.pop_back();
      return hipSuccess;
    }
    return hipEventCreate(&event);
  }

  std::mutex mutex_;
  std::vector<Bracket> brackets_;  // in launch order since the last collect()
  std::size_t open_ = kNone;       // the bracket between its launch's two hooks
  std::vector<hipEvent_t> free_;
};

OpTimer& timer() {
  static OpTimer instance;
  return instance;
}

}  // namespace

std::vector<OpTime> takeOpTimes() {
  return timer().collect();
}

hipError_t recordOpStart(const char* op, hipStream_t stream) {
  return timer().start(op, stream);
}

hipError_t recordOpEnd(hipStream_t stream) {
  return timer().end(stream);
}

}  // namespace lorascope::runtime::gpu

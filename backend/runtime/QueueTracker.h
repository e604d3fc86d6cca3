// QueueTracker.h — queue depth per stream: every launch records a pooled event; a sampler pops
// the completed ones (streams run in order, so completion is a prefix); depth = submitted −
// completed. The same event pattern PyTorch's allocator uses to know when a block is free.
//
// A reading at one instant misses a short step: on the H100 a B8 x S512 step of a 0.5B model
// queued ~700 launches within 60 ms and drained them within 90 ms, while the engine spent the
// rest of its ~700 ms step cycle on the host (the state mirror), so 2.5 readings a second read 0
// almost every time. So poll() is called often (the engine's sampler: every few ms, a handful of
// event queries) and sample() reports, besides the depth now, the peak: the most launches in
// flight at any poll since the previous sample().
//
// Events go through the EventApi seam: HIP events in the hip flavours, a fake in tests. Without an
// EventApi (cpu flavour) every submission counts as completed at once.
// Thread-safe: launches call onSubmit() on the training thread while the sampler calls sample().
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace lorascope::runtime {

using StreamHandle = std::uintptr_t;          // hipStream_t as a number
using EventHandle = std::uintptr_t;           // hipEvent_t as a number
using NowMs = std::function<std::int64_t()>;  // injectable monotonic clock, milliseconds
NowMs steadyClockMs();

class EventApi {
 public:
  enum class State { Complete, Pending, Failed };
  virtual ~EventApi() = default;
  virtual EventHandle create() = 0;                                 // throws on failure
  virtual void record(EventHandle event, StreamHandle stream) = 0;  // throws on failure
  virtual State query(EventHandle event, std::string& errorText) = 0;
  virtual void destroy(EventHandle event) noexcept = 0;
};

struct PendingOp {
  std::string op;
  std::uint64_t sequence = 0;  // 1-based submission number on its stream
  std::int64_t submittedAtMs = 0;
};

struct StreamQueueSample {
  StreamHandle stream = 0;
  std::string name;               // nameStream()'s name, else "stream N" in order of first use
  std::uint64_t submitted = 0;    // cumulative count
  std::uint64_t completed = 0;    // cumulative count
  std::uint64_t depth = 0;        // submitted - completed
  std::uint64_t peak = 0;         // the most in flight at a poll since the previous sample()
  std::optional<PendingOp> head;  // the oldest op not known to be complete
  std::string error;  // non-empty when an event query failed (the GPU context is likely lost)
};

class QueueTracker {
 public:
  explicit QueueTracker(std::shared_ptr<EventApi> events = nullptr, NowMs nowMs = steadyClockMs());
  ~QueueTracker();
  QueueTracker(const QueueTracker&) = delete;
  QueueTracker& operator=(const QueueTracker&) = delete;

  void onSubmit(StreamHandle stream, const char* op);
  // A name for the charts and hang reports ("compute"); before or after its first submission.
  void nameStream(StreamHandle stream, std::string name);
  // The stream is gone (destroyed with its backend): no more samples of it; its pending events
  // go back to the pool.
  void forgetStream(StreamHandle stream);
  // Pops completed events on every stream and notes each stream's depth towards its peak. Cheap
  // (one event query per stream and per completed launch): call it every few milliseconds.
  void poll();
  // poll(), then the per-stream counts; starts the next peak window at the depth now.
  std::vector<StreamQueueSample> sample();
  std::uint64_t depth(StreamHandle stream) const;
  // The oldest pending op over all streams (for the watchdog).
  std::optional<PendingOp> oldestPending() const;
  // When an event last completed; the tracker's creation time until one has.
  std::int64_t lastCompletionMs() const;
  std::size_t pooledEventCount() const;  // events created so far (the pool's size)
  // The longest an op of this name has been seen at the head of its stream: from when it was
  // submitted or its predecessor completed (the later) to when its completion was seen. An upper
  // bound of its run time, coarse by the sampling period; 0 for an op never seen to complete.
  std::int64_t longestServiceMs(const std::string& op) const;

 private:
  struct Pending {
    PendingOp op;
    EventHandle event = 0;
  };
  struct Stream {
    std::string name;
    std::int64_t lastCompletionMs = 0;  // when this stream's latest completion was seen
    std::uint64_t submitted = 0;
    std::uint64_t completed = 0;
    std::uint64_t peak = 0;  // since the previous sample()
    std::deque<Pending> pending;
    std::string error;
  };

  const std::shared_ptr<EventApi> events_;
  const NowMs nowMs_;
  mutable std::mutex mutex_;
  std::map<StreamHandle, Stream> streams_;
  std::vector<EventHandle> freeEvents_;
  std::size_t createdEvents_ = 0;
  std::size_t streamsSeen_ = 0;
  std::int64_t lastCompletionMs_ = 0;
  std::map<std::string, std::int64_t, std::less<>> longestServiceMs_;
  Stream& stream(StreamHandle handle);  // caller holds mutex_
  void popCompleted(Stream& s);         // caller holds mutex_; updates s.peak
};

}  // namespace lorascope::runtime

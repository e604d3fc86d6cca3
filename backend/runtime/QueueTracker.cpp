// QueueTracker.cpp — event pool, submission counting and completion popping.
#include "runtime/QueueTracker.h"

#include <algorithm>
#include <chrono>

namespace lorascope::runtime {

NowMs steadyClockMs() {
  return [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
}

QueueTracker::QueueTracker(std::shared_ptr<EventApi> events, NowMs nowMs)
    : events_(std::move(events)), nowMs_(std::move(nowMs)), lastCompletionMs_(nowMs_()) {}

QueueTracker::~QueueTracker() {
  if (!events_) {
    return;
  }
  for (auto& [handle, stream] : streams_) {
    for (const Pending& p : stream.pending) {
      events_->destroy(p.event);
    }
  }
  for (const EventHandle event : freeEvents_) {
    events_->destroy(event);
  }
}

QueueTracker::Stream& QueueTracker::stream(StreamHandle handle) {
  auto [it, inserted] = streams_.try_emplace(handle);
  if (inserted) {
    it->second.name = "stream " + std::to_string(++streamsSeen_);
  }
  return it->second;
}

void QueueTracker::nameStream(StreamHandle handle, std::string name) {
  const std::lock_guard lock(mutex_);
  stream(handle).name = std::move(name);
}

void QueueTracker::forgetStream(StreamHandle handle) {
  const std::lock_guard lock(mutex_);
  const auto it = streams_.find(handle);
  if (it == streams_.end()) {
    return;
  }
  for (const Pending& p : it->second.pending) {
    freeEvents_.push_back(p.event);
  }
  streams_.erase(it);
}

void QueueTracker::onSubmit(StreamHandle handle, const char* op) {
  const std::lock_guard lock(mutex_);
  Stream& s = stream(handle);
  ++s.submitted;
  if (!events_) {
    ++s.completed;  // no device: the op ran on the host before we got here
    lastCompletionMs_ = nowMs_();
    return;
  }
  EventHandle event = 0;
  if (!freeEvents_.empty()) {
    event = freeEvents_.back();
    freeEvents_.pop_back();
  } else {
    event = events_->create();
    ++createdEvents_;
  }
  try {
    events_->record(event, handle);
  } catch (...) {
    freeEvents_.push_back(event);
    --s.submitted;
    throw;
  }
  s.pending.push_back({{op, s.submitted, nowMs_()}, event});
}

void QueueTracker::popCompleted(Stream& s) {
  while (!s.pending.empty() && events_) {
    std::string errorText;
    const EventApi::State state = events_->query(s.pending.front().event, errorText);
    if (state == EventApi::State::Pending) {
      break;
    }
    if (state == EventApi::State::Failed) {
      s.error = errorText;
      break;
    }
    const std::int64_t now = nowMs_();
    const PendingOp& done = s.pending.front().op;
    const std::int64_t service = now - std::max(done.submittedAtMs, s.lastCompletionMs);
    auto longest = longestServiceMs_.find(done.op);
    if (longest == longestServiceMs_.end()) {
      longestServiceMs_.emplace(done.op, service);
    } else {
      longest->second = std::max(longest->second, service);
    }
    freeEvents_.push_back(s.pending.front().event);
    s.pending.pop_front();
    ++s.completed;
    s.lastCompletionMs = now;
    lastCompletionMs_ = now;
  }
  // After popping: the launches still in flight at this instant (counting the ones that completed
  // since the previous poll would turn a host-bound run, one launch in flight at a time, into a
  // deep queue).
  s.peak = std::max(s.peak, s.submitted - s.completed);
}

void QueueTracker::poll() {
  const std::lock_guard lock(mutex_);
  for (auto& [handle, s] : streams_) {
    popCompleted(s);
  }
}

std::vector<StreamQueueSample> QueueTracker::sample() {
  const std::lock_guard lock(mutex_);
  std::vector<StreamQueueSample> out;
  for (auto& [handle, s] : streams_) {
    popCompleted(s);
    const std::uint64_t depth = s.submitted - s.completed;
    StreamQueueSample sample{handle, s.name, s.submitted,  s.completed,
                             depth,  s.peak, std::nullopt, s.error};
    if (!s.pending.empty()) {
      sample.head = s.pending.front().op;
    }
    s.peak = depth;
    out.push_back(std::move(sample));
  }
  return out;
}

std::uint64_t QueueTracker::depth(StreamHandle stream) const {
  const std::lock_guard lock(mutex_);
  const auto it = streams_.find(stream);
  return it == streams_.end() ? 0 : it->second.submitted - it->second.completed;
}

std::optional<PendingOp> QueueTracker::oldestPending() const {
  const std::lock_guard lock(mutex_);
  std::optional<PendingOp> oldest;
  for (const auto& [handle, s] : streams_) {
    if (!s.pending.empty() &&
        (!oldest || s.pending.front().op.submittedAtMs < oldest->submittedAtMs)) {
      oldest = s.pending.front().op;
    }
  }
  return oldest;
}

std::int64_t QueueTracker::lastCompletionMs() const {
  const std::lock_guard lock(mutex_);
  return lastCompletionMs_;
}

std::int64_t QueueTracker::longestServiceMs(const std::string& op) const {
  const std::lock_guard lock(mutex_);
  const auto it = longestServiceMs_.find(op);
  return it == longestServiceMs_.end() ? 0 : it->second;
}

std::size_t QueueTracker::pooledEventCount() const {
  const std::lock_guard lock(mutex_);
  return createdEvents_;
}

}  // namespace lorascope::runtime

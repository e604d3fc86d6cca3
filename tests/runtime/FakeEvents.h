// FakeEvents.h — an EventApi whose events the test completes by hand (in submission order, like
// a stream), and a clock the test advances.
#pragma once

#include <map>

#include "runtime/QueueTracker.h"

namespace lorascope::runtime::testing {

class FakeEvents final : public EventApi {
 public:
  EventHandle create() override {
    ++created;
    return nextHandle++;
  }
  void record(EventHandle event, StreamHandle stream) override {
    recordedOn[event] = stream;
    submissionOf[event] = ++submissions[stream];
  }
  State query(EventHandle event, std::string& errorText) override {
    if (failing) {
      errorText = "hipErrorIllegalAddress: an illegal memory access was encountered";
      return State::Failed;
    }
    const StreamHandle stream = recordedOn.at(event);
    return submissionOf.at(event) <= finished[stream] ? State::Complete : State::Pending;
  }
  void destroy(EventHandle) noexcept override { ++destroyed; }

  // The "GPU" finished everything submitted on `stream` up to submission number n.
  void finishUpTo(StreamHandle stream, std::uint64_t n) { finished[stream] = n; }
  void finishAll(StreamHandle stream) { finished[stream] = submissions[stream]; }

  EventHandle nextHandle = 1;
  int created = 0;
  int destroyed = 0;
  bool failing = false;
  std::map<EventHandle, StreamHandle> recordedOn;
  std::map<EventHandle, std::uint64_t> submissionOf;
  std::map<StreamHandle, std::uint64_t> submissions;
  std::map<StreamHandle, std::uint64_t> finished;
};

struct FakeClock {
  std::int64_t nowMs = 1000;
  NowMs fn() {
    return [this] { return nowMs; };
  }
};

}  // namespace lorascope::runtime::testing

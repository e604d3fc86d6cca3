// EventLog.h — test helper: a HostListener that records what a backend host reports, from any
// of its threads, for the test's thread to read (QTRY_VERIFY polls it).
#pragma once

#include <mutex>
#include <thread>
#include <vector>

#include "engine/EngineHost.h"

namespace lorascope::testing {

class EventLog {
 public:
  engine::HostListener listener() {
    return {[this](const engine::TimedEvent& e) {
              const std::lock_guard lock(mutex_);
              events_.push_back(e);
              threads_.push_back(std::this_thread::get_id());
            },
            [this](bool connected) {
              const std::lock_guard lock(mutex_);
              connected_.push_back(connected);
            }};
  }

  std::vector<engine::TimedEvent> events() const {
    const std::lock_guard lock(mutex_);
    return events_;
  }
  std::vector<std::thread::id> threads() const {
    const std::lock_guard lock(mutex_);
    return threads_;
  }
  std::vector<bool> connectedChanges() const {
    const std::lock_guard lock(mutex_);
    return connected_;
  }
  template <typename T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const engine::TimedEvent& e : events()) {
      if (const auto* t = std::get_if<T>(&e.event))
        out.push_back(*t);
    }
    return out;
  }
  bool hasState(engine::RunState state) const {
    for (const engine::StateEvent& s : all<engine::StateEvent>()) {
      if (s.state == state)
        return true;
    }
    return false;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<engine::TimedEvent> events_;
  std::vector<std::thread::id> threads_;
  std::vector<bool> connected_;
};

}  // namespace lorascope::testing

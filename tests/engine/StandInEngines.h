// StandInEngines.h — engines for the Supervisor's tests: each records what the supervisor sent it
// and did to it (killed, input closed), and the test reports events and exits in its name
// (Supervisor::engineEvent, engineExited). No processes, no threads.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/Supervisor.h"

namespace lorascope::test {

// What the supervisor did to one stand-in engine.
struct EngineRecord {
  int id = 0;
  std::map<std::string, std::string> environment;
  std::vector<engine::Command> sent;
  bool killed = false;
  bool inputClosed = false;
  bool connected = true;
};

class FakeEngine : public engine::SupervisableHost {
 public:
  explicit FakeEngine(std::shared_ptr<EngineRecord> record) : record_(std::move(record)) {}
  void send(const engine::Command& command) override { record_->sent.push_back(command); }
  bool isConnected() const override { return record_->connected; }
  void closeInput() override { record_->inputClosed = true; }
  void kill() override { record_->killed = true; }
  std::int64_t processId() const override { return 1000 + record_->id; }

 private:
  std::shared_ptr<EngineRecord> record_;
};

class FakeLauncher : public engine::EngineLauncher {
 public:
  std::unique_ptr<engine::SupervisableHost> launch(
      int engineId, const std::map<std::string, std::string>& environment,
      const profiles::EngineLocation&) override {
    auto record = std::make_shared<EngineRecord>();
    record->id = engineId;
    record->environment = environment;
    engines.push_back(record);
    return std::make_unique<FakeEngine>(record);
  }
  std::unique_ptr<engine::RunFolderLock> holdRunFolder(const nlohmann::json& start) override {
    return lockRuns ? engine::RunFolderLock::take(start) : nullptr;
  }
  std::vector<std::shared_ptr<EngineRecord>> engines;
  bool lockRuns = false;  // hold the runs' locks, as the launcher of child processes does
};

// Every event of type T among `published`, in order.
template <typename T>
std::vector<T> eventsOf(const std::vector<engine::TimedEvent>& published) {
  std::vector<T> out;
  for (const engine::TimedEvent& e : published) {
    if (const auto* t = std::get_if<T>(&e.event))
      out.push_back(*t);
  }
  return out;
}

// What a Supervisor under test is given and what it publishes: the manual clock, the stand-in
// engines' launcher and the events (a test's rig derives from it and adds its supervisor).
struct SupervisorRigBase {
  template <typename T>
  std::vector<T> all() const {
    return eventsOf<T>(published);
  }

  std::int64_t nowMs = 0;
  FakeLauncher launcher;
  std::vector<engine::TimedEvent> published;
};

}  // namespace lorascope::test

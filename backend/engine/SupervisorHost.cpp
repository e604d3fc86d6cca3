// engine/SupervisorHost.cpp — one thread serves the supervisor: tasks in order, hang deadlines.
#include "engine/SupervisorHost.h"

#include <chrono>

namespace lorascope::engine {

// Child processes whose reports become tasks of the supervisor's thread.
class SupervisorHost::ProcessLauncher : public EngineLauncher {
 public:
  ProcessLauncher(SupervisorHost& owner, std::string program)
      : owner_(owner), program_(std::move(program)) {}

  std::unique_ptr<SupervisableHost> launch(int engineId,
                                           const std::map<std::string, std::string>& environment,
                                           const profiles::EngineLocation& location) override {
    SupervisorHost& owner = owner_;
    HostListener listener{
        [&owner, engineId](const TimedEvent& e) {
          owner.post([&owner, engineId, e] { owner.supervisor_->engineEvent(engineId, e); });
        },
        [&owner, engineId](bool connected) {
          owner.post([&owner, engineId, connected] {
            owner.supervisor_->engineConnected(engineId, connected);
          });
        }};
    auto host = std::make_unique<IsolatedHost>(
        program_, environment, std::move(listener),
        [&owner, engineId](const EngineExit& exit) {
          owner.post([&owner, engineId, exit] { owner.supervisor_->engineExited(engineId, exit); });
        },
        location);
    host->start();
    return host;
  }

  // The engines are this process's children: it holds their run's lock across their restarts.
  std::unique_ptr<RunFolderLock> holdRunFolder(const nlohmann::json& start) override {
    return RunFolderLock::take(start);
  }

 private:
  SupervisorHost& owner_;
  std::string program_;
};

SupervisorHost::SupervisorHost(std::string program, profiles::Profile profile,
                               SupervisorPolicy policy, HostListener listener)
    : program_(std::move(program)), listener_(std::move(listener)) {
  launcher_ = std::make_unique<ProcessLauncher>(*this, program_);
  supervisor_ = std::make_unique<Supervisor>(
      *launcher_, std::move(profile), policy,
      [this](const TimedEvent& e) { outbox_.emplace_back(e); },
      [this](bool connected) { outbox_.emplace_back(connected); });
  post([this] { supervisor_->start(); });
  thread_ = std::thread([this] { loop(); });
}

SupervisorHost::~SupervisorHost() {
  {
    const std::lock_guard lock(queueMutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void SupervisorHost::post(std::function<void()> task) {
  {
    const std::lock_guard lock(queueMutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void SupervisorHost::send(const Command& command) {
  post([this, command] { supervisor_->send(command); });
}

void SupervisorHost::setClimbLadder(bool climb) {
  post([this, climb] { supervisor_->setClimbLadder(climb); });
}

void SupervisorHost::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(queueMutex_);
      while (!stopping_ && tasks_.empty()) {
        const std::optional<std::int64_t> deadline = supervisor_->hangDeadlineMs();
        if (!deadline) {
          wake_.wait(lock);
          continue;
        }
        const std::int64_t left = *deadline - supervisor_->elapsedMs();
        if (left <= 0) {
          task = [this] { supervisor_->checkHang(); };
          break;
        }
        wake_.wait_for(lock, std::chrono::milliseconds(left));
      }
      if (stopping_)
        break;
      if (!task) {
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
    }
    task();
    supervisor_->checkHang();  // also while reports keep coming (an engine hung but talking)
    connected_ = supervisor_->isConnected();
    rung_ = supervisor_->rung();
    restarts_ = supervisor_->restarts();
    processId_ = supervisor_->engineProcessId();
    std::vector<Report> reports;
    reports.swap(outbox_);
    for (const Report& report : reports) {
      if (const auto* event = std::get_if<TimedEvent>(&report)) {
        listener_.event(*event);
      } else if (listener_.connectedChanged) {
        listener_.connectedChanged(std::get<bool>(report));
      }
    }
  }
  // The engine shuts down here, while its reports can still be queued (they are not served).
  supervisor_->releaseEngine().reset();  // rank 0 first: it checkpoints as its input ends
  supervisor_->releaseRanks();           // then a group's other ranks
  connected_ = false;
  processId_ = 0;
}

}  // namespace lorascope::engine

// test_engine.cpp — the engine loop with a small job: lifecycle events, commands applied at step
// boundaries, pause/stop noticed within one op, refusals reported as error events; the sampler
// thread's readings arriving while a step is stuck, and its hang report published once.
#include "TestRunner.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "engine/Engine.h"

using namespace lorascope::engine;

namespace {

// A job of `totalSteps` steps, each made of `opsPerStep` ops that poll the cancel flag.
class CountingJob : public EngineJob {
 public:
  CountingJob(int totalSteps, int opsPerStep) : totalSteps_(totalSteps), opsPerStep_(opsPerStep) {}

  std::optional<StepEvent> runStep(const CancelFlag& cancel) override {
    if (stuck) {  // a step that hangs until the test lets it go
      std::unique_lock lock(stuckMutex_);
      stuckWake_.wait(lock, [this] { return !stuck; });
    }
    for (int op = 0; op < opsPerStep_; ++op) {
      if (cancel.raised()) {
        ++cancelledSteps;
        return std::nullopt;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // one "op" of work
    }
    ++done_;
    return StepEvent{done_, 10.0 / static_cast<double>(done_), 1e-3, 1.0, 100.0, microBatch_, 1};
  }
  bool finished() const override { return done_ >= totalSteps_; }
  std::int64_t completedSteps() const override { return done_; }
  std::string applyToggle(Toggle toggle, const nlohmann::json& value) override {
    if (toggle == Toggle::GemmBackend)
      throw std::runtime_error("the CPU backend has no GEMM choice");
    if (toggle == Toggle::MicroBatch)
      microBatch_ = value.get<int>();
    return {};
  }
  CheckpointEvent checkpoint() override { return {"ckpt/step-" + std::to_string(done_), done_}; }
  std::optional<SnapshotEvent> snapshot() override { return std::nullopt; }
  std::optional<MemoryEvent> memory() override { return std::nullopt; }
  InstrumentEvents sampleInstruments() override {
    InstrumentEvents out;
    MemoryEvent memory;
    memory.allocatedBytes = static_cast<std::uint64_t>(++samples);
    out.memory = memory;
    if (stuck && reportHang) {
      out.hang = ErrorEvent{
          "hang", "attention_backward", 0, "hang in step 1: 'attention_backward'", "", false};
    }
    return out;
  }
  void pollInstruments() override { ++polls; }
  void release() {
    {
      const std::lock_guard lock(stuckMutex_);
      stuck = false;
    }
    stuckWake_.notify_all();
  }

  int cancelledSteps = 0;
  std::atomic<bool> stuck{false};
  std::atomic<bool> reportHang{false};
  std::atomic<int> samples{0};
  std::atomic<int> polls{0};

 private:
  int totalSteps_;
  int opsPerStep_;
  std::int64_t done_ = 0;
  int microBatch_ = 1;
  std::mutex stuckMutex_;
  std::condition_variable stuckWake_;
};

// Runs an Engine on its own thread and records its events.
class Harness {
 public:
  explicit Harness(int totalSteps, int opsPerStep = 5, EngineOptions options = {},
                   bool stuck = false, bool reportHang = false)
      : engine_(
            [=, this](const nlohmann::json& config,
                      const EventSink&) -> std::unique_ptr<EngineJob> {
              if (config.contains("fail"))
                throw std::runtime_error("model folder not found");
              auto job = std::make_unique<CountingJob>(totalSteps, opsPerStep);
              job->stuck = stuck;
              job->reportHang = reportHang;
              job_ = job.get();
              return job;
            },
            [this](const TimedEvent& e) {
              const std::lock_guard lock(mutex_);
              events_.push_back(e);
            },
            HelloEvent{kProtocolVersion, "test", "cpu", {}}, std::move(options)),
        thread_([this] { engine_.run(); }) {}
  ~Harness() {
    engine_.shutdown();
    thread_.join();
  }
  Engine& engine() { return engine_; }
  CountingJob* job() { return job_; }

  template <typename T>
  std::vector<T> all() {
    const std::lock_guard lock(mutex_);
    std::vector<T> out;
    for (const TimedEvent& e : events_) {
      if (auto* t = std::get_if<T>(&e.event))
        out.push_back(*t);
    }
    return out;
  }
  bool sawState(RunState state) {
    for (const StateEvent& s : all<StateEvent>()) {
      if (s.state == state)
        return true;
    }
    return false;
  }

 private:
  std::mutex mutex_;
  std::vector<TimedEvent> events_;
  CountingJob* job_ = nullptr;
  Engine engine_;
  std::thread thread_;
};

}  // namespace

TEST_CASE(runsToTheEndAndCheckpoints) {
  Harness h(5);
  h.engine().post(StartCommand{{{"steps", 5}}});
  TRY_VERIFY(h.sawState(RunState::Finished));
  COMPARE(h.all<HelloEvent>().size(), std::size_t{1});
  const auto steps = h.all<StepEvent>();
  COMPARE(steps.size(), std::size_t{5});
  COMPARE(steps.back().step, std::int64_t{5});
  COMPARE(h.all<CheckpointEvent>().back().step, std::int64_t{5});
}

TEST_CASE(pauseHoldsAndResumeContinues) {
  Harness h(1000);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_VERIFY(h.all<StepEvent>().size() >= 2);
  h.engine().post(PauseCommand{});
  TRY_VERIFY(h.sawState(RunState::Paused));
  const std::size_t atPause = h.all<StepEvent>().size();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  COMPARE(h.all<StepEvent>().size(), atPause);
  h.engine().post(ResumeCommand{});
  TRY_VERIFY(h.all<StepEvent>().size() > atPause);
  h.engine().post(StopCommand{});
  TRY_VERIFY(h.sawState(RunState::Finished));
}

// A step of 10 000 ops (about 2 s) is interrupted by stop within one op, then checkpointed.
TEST_CASE(stopIsNoticedWithinOneOp) {
  Harness h(3, 10000);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_VERIFY(h.sawState(RunState::Running));
  const auto started = std::chrono::steady_clock::now();
  h.engine().post(StopCommand{});
  TRY_VERIFY(h.sawState(RunState::Finished));
  const auto elapsed_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now() - started)
                              .count();
  VERIFY2(elapsed_ms < 1000, std::to_string(elapsed_ms));
  VERIFY(h.all<StepEvent>().empty());
  COMPARE(h.all<CheckpointEvent>().back().step, std::int64_t{0});
}

TEST_CASE(togglesAreConfirmedOrRefused) {
  Harness h(1000);
  h.engine().post(StartCommand{nlohmann::json::object()});
  h.engine().post(SetToggleCommand{Toggle::MicroBatch, 4});
  h.engine().post(SetToggleCommand{Toggle::GemmBackend, "builtin"});
  TRY_VERIFY(!h.all<ToggleAppliedEvent>().empty());
  TRY_VERIFY(!h.all<ToggleRefusedEvent>().empty());
  COMPARE(h.all<ToggleAppliedEvent>()[0].value.get<int>(), 4);
  const ToggleRefusedEvent refused = h.all<ToggleRefusedEvent>()[0];
  COMPARE(refused.toggle, Toggle::GemmBackend);
  COMPARE(refused.value.get<std::string>(), std::string("builtin"));
  VERIFY(refused.reason.find("no GEMM choice") != std::string::npos);
  VERIFY(h.all<ErrorEvent>().empty());  // a declined request is not an error
  TRY_VERIFY(!h.all<StepEvent>().empty() && h.all<StepEvent>().back().microBatch == 4);
  h.engine().post(StopCommand{});
  TRY_VERIFY(h.sawState(RunState::Finished));
}

TEST_CASE(aFailingStartIsReportedNotFatal) {
  Harness h(3);
  h.engine().post(StartCommand{{{"fail", true}}});
  TRY_VERIFY(h.sawState(RunState::Failed));
  COMPARE(h.all<ErrorEvent>()[0].category, std::string("input"));
  h.engine().post(StartCommand{nlohmann::json::object()});  // the engine still serves
  TRY_VERIFY(h.sawState(RunState::Finished));
}

TEST_CASE(closingTheInputStopsWithACheckpointAndEndsTheLoop) {
  Harness h(100000);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_VERIFY(!h.all<StepEvent>().empty());
  h.engine().closeInput();
  TRY_VERIFY(h.sawState(RunState::Finished));
  COMPARE(h.all<CheckpointEvent>().size(), std::size_t{1});
}

// The sampler reads the job while its step is stuck: the charts keep moving during a hang.
TEST_CASE(readingsArriveWhileAStepIsStuck) {
  EngineOptions options;
  options.samplePeriodMs = 10;
  Harness h(3, 5, options, true);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_VERIFY(h.all<MemoryEvent>().size() >= 5);
  VERIFY(h.all<StepEvent>().empty());  // all of them during the first step
  h.job()->release();
  TRY_VERIFY(h.sawState(RunState::Finished));
}

// Between two readings the sampler polls the job every pollPeriodMs (the queue tracker's
// completions and peak), so that a step shorter than the reading period is seen.
TEST_CASE(theSamplerPollsBetweenReadings) {
  EngineOptions options;
  options.samplePeriodMs = 200;
  options.pollPeriodMs = 2;
  Harness h(3, 5, options, true);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_VERIFY(h.job() != nullptr && h.job()->samples >= 2);
  // ~100 polls fit in a reading period; a loaded CI machine wakes the sampler late, so ask for
  // well above one poll per reading rather than the exact count.
  VERIFY(h.job()->polls >= 10 * h.job()->samples);
  h.job()->release();
  TRY_VERIFY(h.sawState(RunState::Finished));
}

TEST_CASE(aHangIsPublishedOnceAsStickyAndOnHangRuns) {
  std::atomic<int> onHangCalls{0};
  EngineOptions options;
  options.samplePeriodMs = 10;
  options.onHang = [&] { ++onHangCalls; };
  Harness h(3, 5, options, true, true);
  h.engine().post(StartCommand{nlohmann::json::object()});
  TRY_COMPARE(onHangCalls.load(), 1);
  const int samplesAtHang = h.job()->samples;
  TRY_VERIFY(h.job()->samples > samplesAtHang + 3);  // sampled on, reported no more
  const auto errors = h.all<ErrorEvent>();
  COMPARE(errors.size(), std::size_t{1});
  COMPARE(errors[0].category, std::string("hang"));
  COMPARE(errors[0].op, std::string("attention_backward"));
  VERIFY(errors[0].sticky);
  COMPARE(onHangCalls.load(), 1);
  h.job()->release();
  TRY_VERIFY(h.sawState(RunState::Finished));
}

TEST_CASE(commandsWithoutARunAreRefused) {
  Harness h(3);
  h.engine().post(CheckpointNowCommand{});
  TRY_VERIFY(!h.all<ErrorEvent>().empty());
  VERIFY(h.all<ErrorEvent>()[0].message.find("no run is in progress") != std::string::npos);
}

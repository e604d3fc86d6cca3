// engine/Engine.h — the engine loop: takes Commands from any thread, runs a training job one
// optimizer step at a time on its own thread, and reports everything as Events.
//
// A sampler thread reads the job's instruments every EngineOptions::samplePeriodMs while a job
// exists — queue depth per stream, memory, and the watchdog's verdict — independent of step
// boundaries, so the charts move and a hang is named while a step is stuck. The first hang of a
// step is published as a sticky "hang" error naming the op, then EngineOptions::onHang runs (the
// isolated engine exits, so that its supervisor restarts it at once).
//
// A generate command runs on the engine thread while no run is in progress (EngineOptions::
// generate); cancel_generation ends it at its next token, acted on as it is posted. While it
// runs the sampler reads EngineOptions::generationHang: a hang in generation is published and
// ends in onHang as a step's does.
//
// Commands that change the run (set, checkpoint_now, request_snapshot, pause, stop) are applied
// at the next step boundary; stop and pause also raise the job's cancellation flag so a step in
// progress notices within one op and ends early (the job then reports no step, and nothing is
// lost: its state is still the last completed step's). Plain C++: the isolated engine
// (`lorascope-train --engine`) and the in-process host share it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "engine/Protocol.h"

namespace lorascope::engine {

// Set by the engine when the current step should end early (stop, pause); jobs poll it between ops.
class CancelFlag {
 public:
  bool raised() const { return raised_.load(std::memory_order_relaxed); }
  void raise() { raised_.store(true, std::memory_order_relaxed); }
  void clear() { raised_.store(false, std::memory_order_relaxed); }
  // For code that polls a plain atomic flag (train::TrainLoop::step).
  const std::atomic<bool>* flag() const { return &raised_; }

 private:
  std::atomic<bool> raised_{false};
};

using EventSink = std::function<void(const TimedEvent&)>;

// Thrown by a job when the device is unusable (a sticky GPU error: illegal address, a BLAS
// failure that poisons the context). The engine reports it and run() returns kExitStickyError so
// the process exits and the supervisor restarts it on the next rung of the ladder.
class StickyDeviceError : public std::runtime_error {
 public:
  explicit StickyDeviceError(ErrorEvent event)
      : std::runtime_error(event.message), event_(std::move(event)) {}
  const ErrorEvent& event() const { return event_; }

 private:
  ErrorEvent event_;
};

inline constexpr int kExitStickyError = 3;

// The detail of the "finished" state: every step done, or stopped on request (with a checkpoint).
inline constexpr const char* kAllStepsDone = "all steps done";
inline constexpr const char* kStoppedByUser = "stopped by the user";

// Thrown by a job for an error it has already handled in place (out of memory: cache freed,
// micro-batch lowered). The engine reports it and the run goes on with the next step.
class RecoverableError : public std::runtime_error {
 public:
  explicit RecoverableError(ErrorEvent event)
      : std::runtime_error(event.message), event_(std::move(event)) {}
  const ErrorEvent& event() const { return event_; }

 private:
  ErrorEvent event_;
};

// What the sampler thread reads from a job; each part is left out when the job has none.
struct InstrumentEvents {
  std::optional<QueueEvent> queue;    // launches in flight per stream (GPU runs)
  std::optional<MemoryEvent> memory;  // the three memory readings of the moment
  std::optional<ErrorEvent> hang;     // an op of the running step is over its budget
  // The run moved since the previous reading (an op launched, returned or completed, a stage
  // between steps ended); a hung step shows none. A progress event when reportProgress is on.
  bool progressed = false;
};

// What the engine runs. A trainer implements it; all calls come from the engine thread except
// sampleInstruments().
class EngineJob {
 public:
  virtual ~EngineJob() = default;
  // One optimizer step. Returns the metrics of a completed step to announce, or nothing (cancelled
  // before it completed, or, for a job that announces a step once its state is mirrored, nothing
  // mirrored yet); such a job may announce a step one call late (see settle).
  virtual std::optional<StepEvent> runStep(const CancelFlag& cancel) = 0;
  // Called whenever the engine stops stepping (paused, stopping, between commands): the completed
  // step that runStep has not announced yet, once it can be (its state mirrored), so that the
  // last step is never left unannounced while the engine idles. Default: none.
  virtual std::optional<StepEvent> settle() { return std::nullopt; }
  virtual bool finished() const = 0;
  virtual std::int64_t completedSteps() const = 0;
  // Applies a live toggle (already type-checked by the protocol); throws std::exception with a
  // user-facing reason when the job cannot apply it. Returns what applying it did beyond taking
  // the value (the confirmation event's detail: a move between devices), or "".
  virtual std::string applyToggle(Toggle toggle, const nlohmann::json& value) = 0;
  // Whether the job keeps this toggle to apply it at a step boundary of its own choosing,
  // confirming (or refusing) it then through its events; the engine then neither applies nor
  // confirms it. A rank of a group keeps the toggles that arrive once it has stepped, so that
  // every rank applies each at the same boundary (job/EngineJob.cpp). Default: none.
  virtual bool holdsToggle(Toggle /*toggle*/, const nlohmann::json& /*value*/) { return false; }
  // applyToggle, and the event that says so: applied (with notApplicable's reason, if any) or
  // refused with applyToggle's reason. The engine publishes it, or the job for a toggle it held.
  Event applyAndConfirm(Toggle toggle, const nlohmann::json& value);
  // Why the toggle does nothing where the run computes now ("" when it applies): sent with its
  // confirmation, so the GUI disables the editor and says why.
  virtual std::string notApplicable(Toggle /*toggle*/) const { return {}; }
  // Writes a checkpoint of the last completed step.
  virtual CheckpointEvent checkpoint() = 0;
  // Allocator snapshot (segments and blocks) and memory readings, when the job has them.
  virtual std::optional<SnapshotEvent> snapshot() = 0;
  virtual std::optional<MemoryEvent> memory() = 0;
  // Called on the engine's sampler thread, concurrently with the other calls (a step running or
  // hanging): must be thread-safe against them.
  virtual InstrumentEvents sampleInstruments() { return {}; }
  // Called on the sampler thread every EngineOptions::pollPeriodMs between readings: cheap
  // bookkeeping that a reading summarises (the queue tracker's completions and peak depth).
  virtual void pollInstruments() {}
};

// Runs one generate command on the engine thread (job/GenerationService.h): reports its status,
// tokens and answer ends through `sink`, stops at the next token once `cancel` is true, and
// returns the generation's end (done or stopped, with its summary). Throws StickyDeviceError when
// the device is unusable (the engine reports it and exits, its supervisor starts a new one) and
// std::exception for any other failure (reported as the generation's failed end).
using GenerationRunner = std::function<GenerationEndEvent(
    const GenerateCommand& command, const EventSink& sink, const std::atomic<bool>& cancel)>;

// The watchdog's verdict while a generation runs (job/GenerationService.h): a hang error when an
// op of the generation is over its budget. Called on the sampler thread, concurrently with the
// generation.
using GenerationHangCheck = std::function<std::optional<ErrorEvent>()>;

struct EngineOptions {
  int samplePeriodMs = 400;  // the sampler's period: 2.5 readings a second
  // Between readings the sampler polls the job this often (pollInstruments), so that a reading's
  // peak queue depth sees a step shorter than the reading period.
  int pollPeriodMs = 5;
  // Runs on the sampler thread after a hang was published (the engine thread is stuck in the op).
  std::function<void()> onHang;
  // A ProgressEvent with each reading in which a running job moved (InstrumentEvents::progressed):
  // the supervisor's hang watchdog waits for progress, not for the step events (the stdio engine).
  bool reportProgress = false;
  // What runs generate commands; none: they are refused (a failed generation_end says why).
  GenerationRunner generate = {};
  // Read every samplePeriodMs while a generation runs; none: a generation is not watched.
  GenerationHangCheck generationHang = {};
};

// Builds the job for a start command; throws std::exception with a user-facing message (bad
// model folder, bad dataset...). May emit log events through `sink` while it loads.
using JobFactory = std::function<std::unique_ptr<EngineJob>(const nlohmann::json& runConfig,
                                                            const EventSink& sink)>;

class Engine {
 public:
  Engine(JobFactory factory, EventSink sink, HelloEvent hello, EngineOptions options = {});
  ~Engine();

  // Thread-safe; returns at once. The command takes effect at the next step boundary.
  void post(Command command);
  // Runs until shutdown() or closeInput(): emits hello, then serves commands and steps. Call on
  // the engine thread. Returns 0, or kExitStickyError after a StickyDeviceError.
  int run();
  // Thread-safe: ends run() after the current op (no checkpoint; send stop first for one).
  void shutdown();
  // Thread-safe: the command source is gone (the GUI closed the pipe). A run in progress stops as
  // if told to (checkpoint of its last completed step), then run() returns.
  void closeInput();

 private:
  void publish(Event event);
  void handle(Command& command);
  // Runs one generation to its end event; false after a sticky device error (the engine exits).
  bool generate(const GenerateCommand& command);
  void setState(RunState state, const std::string& detail = {});
  void finishRun(RunState state, const std::string& detail);
  void sampleLoop();
  // The sampler's reading while a generation runs: its hang error, if any, not published yet.
  std::optional<ErrorEvent> checkGeneration();
  // Publishes a hang as the sticky error (once per step or generation), then runs onHang.
  void publishHang(ErrorEvent hang);
  void startSampler();
  void stopSampler();

  JobFactory factory_;
  EventSink sink_;
  HelloEvent hello_;
  EngineOptions options_;
  std::chrono::steady_clock::time_point startedAt_ = std::chrono::steady_clock::now();

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Command> queue_;
  bool shutdownRequested_ = false;
  bool inputClosed_ = false;

  CancelFlag cancel_;
  // The generation running on the engine thread (under mutex_), those cancelled before they ran,
  // and the flag the running one polls.
  std::optional<std::int64_t> generatingId_;
  std::set<std::int64_t> cancelledGenerations_;
  std::atomic<bool> generationCancel_{false};
  // Written by the engine thread under jobMutex_; the sampler reads it under jobMutex_.
  std::unique_ptr<EngineJob> job_;
  std::mutex jobMutex_;
  std::atomic<RunState> state_{RunState::Idle};

  std::thread sampler_;
  std::mutex samplerMutex_;
  std::condition_variable samplerWake_;
  bool samplerStop_ = false;
  // The running step's (or generation's) hang is out; cleared per step and per generation.
  std::atomic<bool> hangPublished_{false};
};

}  // namespace lorascope::engine

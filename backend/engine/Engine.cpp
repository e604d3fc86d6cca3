// engine/Engine.cpp — the engine thread's loop: commands at step boundaries, one step at a time.
#include "engine/Engine.h"

#include <algorithm>
#include <utility>

namespace lorascope::engine {

Engine::Engine(JobFactory factory, EventSink sink, HelloEvent hello, EngineOptions options)
    : factory_(std::move(factory)),
      sink_(std::move(sink)),
      hello_(std::move(hello)),
      options_(std::move(options)) {}

Engine::~Engine() {
  stopSampler();
}

void Engine::startSampler() {
  stopSampler();
  {
    const std::lock_guard lock(samplerMutex_);
    samplerStop_ = false;
  }
  sampler_ = std::thread([this] { sampleLoop(); });
}

void Engine::stopSampler() {
  {
    const std::lock_guard lock(samplerMutex_);
    samplerStop_ = true;
  }
  samplerWake_.notify_all();
  if (sampler_.joinable()) {
    sampler_.join();
  }
}

void Engine::sampleLoop() {
  using Clock = std::chrono::steady_clock;
  const int periodMs = std::max(1, options_.samplePeriodMs);
  const auto period = std::chrono::milliseconds(periodMs);
  const auto pollPeriod = std::chrono::milliseconds(std::clamp(options_.pollPeriodMs, 1, periodMs));
  auto nextReading = Clock::now() + period;
  bool polling = false;  // a job runs: wake every poll period, else only for readings
  for (;;) {
    {
      std::unique_lock lock(samplerMutex_);
      const auto wakeAt = polling ? std::min(nextReading, Clock::now() + pollPeriod) : nextReading;
      if (samplerWake_.wait_until(lock, wakeAt, [this] { return samplerStop_; })) {
        return;
      }
    }
    const bool readingDue = Clock::now() >= nextReading;
    InstrumentEvents reading;
    {
      const std::lock_guard lock(jobMutex_);
      polling = job_ != nullptr;
      if (job_ && !readingDue) {
        job_->pollInstruments();
        continue;
      }
      if (job_) {
        reading = job_->sampleInstruments();
      }
    }
    if (!polling) {  // no job: a generation, if one runs, is watched
      if (readingDue) {
        nextReading = Clock::now() + period;
        if (std::optional<ErrorEvent> hang = checkGeneration()) {
          publishHang(std::move(*hang));
        }
      }
      continue;
    }
    nextReading += period;
    if (nextReading < Clock::now()) {  // a slow reading: the next one a full period from now
      nextReading = Clock::now() + period;
    }
    if (reading.queue) {
      publish(*reading.queue);
    }
    if (reading.memory) {
      publish(*reading.memory);
    }
    if (reading.progressed && options_.reportProgress && state_ == RunState::Running) {
      publish(ProgressEvent{});
    }
    if (reading.hang && state_ == RunState::Running && !hangPublished_.exchange(true)) {
      publishHang(std::move(*reading.hang));
    }
  }
}

std::optional<ErrorEvent> Engine::checkGeneration() {
  if (!options_.generationHang) {
    return std::nullopt;
  }
  {
    const std::lock_guard lock(mutex_);
    if (!generatingId_) {
      return std::nullopt;
    }
  }
  std::optional<ErrorEvent> hang = options_.generationHang();
  if (!hang || hangPublished_.exchange(true)) {
    return std::nullopt;
  }
  return hang;
}

void Engine::publishHang(ErrorEvent hang) {
  hang.sticky = true;
  publish(hang);
  if (options_.onHang) {
    options_.onHang();
  }
}

void Engine::post(Command command) {
  {
    const std::lock_guard lock(mutex_);
    if (std::holds_alternative<StopCommand>(command) ||
        std::holds_alternative<PauseCommand>(command)) {
      cancel_.raise();
    }
    if (const auto* cancel = std::get_if<CancelGenerationCommand>(&command)) {
      if (generatingId_ == cancel->id) {
        generationCancel_ = true;
      } else {
        cancelledGenerations_.insert(cancel->id);  // queued, or already over
      }
    }
    queue_.push_back(std::move(command));
  }
  wake_.notify_one();
}

void Engine::shutdown() {
  {
    const std::lock_guard lock(mutex_);
    shutdownRequested_ = true;
    cancel_.raise();
    generationCancel_ = true;
  }
  wake_.notify_one();
}

void Engine::closeInput() {
  {
    const std::lock_guard lock(mutex_);
    inputClosed_ = true;
    cancel_.raise();
    generationCancel_ = true;
  }
  wake_.notify_one();
}

void Engine::publish(Event event) {
  const auto now = std::chrono::steady_clock::now();
  sink_(TimedEvent{std::chrono::duration_cast<std::chrono::milliseconds>(now - startedAt_).count(),
                   std::move(event)});
}

void Engine::setState(RunState state, const std::string& detail) {
  state_ = state;
  publish(StateEvent{state, job_ ? job_->completedSteps() : 0, detail});
}

void Engine::finishRun(RunState state, const std::string& detail) {
  setState(state, detail);
  std::unique_ptr<EngineJob> done;
  {
    const std::lock_guard lock(jobMutex_);
    done = std::move(job_);
  }
}

int Engine::run() {
  publish(hello_);
  startSampler();
  struct StopSampler {
    Engine* engine;
    ~StopSampler() { engine->stopSampler(); }
  } stopSamplerOnReturn{this};
  setState(RunState::Idle);
  for (;;) {
    std::deque<Command> commands;
    bool inputClosed = false;
    {
      std::unique_lock lock(mutex_);
      const bool idle = state_ != RunState::Running;
      if (idle) {
        wake_.wait(lock, [&] { return shutdownRequested_ || inputClosed_ || !queue_.empty(); });
      }
      if (shutdownRequested_) {
        return 0;
      }
      commands.swap(queue_);
      inputClosed = inputClosed_;
      cancel_.clear();
    }
    for (Command& command : commands) {
      if (const auto* generation = std::get_if<GenerateCommand>(&command)) {
        if (!generate(*generation)) {
          return kExitStickyError;  // the device context is abandoned with the process
        }
        continue;
      }
      handle(command);
    }
    if (inputClosed) {
      if (job_) {
        Command stop = StopCommand{};
        handle(stop);
      }
      return 0;
    }
    // The last completed step, once its state is mirrored, whenever stepping stops.
    const auto publishSettled = [&] {
      if (job_) {
        if (std::optional<StepEvent> step = job_->settle()) {
          publish(*step);
        }
      }
    };
    if (state_ != RunState::Running || !job_) {
      publishSettled();
      continue;
    }
    try {
      // A job resumed from a state mirror may have every step done already (its engine died
      // while writing the final checkpoint): it only needs that checkpoint, not one step more.
      hangPublished_ = false;
      if (std::optional<StepEvent> step =
              job_->finished() ? std::nullopt : job_->runStep(cancel_)) {
        publish(*step);
        if (auto memory = job_->memory()) {
          publish(*memory);
        }
      }
      if (job_->finished()) {
        publish(job_->checkpoint());
        finishRun(RunState::Finished, kAllStepsDone);
      }
    } catch (const RecoverableError& e) {
      publishSettled();  // the step before the failed one comes first
      publish(e.event());
    } catch (const StickyDeviceError& e) {
      publishSettled();  // host-side only: the mirror's writer, not the device
      ErrorEvent error = e.event();
      error.sticky = true;
      publish(error);
      setState(RunState::Failed, "the GPU is unusable until the engine restarts");
      return kExitStickyError;  // the job (and its device context) is abandoned with the process
    } catch (const std::exception& e) {
      publishSettled();
      publish(ErrorEvent{"training", "step", 0, e.what(),
                         "the run stopped at its last completed step; fix the cause and resume",
                         false});
      finishRun(RunState::Failed, e.what());
    }
  }
}

bool Engine::generate(const GenerateCommand& command) {
  const auto fail = [&](const std::string& why) {
    publish(GenerationEndEvent{command.id, GenerationOutcome::Failed, why});
  };
  if (!options_.generate) {
    fail("this engine does not generate text");
    return true;
  }
  if (job_) {
    fail("a training run is in progress in this engine; generate when it is over");
    return true;
  }
  hangPublished_ = false;  // before the sampler sees the generation
  {
    const std::lock_guard lock(mutex_);
    generatingId_ = command.id;
    generationCancel_ =
        cancelledGenerations_.erase(command.id) > 0 || inputClosed_ || shutdownRequested_;
  }
  struct Done {
    Engine* engine;
    ~Done() {
      const std::lock_guard lock(engine->mutex_);
      engine->generatingId_.reset();
    }
  } done{this};
  try {
    publish(options_.generate(
        command, [this](const TimedEvent& e) { publish(e.event); }, generationCancel_));
  } catch (const StickyDeviceError& e) {
    ErrorEvent error = e.event();
    error.sticky = true;
    publish(error);
    fail(e.what());
    return false;
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return true;
}

Event EngineJob::applyAndConfirm(Toggle toggle, const nlohmann::json& value) {
  try {
    std::string detail = applyToggle(toggle, value);
    return ToggleAppliedEvent{toggle, value, completedSteps(), std::move(detail),
                              notApplicable(toggle)};
  } catch (const std::exception& e) {
    return ToggleRefusedEvent{toggle, value, e.what(), completedSteps()};
  }
}

void Engine::handle(Command& command) {
  const std::string type(commandType(command));
  auto refuse = [&](const std::string& why) {
    publish(ErrorEvent{"command", type, 0, "'" + type + "' refused: " + why, "", false});
  };
  if (std::holds_alternative<CancelGenerationCommand>(command)) {
    return;  // acted on as it was posted; a generation already over needs nothing
  }
  if (auto* start = std::get_if<StartCommand>(&command)) {
    if (job_) {
      return refuse("a run is already in progress; stop it first");
    }
    setState(RunState::Starting);
    try {
      std::unique_ptr<EngineJob> job =
          factory_(start->runConfig, [this](const TimedEvent& e) { publish(e.event); });
      {
        const std::lock_guard lock(jobMutex_);
        job_ = std::move(job);
      }
      setState(RunState::Running);
    } catch (const std::exception& e) {
      publish(ErrorEvent{"input", "start", 0, e.what(), "check the run settings and start again",
                         false});
      finishRun(RunState::Failed, e.what());
    }
    return;
  }
  if (!job_) {
    return refuse("no run is in progress");
  }
  if (std::holds_alternative<PauseCommand>(command)) {
    if (state_ == RunState::Running)
      setState(RunState::Paused);
  } else if (std::holds_alternative<ResumeCommand>(command)) {
    if (state_ == RunState::Paused)
      setState(RunState::Running);
  } else if (std::holds_alternative<StopCommand>(command)) {
    setState(RunState::Stopping);
    publish(job_->checkpoint());
    finishRun(RunState::Finished, kStoppedByUser);
  } else if (auto* set = std::get_if<SetToggleCommand>(&command)) {
    if (job_->holdsToggle(set->toggle, set->value)) {
      return;  // confirmed at the step boundary the job applies it at
    }
    publish(job_->applyAndConfirm(set->toggle, set->value));
  } else if (std::holds_alternative<CheckpointNowCommand>(command)) {
    publish(job_->checkpoint());
  } else if (std::holds_alternative<RequestSnapshotCommand>(command)) {
    if (auto snapshot = job_->snapshot()) {
      publish(*snapshot);
    } else {
      refuse("this run has no device allocator to snapshot (CPU run)");
    }
  } else if (std::holds_alternative<SwitchProfileCommand>(command)) {
    refuse(
        "profiles are switched by the host, which sends their toggles and restarts the "
        "engine when the environment changes");
  } else if (std::holds_alternative<UndoRungCommand>(command)) {
    refuse("the recovery ladder is the supervisor's; this engine runs without one");
  }
}

}  // namespace lorascope::engine

// external/CommandHost.cpp — the child's streams, the probe's file, telemetry, one loop thread.
#include "external/CommandHost.h"

#include <array>
#include <chrono>
#include <ctime>

#include "common/ChildProcess.h"
#include "common/FolderContents.h"
#include "common/OsError.h"  // defines: pathText
#include "external/SupervisedRun.h"
#include "telemetry/HeldOutside.h"
#include "telemetry/Providers.h"
#include "telemetry/Sampler.h"

namespace lorascope::external {
namespace fs = std::filesystem;
namespace {

constexpr std::int64_t kPollMs = 200;        // the probe's file
constexpr std::int64_t kTelemetryMs = 1000;  // one merged memory event per second
constexpr std::int64_t kHeldOutsideEveryMs = 30'000;
constexpr std::size_t kMaxProbeLineBytes = 64 << 20;  // an allocator snapshot can be large

std::string isoTimeNow() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  // std::gmtime: gmtime_r is POSIX's only; the host asks once, before its thread starts.
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

}  // namespace

// One attempt: the child, a thread per output stream, and one that watches for its exit: then
// the rest of its group is asked to end, the pipes are read to their end for up to the grace
// period, the group killed and the pipes given up after it, and the exit reported.
class CommandHost::Run : public CommandRun {
 public:
  Run(CommandHost& host, int attempt, const common::ChildOptions& options, fs::path requestFile,
      std::chrono::seconds grace)
      : host_(host),
        attempt_(attempt),
        child_(options),
        requestFile_(std::move(requestFile)),
        grace_(grace) {
    output_ = std::thread([this] { read(false); });
    errors_ = std::thread([this] { read(true); });
    waiter_ = std::thread([this] { watch(); });
  }
  ~Run() override {
    {
      const std::lock_guard lock(mutex_);
      closing_ = true;
    }
    readersDone_.notify_all();
    child_.kill();
    waiter_.join();
  }

  void terminate() override { child_.terminate(); }
  void kill() override { child_.kill(); }
  void requestSnapshot() override {
    std::ofstream(requestFile_, std::ios::trunc) << ++requests_ << "\n";
  }
  std::vector<std::int64_t> processTree() const { return child_.processTree(); }

 private:
  void watch() {
    child_.waitForExit();
    child_.terminate();  // what it left running in its group
    bool drained = false;
    {
      std::unique_lock lock(mutex_);
      drained = readersDone_.wait_for(lock, grace_, [this] { return closing_ || readers_ == 2; }) &&
                readers_ == 2;
    }
    if (!drained) {  // still held open: by the group (killed now) or by a process outside it
      child_.kill();
      child_.abandonOutput();
    }
    output_.join();
    errors_.join();
    const common::ChildExit status = child_.wait();
    CommandExit exit{status.signaled, status.exitCode,
                     status.signaled ? common::ChildProcess::signalName(status.signal) : ""};
    CommandHost& owner = host_;
    const int number = attempt_;
    owner.post([&owner, number, exit] {
      owner.pollProbe(number);  // what the probe wrote last comes first
      owner.running_ = false;
      owner.supervisor_->exited(number, exit);
    });
  }

  // Lines end at '\n' or '\r'. Each byte is looked at once; a line keeps at most kMaxLineBytes.
  void read(bool errorStream) {
    std::array<char, 16384> buffer;
    std::string line;
    bool cut = false;
    auto deliver = [&] {
      if (cut)
        line += kCutLineMark;
      cut = false;
      if (line.find_first_not_of(" \t") != std::string::npos) {
        host_.writeLog(line);
        CommandHost& host = host_;
        const int attempt = attempt_;
        host.post([&host, attempt, errorStream, text = std::move(line)] {
          host.pollProbe(attempt);  // the probe's record of a step before the output's
          host.supervisor_->outputLine(attempt, errorStream, text);
        });
      }
      line.clear();
    };
    for (;;) {
      const std::size_t n =
          errorStream ? child_.readErrorOutput(buffer) : child_.readOutput(buffer);
      if (n == 0)
        break;
      std::string_view chunk(buffer.data(), n);
      for (;;) {
        const std::size_t end = chunk.find_first_of("\r\n");
        const std::string_view piece = chunk.substr(0, end);
        const std::size_t room = kMaxLineBytes - line.size();
        line.append(piece.substr(0, room));
        cut = cut || piece.size() > room;
        if (end == std::string_view::npos)
          break;
        deliver();
        chunk.remove_prefix(end + 1);
      }
    }
    deliver();
    {
      const std::lock_guard lock(mutex_);
      ++readers_;
    }
    readersDone_.notify_all();
  }

  CommandHost& host_;
  const int attempt_;
  common::ChildProcess child_;
  fs::path requestFile_;
  const std::chrono::seconds grace_;
  int requests_ = 0;
  std::mutex mutex_;
  std::condition_variable readersDone_;
  int readers_ = 0;  // streams read to their end
  bool closing_ = false;
  std::thread output_;
  std::thread errors_;
  std::thread waiter_;
};

class CommandHost::Launcher : public CommandLauncher {
 public:
  explicit Launcher(CommandHost& host) : host_(host) {}
  std::unique_ptr<CommandRun> launch(int attempt, const LaunchSpec& spec) override {
    const fs::path dir = host_.options_.runDirectory;
    const fs::path probe = dir / ("probe-" + std::to_string(attempt) + ".jsonl");
    const fs::path request = dir / ("probe-" + std::to_string(attempt) + ".request");
    std::error_code error;
    fs::remove(probe, error);
    fs::remove(request, error);
    common::ChildOptions options{spec.program, spec.arguments, {}, spec.workingDirectory};
    for (const auto& [name, value] : spec.environment)
      options.environment.emplace_back(name, value);
    options.environment.emplace_back(kProbeFileVariable, common::pathText(fs::absolute(probe)));
    options.environment.emplace_back(kProbeRequestVariable,
                                     common::pathText(fs::absolute(request)));
    // Python buffers a pipe's output in blocks: lines would come late, and a quiet stretch would
    // look like a hang.
    options.environment.emplace_back("PYTHONUNBUFFERED", "1");
    host_.writeLog("=== attempt " + std::to_string(attempt) + " (profile '" + spec.profileName +
                   "') ===");
    host_.current_ = nullptr;
    host_.currentAttempt_ = attempt;
    host_.probeIn_.close();
    host_.probeIn_.clear();
    host_.probePending_.clear();
    host_.probeScanned_ = 0;
    auto run = std::make_unique<Run>(host_, attempt, options, request,
                                     std::chrono::seconds(host_.graceSeconds_));
    host_.current_ = run.get();
    host_.probeMemory_.reset();
    host_.running_ = true;
    return run;
  }

 private:
  CommandHost& host_;
};

namespace {

// The rule of the folder a supervised run writes into, as for LoRAscope's own runs
// (runs/RunFolder.h, checkOutputFolder): new, empty, or a supervised command's run (resumed).
void checkRunFolder(const fs::path& dir) {
  std::error_code error;
  const fs::file_status status = fs::status(dir, error);
  if (!fs::exists(status))
    return;
  const std::string shown = common::pathText(dir);
  if (!fs::is_directory(status))
    throw ExternalError(shown + ": exists and is not a folder; choose another --out folder");
  if (isSupervisedRunFolder(dir))
    return;
  const std::string contents = common::describeFolderEntries(dir, common::kRunLockFile, error);
  if (error)
    throw ExternalError(shown + ": cannot be listed (" + error.message() +
                        "); choose another --out folder");
  if (!contents.empty()) {
    throw ExternalError(shown + ": is not empty and is not a supervised command's run: it holds " +
                        contents +
                        ". A run goes only into a new or empty folder (or its own run folder, to "
                        "resume it); choose another --out folder");
  }
}

}  // namespace

CommandHost::CommandHost(SupervisedCommand command, profiles::Profile profile,
                         CommandHostOptions options, engine::HostListener listener)
    : options_(std::move(options)), listener_(std::move(listener)) {
  checkRunFolder(options_.runDirectory);
  std::error_code error;
  fs::create_directories(options_.runDirectory, error);
  if (error)
    throw ExternalError(common::pathText(options_.runDirectory) +
                        ": cannot create the run directory: " + error.message());
  try {
    lock_ = std::make_unique<common::FileLock>(options_.runDirectory / common::kRunLockFile);
  } catch (const common::LockBusy& e) {
    throw ExternalError(common::pathText(options_.runDirectory) +
                        ": is in use: " + e.holder().describe() +
                        " supervises this run (a run has one writer at a time). Wait for it to "
                        "end, or stop it, then try again");
  } catch (const common::OsError& e) {
    throw ExternalError(common::pathText(options_.runDirectory) +
                        ": cannot take the run's lock: " + e.detail());
  }
  log_.open(options_.runDirectory / "command.log", std::ios::app);
  if (!log_)
    throw ExternalError(common::pathText(options_.runDirectory / "command.log") +
                        ": cannot be written");
  const fs::path config = options_.runDirectory / "config.json";
  if (!fs::exists(config)) {  // a resumed run keeps its own
    std::ofstream out(config, std::ios::trunc);
    out << supervisedRunConfig(command, profile.name, isoTimeNow()).dump(2) << "\n";
    if (!out)
      throw ExternalError(common::pathText(config) + ": cannot be written");
  }
  events_.open(options_.runDirectory / kEventsFile, std::ios::app);
  metrics_.open(options_.runDirectory / kMetricsFile, std::ios::app);
  if (!events_ || !metrics_)
    throw ExternalError(common::pathText(options_.runDirectory) +
                        ": events.jsonl or metrics.jsonl cannot be written");
  graceSeconds_ = command.graceSeconds;
  if (options_.telemetry) {
    telemetry::ProviderSet set = telemetry::openProviders();
    hostProvider_ = set.host;
    if (!set.gpu.empty()) {
      for (const auto& p : set.gpu)
        gpuProviders_.push_back(p->name());
      sampler_ = std::make_unique<telemetry::Sampler>(set.gpu);
      sampler_->start();
    }
  }
  launcher_ = std::make_unique<Launcher>(*this);
  supervisor_ = std::make_unique<ExternalSupervisor>(
      *launcher_, std::move(command), std::move(profile),
      [this](const engine::TimedEvent& e) { publishFromSupervisor(e); });
  post([this] { supervisor_->start(); });
  thread_ = std::thread([this] { loop(); });
}

CommandHost::~CommandHost() {
  {
    const std::lock_guard lock(queueMutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  supervisor_.reset();  // kills a command still running and waits for its threads
  if (sampler_)
    sampler_->stop();
}

void CommandHost::post(std::function<void()> task) {
  {
    const std::lock_guard lock(queueMutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void CommandHost::send(const engine::Command& command) {
  post([this, command] { supervisor_->send(command); });
}

std::optional<int> CommandHost::waitForOutcome(std::chrono::milliseconds timeout) {
  std::unique_lock lock(queueMutex_);
  outcomeChanged_.wait_for(lock, timeout, [this] { return outcome_.has_value(); });
  return outcome_;
}

void CommandHost::writeLog(const std::string& text) {
  const std::lock_guard lock(logMutex_);
  log_ << text << "\n";
  log_.flush();
}

void CommandHost::publishFromSupervisor(const engine::TimedEvent& timed) {
  engine::TimedEvent event = timed;
  if (auto* memory = std::get_if<engine::MemoryEvent>(&event.event)) {
    probeMemory_ = *memory;
    // The probe's own driver reading (torch.cuda.mem_get_info) is the newer one; telemetry's
    // (up to a second old) fills in only where the probe has none (no GPU allocator).
    if (!memory->driverUsedBytes && driverMemory_) {
      memory->driverUsedBytes = driverMemory_->driverUsedBytes;
      memory->driverTotalBytes = driverMemory_->driverTotalBytes;
    }
    if (memory->driverUsedBytes && memory->reservedBytes)
      memory->heldOutsideBytes =
          *memory->driverUsedBytes - std::min(*memory->driverUsedBytes, *memory->reservedBytes);
  }
  outbox_.push_back(std::move(event));
}

void CommandHost::pollProbe(int attempt) {
  if (attempt != currentAttempt_)
    return;
  if (!probeIn_.is_open()) {
    probeIn_.open(options_.runDirectory / ("probe-" + std::to_string(attempt) + ".jsonl"),
                  std::ios::binary);
    if (!probeIn_.is_open())
      return;  // the probe has not written yet (or is not there)
  }
  probeIn_.clear();  // after the last end of file: read what was appended since
  std::array<char, 65536> buffer;
  while (probeIn_.read(buffer.data(), buffer.size()) || probeIn_.gcount() > 0)
    probePending_.append(buffer.data(), static_cast<std::size_t>(probeIn_.gcount()));
  std::size_t start = 0;
  for (std::size_t end;
       (end = probePending_.find('\n', std::max(start, probeScanned_))) != std::string::npos;
       start = end + 1) {
    const std::string_view line(probePending_.data() + start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos)
      supervisor_->probeLine(attempt, line);
  }
  probePending_.erase(0, start);
  probeScanned_ = probePending_.size();  // holds no '\n'
  if (probePending_.size() > kMaxProbeLineBytes) {
    supervisor_->probeLine(attempt,
                           "{\"v\": 1, \"type\": \"log\", \"level\": \"warning\", "
                           "\"text\": \"a probe line longer than 64 MiB was dropped\"}");
    probePending_.clear();
    probeScanned_ = 0;
  }
}

void CommandHost::record(const engine::TimedEvent& timed) {
  events_ << engine::encodeEvent(timed) << "\n";
  events_.flush();
  if (const auto* memory = std::get_if<engine::MemoryEvent>(&timed.event)) {
    sawGpu_ = sawGpu_ || memory->driverTotalBytes.value_or(0) > 0;
    return;
  }
  const auto* step = std::get_if<engine::StepEvent>(&timed.event);
  if (step == nullptr)
    return;
  const double seconds =
      static_cast<double>(timed.timeMs - std::exchange(lastStepMs_, timed.timeMs)) / 1000.0;
  metrics_ << metricsLine(*step, seconds, sawGpu_) << "\n";
  metrics_.flush();
}

void CommandHost::telemetryTick() {
  if (telemetry::Snapshot host; hostProvider_ && running_.load() && hostProvider_->refresh(host) &&
                                host.host && host.host->ramAvailableBytes &&
                                host.host->ramTotalBytes) {
    supervisor_->noteHostMemory({*host.host->ramAvailableBytes, *host.host->ramTotalBytes});
  }
  if (!sampler_ || current_ == nullptr || !running_.load())
    return;
  const std::vector<std::int64_t> tree = current_->processTree();
  if (tree.empty())
    return;
  for (const std::string& name : gpuProviders_) {
    const std::optional<telemetry::Snapshot> snapshot = sampler_->latest(name);
    if (!snapshot || snapshot->devices.empty())
      continue;
    // The device the child's tree uses (the first one listing a process of the tree), else the
    // first device. The tree counts as one process: the run.
    int device = snapshot->devices.front().index;
    telemetry::HeldOutsideInput input;
    input.provider = name;
    input.ourPids = {static_cast<std::uint32_t>(tree.front())};
    telemetry::ProcessReading ours;
    ours.pid = input.ourPids.front();
    for (const telemetry::ProcessReading& p : snapshot->processes) {
      const bool inTree = std::find(tree.begin(), tree.end(), std::int64_t{p.pid}) != tree.end();
      if (!inTree) {
        input.processes.push_back(p);
        continue;
      }
      if (p.deviceIndex)
        device = *p.deviceIndex;
      ours.deviceIndex = p.deviceIndex;
      if (p.vramBytes)
        ours.vramBytes = ours.vramBytes.value_or(0) + *p.vramBytes;
    }
    input.processes.push_back(ours);
    for (const telemetry::DeviceReading& d : snapshot->devices) {
      if (d.index == device)
        input.device = d;
    }
    input.ourReservedBytes =
        probeMemory_ && probeMemory_->reservedBytes ? *probeMemory_->reservedBytes : 0;
    const telemetry::HeldOutsideReport report = telemetry::diagnoseHeldOutside(input);
    engine::MemoryEvent memory = probeMemory_.value_or(engine::MemoryEvent{});
    memory.driverUsedBytes = input.device.vramUsedBytes;
    memory.driverTotalBytes = input.device.vramTotalBytes;
    if (probeMemory_ && probeMemory_->reservedBytes)
      memory.heldOutsideBytes = report.heldOutsideBytes;
    driverMemory_ = memory;
    outbox_.push_back({supervisor_->elapsedMs(), memory});
    const std::int64_t now = supervisor_->elapsedMs();
    if (!report.advice.empty() && now - lastHeldOutsideMs_ >= kHeldOutsideEveryMs) {
      lastHeldOutsideMs_ = now;
      outbox_.push_back(
          {now, engine::LogEvent{engine::LogLevel::Warning, "who holds VRAM: " + report.summary}});
    }
    return;  // one provider is enough
  }
}

void CommandHost::loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock lock(queueMutex_);
      while (!stopping_ && tasks_.empty()) {
        const std::int64_t now = supervisor_->elapsedMs();
        std::int64_t wait = running_.load() ? kPollMs : 60'000;
        if (const auto deadline = supervisor_->nextDeadlineMs())
          wait = std::min(wait, *deadline - now);
        if (wait <= 0)
          break;
        if (wake_.wait_for(lock, std::chrono::milliseconds(wait)) == std::cv_status::timeout)
          break;
      }
      if (stopping_)
        break;
      if (!tasks_.empty()) {
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
    }
    if (task)
      task();
    if (running_.load()) {
      pollProbe(currentAttempt_);
      const std::int64_t now = supervisor_->elapsedMs();
      if (now - lastTelemetryMs_ >= kTelemetryMs) {
        lastTelemetryMs_ = now;
        telemetryTick();
      }
    }
    supervisor_->checkDeadlines();
    std::vector<engine::TimedEvent> events;
    events.swap(outbox_);
    for (const engine::TimedEvent& e : events) {
      record(e);
      listener_.event(e);
    }
    if (const bool running = running_.load(); running != reportedRunning_) {
      reportedRunning_ = running;
      if (listener_.connectedChanged)
        listener_.connectedChanged(running);
    }
    if (const auto outcome = supervisor_->outcome()) {
      const std::lock_guard lock(queueMutex_);
      if (!outcome_) {
        outcome_ = outcome;
        outcomeChanged_.notify_all();
      }
    }
  }
}

}  // namespace lorascope::external

// external/CommandHost.cpp — the child's streams, the probe's file, telemetry, one loop thread.
#include "external/CommandHost.h"

#include <array>
#include <chrono>

#include "common/ChildProcess.h"
#include "common/OsError.h"  // defines: pathText
#include "telemetry/HeldOutside.h"
#include "telemetry/Providers.h"
#include "telemetry/Sampler.h"

namespace lorascope::external {
namespace fs = std::filesystem;
namespace {

constexpr std::int64_t kPollMs = 200;        // the probe's file
constexpr std::int64_t kTelemetryMs = 1000;  // one merged memory event per second
constexpr std::int64_t kHeldOutsideEveryMs = 30'000;
constexpr std::size_t kMaxProbeLineBytes = 64 << 20;

}  // namespace

// One attempt: the child, a thread that reads its two streams (one helper thread for stderr) and
// reports its exit.
class CommandHost::Run : public CommandRun {
 public:
  Run(CommandHost& host, int attempt, const common::ChildOptions& options, fs::path requestFile)
      : host_(host), attempt_(attempt), child_(options), requestFile_(std::move(requestFile)) {
    waiter_ = std::thread([this] {
      std::thread errors([this] { read(true); });
      read(false);
      errors.join();
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
    });
  }
  ~Run() override {
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
  void read(bool errorStream) {
    std::array<char, 16384> buffer;
    std::string pending;
    auto deliver = [&](std::string line) {
      if (line.find_first_not_of(" \t") == std::string::npos)
        return;
      host_.writeLog(line);
      CommandHost& host = host_;
      const int attempt = attempt_;
      host.post([&host, attempt, errorStream, line = std::move(line)] {
        host.supervisor_->outputLine(attempt, errorStream, line);
      });
    };
    for (;;) {
      const std::size_t n =
          errorStream ? child_.readErrorOutput(buffer) : child_.readOutput(buffer);
      if (n == 0)
        break;
      pending.append(buffer.data(), n);
      std::size_t start = 0;
      for (std::size_t end; (end = pending.find_first_of("\r\n", start)) != std::string::npos;
           start = end + 1) {
        deliver(pending.substr(start, end - start));
      }
      pending.erase(0, start);
      if (pending.size() > kMaxProbeLineBytes)  // a line that never ends: cut it
        deliver(std::exchange(pending, {}));
    }
    deliver(pending);
  }

  CommandHost& host_;
  const int attempt_;
  common::ChildProcess child_;
  fs::path requestFile_;
  int requests_ = 0;
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
    auto run = std::make_unique<Run>(host_, attempt, options, request);
    host_.current_ = run.get();
    host_.currentAttempt_ = attempt;
    host_.probeOffset_ = 0;
    host_.probePending_.clear();
    host_.probeMemory_.reset();
    host_.running_ = true;
    return run;
  }

 private:
  CommandHost& host_;
};

CommandHost::CommandHost(SupervisedCommand command, profiles::Profile profile,
                         CommandHostOptions options, engine::HostListener listener)
    : options_(std::move(options)), listener_(std::move(listener)) {
  std::error_code error;
  fs::create_directories(options_.runDirectory, error);
  if (error)
    throw ExternalError(common::pathText(options_.runDirectory) +
                        ": cannot create the run directory: " + error.message());
  log_.open(options_.runDirectory / "command.log", std::ios::app);
  if (!log_)
    throw ExternalError(common::pathText(options_.runDirectory / "command.log") +
                        ": cannot be written");
  if (options_.telemetry) {
    telemetry::ProviderSet set = telemetry::openProviders();
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
  const fs::path file = options_.runDirectory / ("probe-" + std::to_string(attempt) + ".jsonl");
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return;
  in.seekg(static_cast<std::streamoff>(probeOffset_));
  std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  probeOffset_ += chunk.size();
  probePending_ += chunk;
  std::size_t start = 0;
  for (std::size_t end; (end = probePending_.find('\n', start)) != std::string::npos;
       start = end + 1) {
    const std::string_view line(probePending_.data() + start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos)
      supervisor_->probeLine(attempt, line);
  }
  probePending_.erase(0, start);
  if (probePending_.size() > kMaxProbeLineBytes)
    probePending_.clear();
}

void CommandHost::telemetryTick() {
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
    input.ourPid = static_cast<std::uint32_t>(tree.front());
    telemetry::ProcessReading ours;
    ours.pid = input.ourPid;
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
        if (const auto deadline = supervisor_->hangDeadlineMs())
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
    supervisor_->checkHang();
    std::vector<engine::TimedEvent> events;
    events.swap(outbox_);
    for (const engine::TimedEvent& e : events)
      listener_.event(e);
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

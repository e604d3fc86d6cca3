// engine/IsolatedHost.cpp — the child's streams and the JSON-lines transport.
#include "engine/IsolatedHost.h"

#include <array>
#include <chrono>
#include <cstdlib>

namespace lorascope::engine {
namespace {

constexpr std::size_t kStderrTailBytes = 4096;  // enough for a runtime's abort message
constexpr auto kGracefulExit = std::chrono::milliseconds(3000);  // to checkpoint after stdin ends
constexpr std::size_t kMaxLineBytes = 64 << 20;  // a snapshot of a big allocator fits; a runaway
                                                 // does not
constexpr std::size_t kReadChunk = 64 << 10;

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

}  // namespace

IsolatedHost::IsolatedHost(std::string program, std::map<std::string, std::string> environment,
                           HostListener listener, ExitListener exited,
                           profiles::EngineLocation location)
    : program_(std::move(program)),
      environment_(std::move(environment)),
      listener_(std::move(listener)),
      exitedListener_(std::move(exited)),
      location_(location),
      paths_(std::move(location)) {}

IsolatedHost::~IsolatedHost() {
  if (child_) {
    child_->closeInput();  // the engine stops, checkpointing, when its stdin ends
    std::unique_lock lock(stateMutex_);
    if (!exitedChanged_.wait_for(lock, kGracefulExit, [this] { return exited_; })) {
      lock.unlock();
      child_->kill();
    }
  }
  if (stdoutThread_.joinable())
    stdoutThread_.join();  // joins the stderr reader and reaps the child
}

void IsolatedHost::start() {
  if (child_ || stdoutThread_.joinable())
    return;
  common::ChildOptions options{program_, {"engine"}, {}};
  if (!location_.launcher.empty()) {
    const std::string found = common::findExecutable(location_.launcher.front());
    options.program = found.empty() ? location_.launcher.front() : found;
    options.arguments.assign(location_.launcher.begin() + 1, location_.launcher.end());
  }
  std::string wslEnv;  // the names that cross into WSL (WSLENV), after any the user set
  for (const auto& [name, value] : environment_) {
    options.environment.emplace_back(name, value);
    wslEnv += (wslEnv.empty() ? "" : ":") + name;
  }
  if (location_.paths == profiles::EnginePaths::Wsl && !wslEnv.empty()) {
    const char* existing = std::getenv("WSLENV");
    options.environment.emplace_back("WSLENV", existing != nullptr && *existing != '\0'
                                                   ? std::string(existing) + ":" + wslEnv
                                                   : wslEnv);
  }
  const std::string started = options.program;
  try {
    child_ = std::make_unique<common::ChildProcess>(options);
  } catch (const common::ChildProcessError& e) {
    const std::string reason = e.what();
    stdoutThread_ = std::thread([this, reason, started] {
      emitEvent(TimedEvent{
          0, ErrorEvent{"engine", "start", 0, "cannot start the engine " + started + ": " + reason,
                        location_.launcher.empty()
                            ? "reinstall LoRAscope: lorascope-train must sit beside lorascope"
                            : "check the profile's engine.launcher (is " + started +
                                  " installed and on PATH?)",
                        false}});
      EngineExit exit;
      exit.crashed = true;
      exit.exitCode = -1;
      exit.failedToStart = true;
      exit.stderrTail = reason;
      finish(exit);
    });
    return;
  }
  connected_ = true;
  stderrThread_ = std::thread([this] { readStderr(); });
  stdoutThread_ = std::thread([this] {
    {
      const std::lock_guard lock(emitMutex_);
      if (listener_.connectedChanged)
        listener_.connectedChanged(true);
    }
    readEvents();
    stderrThread_.join();
    const common::ChildExit status = child_->wait();
    EngineExit exit;
    exit.crashed = status.signaled;
    exit.exitCode = status.exitCode;
    if (status.signaled)
      exit.signal = common::ChildProcess::signalName(status.signal);
    {
      const std::lock_guard lock(stateMutex_);
      exit.stderrTail = stderrTail_;
    }
    finish(exit);
  });
}

void IsolatedHost::finish(const EngineExit& exit) {
  connected_ = false;
  {
    const std::lock_guard lock(emitMutex_);
    if (listener_.connectedChanged && !exit.failedToStart)
      listener_.connectedChanged(false);
    if (exitedListener_)
      exitedListener_(exit);
  }
  {
    const std::lock_guard lock(stateMutex_);
    exited_ = true;
  }
  exitedChanged_.notify_all();
}

void IsolatedHost::emitEvent(const TimedEvent& event) {
  const std::lock_guard lock(emitMutex_);
  // Only checkpoints carry a path; other events (a snapshot can be megabytes) pass uncopied.
  if (location_.paths != profiles::EnginePaths::Same &&
      std::holds_alternative<CheckpointEvent>(event.event)) {
    listener_.event(paths_.toHost(event));
    return;
  }
  listener_.event(event);
}

std::int64_t IsolatedHost::processId() const {
  return child_ && connected_.load() ? child_->id() : 0;
}

void IsolatedHost::send(const Command& command) {
  if (!child_ || !connected_.load() ||
      !child_->write(encodeCommand(paths_.toEngine(command)) + "\n")) {
    emitEvent(TimedEvent{0, ErrorEvent{"engine", std::string(commandType(command)), 0,
                                       "the engine process is not running", "", false}});
  }
}

void IsolatedHost::kill() {
  if (child_)
    child_->kill();
}

void IsolatedHost::closeInput() {
  if (child_)
    child_->closeInput();
}

void IsolatedHost::readEvents() {
  std::string pending;  // bytes after the last complete line
  std::array<char, kReadChunk> buffer;
  bool dropping = false;  // inside an over-long line: skip to its end
  for (;;) {
    const std::size_t n = child_->readOutput(buffer);
    if (n == 0)
      break;
    pending.append(buffer.data(), n);
    std::size_t start = 0;
    for (std::size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      const std::string_view line(pending.data() + start, newline - start);
      if (dropping) {
        dropping = false;
        continue;
      }
      if (blank(line))
        continue;
      try {
        emitEvent(decodeEvent(line));
      } catch (const ProtocolError& e) {
        emitEvent(TimedEvent{0, protocolErrorEvent(e, line)});
      }
    }
    pending.erase(0, start);
    if (pending.size() > kMaxLineBytes) {
      emitEvent(TimedEvent{
          0, ErrorEvent{"protocol", "", 0, "the engine wrote a line longer than 64 MiB; dropped",
                        "report this as a bug", false}});
      pending.clear();
      dropping = true;
    }
  }
}

void IsolatedHost::readStderr() {
  std::string pending;
  std::array<char, 4096> buffer;
  auto emitLine = [this](std::string_view line) {
    if (!blank(line)) {
      emitEvent(TimedEvent{0, LogEvent{LogLevel::Warning, "engine: " + std::string(line)}});
    }
  };
  for (;;) {
    const std::size_t n = child_->readErrorOutput(buffer);
    if (n == 0)
      break;
    {
      const std::lock_guard lock(stateMutex_);
      stderrTail_.append(buffer.data(), n);
      if (stderrTail_.size() > kStderrTailBytes)
        stderrTail_.erase(0, stderrTail_.size() - kStderrTailBytes);
    }
    pending.append(buffer.data(), n);
    std::size_t start = 0;
    for (std::size_t newline; (newline = pending.find('\n', start)) != std::string::npos;
         start = newline + 1) {
      emitLine(std::string_view(pending).substr(start, newline - start));
    }
    pending.erase(0, start);
  }
  emitLine(pending);
}

}  // namespace lorascope::engine

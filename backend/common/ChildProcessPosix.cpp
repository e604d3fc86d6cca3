// common/ChildProcessPosix.cpp — ChildProcess on POSIX: posix_spawn into a process group of its
// own, a socket for the child's standard input (written with MSG_NOSIGNAL, so a child that died
// raises no SIGPIPE here), pipes for its output, waitid(WNOWAIT) so that kill() never reaches a
// process id the system has already handed to someone else.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "common/ChildProcess.h"
#include "common/ChildProcessParts.h"
#include "common/Platform.h"

extern char** environ;

namespace lorascope::common {
namespace {

std::string errorText(int error) {
  return std::strerror(error);
}

void closeFd(int& fd) {
  if (fd >= 0) {
    ::close(fd);
    fd = -1;
  }
}

// posix_spawn's attributes and file actions, destroyed on every path.
struct SpawnSetup {
  posix_spawnattr_t attr{};
  posix_spawn_file_actions_t actions{};
  SpawnSetup() {
    posix_spawnattr_init(&attr);
    posix_spawn_file_actions_init(&actions);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

}  // namespace

struct ChildProcess::Impl {
  pid_t pid = -1;
  int input = -1;  // our end of the child's stdin (a socket)
  int output = -1;
  int errorOutput = -1;
  // abandonOutput() writes a byte here; reads poll it beside their pipe and end when it is
  // readable.
  int abandonRead = -1;
  int abandonWrite = -1;
  std::mutex mutex;     // input, reaped
  bool reaped = false;  // after this, pid may name another process
};

ChildProcess::ChildProcess(const ChildOptions& options) : impl_(std::make_unique<Impl>()) {
  int inputPair[2] = {-1, -1};
  int outputPipe[2] = {-1, -1};
  int errorPipe[2] = {-1, -1};
  auto closeAll = [&] {
    for (int* fd : {&inputPair[0], &inputPair[1], &outputPipe[0], &outputPipe[1], &errorPipe[0],
                    &errorPipe[1]}) {
      closeFd(*fd);
    }
  };
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, inputPair) != 0 ||
      ::pipe2(outputPipe, O_CLOEXEC) != 0 || ::pipe2(errorPipe, O_CLOEXEC) != 0) {
    const int error = errno;
    closeAll();
    throw ChildProcessError("cannot start " + options.program + ": " + errorText(error));
  }

  SpawnSetup setup;
  // The child's ends become its 0, 1 and 2 (dup2 clears close-on-exec on the copies); every other
  // descriptor of ours is close-on-exec.
  posix_spawn_file_actions_adddup2(&setup.actions, inputPair[1], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, outputPipe[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, errorPipe[1], STDERR_FILENO);
  if (!options.workingDirectory.empty()) {
    posix_spawn_file_actions_addchdir_np(&setup.actions, options.workingDirectory.c_str());
  }
  // A process group of its own, default dispositions and no blocked signals, whatever this
  // process has set for itself (a CLI that catches Ctrl-C).
  sigset_t defaults, none;
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD}) {
    sigaddset(&defaults, s);
  }
  sigemptyset(&none);
  posix_spawnattr_setflags(&setup.attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&setup.attr, 0);
  posix_spawnattr_setsigdefault(&setup.attr, &defaults);
  posix_spawnattr_setsigmask(&setup.attr, &none);

  std::vector<std::string> argvText{options.program};
  argvText.insert(argvText.end(), options.arguments.begin(), options.arguments.end());
  std::vector<char*> argv;
  for (std::string& a : argvText) {
    argv.push_back(a.data());
  }
  argv.push_back(nullptr);

  std::vector<std::string_view> current;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    current.emplace_back(*e);
  }
  std::vector<std::string> envText = child::environmentWith(
      current, options.environment, [](std::string_view a, std::string_view b) { return a == b; });
  std::vector<char*> envp;
  for (std::string& e : envText) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);

  const int error = ::posix_spawn(&impl_->pid, options.program.c_str(), &setup.actions, &setup.attr,
                                  argv.data(), envp.data());
  closeFd(inputPair[1]);
  closeFd(outputPipe[1]);
  closeFd(errorPipe[1]);
  if (error != 0) {
    closeAll();
    throw ChildProcessError("cannot start " + options.program + ": " + errorText(error));
  }
  impl_->input = inputPair[0];
  impl_->output = outputPipe[0];
  impl_->errorOutput = errorPipe[0];
  int abandon[2] = {-1, -1};
  if (::pipe(abandon) != 0) {
    const int pipeError = errno;
    kill();
    wait();
    closeFd(impl_->input);
    closeFd(impl_->output);
    closeFd(impl_->errorOutput);
    throw ChildProcessError("cannot start " + options.program + ": " + errorText(pipeError));
  }
  ::fcntl(abandon[0], F_SETFD, FD_CLOEXEC);
  ::fcntl(abandon[1], F_SETFD, FD_CLOEXEC);
  impl_->abandonRead = abandon[0];
  impl_->abandonWrite = abandon[1];
}

ChildProcess::~ChildProcess() {
  bool reaped;
  {
    const std::lock_guard lock(impl_->mutex);
    reaped = impl_->reaped;
  }
  if (!reaped) {
    kill();
    wait();
  }
  closeFd(impl_->input);
  closeFd(impl_->output);
  closeFd(impl_->errorOutput);
  closeFd(impl_->abandonRead);
  closeFd(impl_->abandonWrite);
}

std::int64_t ChildProcess::id() const {
  return impl_->pid;
}

bool ChildProcess::write(std::string_view bytes) {
  const std::lock_guard lock(impl_->mutex);
  while (!bytes.empty()) {
    if (impl_->input < 0) {
      return false;
    }
    const ssize_t n = ::send(impl_->input, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;  // EPIPE: the child is gone or closed its input
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

void ChildProcess::closeInput() {
  const std::lock_guard lock(impl_->mutex);
  closeFd(impl_->input);
}

namespace {

// Reads what `fd` has, waiting for it; 0 at its end or once `abandon` is readable.
std::size_t readSome(int fd, int abandon, std::span<char> buffer) {
  for (;;) {
    std::array<pollfd, 2> fds{{{fd, POLLIN, 0}, {abandon, POLLIN, 0}}};
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR)
        continue;
      return 0;
    }
    if (fds[1].revents != 0)
      return 0;
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n >= 0)
      return static_cast<std::size_t>(n);
    if (errno != EINTR)
      return 0;
  }
}

}  // namespace

std::size_t ChildProcess::readOutput(std::span<char> buffer) {
  return readSome(impl_->output, impl_->abandonRead, buffer);
}

std::size_t ChildProcess::readErrorOutput(std::span<char> buffer) {
  return readSome(impl_->errorOutput, impl_->abandonRead, buffer);
}

void ChildProcess::abandonOutput() {
  const char byte = 1;
  while (::write(impl_->abandonWrite, &byte, 1) < 0 && errno == EINTR) {
  }
}

void ChildProcess::kill() {
  const std::lock_guard lock(impl_->mutex);
  if (impl_->reaped || impl_->pid <= 0)
    return;
  ::kill(-impl_->pid, SIGKILL);  // its process group (anything it started)
  ::kill(impl_->pid, SIGKILL);
}

void ChildProcess::terminate() {
  const std::lock_guard lock(impl_->mutex);
  if (impl_->reaped || impl_->pid <= 0)
    return;
  ::kill(-impl_->pid, SIGTERM);
}

std::vector<std::int64_t> ChildProcess::processTree() const {
  std::int64_t root = 0;
  {
    const std::lock_guard lock(impl_->mutex);
    if (impl_->reaped || impl_->pid <= 0)
      return {};
    root = impl_->pid;
  }
  std::vector<std::int64_t> tree;
  for (const std::uint32_t pid : lorascope::common::processTree(static_cast<std::uint32_t>(root)))
    tree.push_back(pid);
  return tree;
}

void ChildProcess::waitForExit() {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(impl_->pid), &info, WEXITED | WNOWAIT) != 0 &&
         errno == EINTR) {
  }
}

ChildExit ChildProcess::wait() {
  // Wait without reaping, so that kill() can still tell a live pid from a reused one.
  waitForExit();
  const std::lock_guard lock(impl_->mutex);
  int status = 0;
  while (::waitpid(impl_->pid, &status, 0) < 0 && errno == EINTR) {
  }
  impl_->reaped = true;
  ChildExit exit;
  if (WIFSIGNALED(status)) {
    exit.signaled = true;
    exit.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    exit.exitCode = WEXITSTATUS(status);
  }
  return exit;
}

std::string ChildProcess::signalName(int signal) {
  static constexpr std::array<std::pair<int, const char*>, 12> kNames{{{SIGKILL, "SIGKILL"},
                                                                       {SIGSEGV, "SIGSEGV"},
                                                                       {SIGABRT, "SIGABRT"},
                                                                       {SIGBUS, "SIGBUS"},
                                                                       {SIGILL, "SIGILL"},
                                                                       {SIGFPE, "SIGFPE"},
                                                                       {SIGTERM, "SIGTERM"},
                                                                       {SIGINT, "SIGINT"},
                                                                       {SIGHUP, "SIGHUP"},
                                                                       {SIGPIPE, "SIGPIPE"},
                                                                       {SIGQUIT, "SIGQUIT"},
                                                                       {SIGTRAP, "SIGTRAP"}}};
  for (const auto& [number, name] : kNames) {
    if (number == signal)
      return name;
  }
  return "signal " + std::to_string(signal);
}

namespace child {

const char kPathListSeparator = ':';

std::string searchPath() {
  const char* path = std::getenv("PATH");
  return path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
}

bool namesFolder(const std::string& name) {
  return name.find('/') != std::string::npos;
}

std::string executableAt(const std::filesystem::path& candidate) {
  std::error_code error;
  return std::filesystem::is_regular_file(candidate, error) &&
                 ::access(candidate.c_str(), X_OK) == 0
             ? candidate.string()
             : "";
}

}  // namespace child

std::string currentExecutablePath() {
  std::array<char, PATH_MAX> path{};
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  return n > 0 ? std::string(path.data(), static_cast<std::size_t>(n)) : std::string();
}

}  // namespace lorascope::common

// common/ChildProcess.h — a child process with its standard streams connected to this one: the
// OS side of running the engine as `lorascope-train engine` (the GUI's supervisor, the CLI's
// `train`, and later external trainers). Plain C++ without OS headers; ChildProcessPosix.cpp
// implements it with posix_spawn, pipes and process groups, ChildProcessWin32.cpp with
// CreateProcessW, anonymous pipes and a job object. Strings are UTF-8.
//
// Threads: readOutput and readErrorOutput block, each on its own thread; write, closeInput and
// kill may come from any thread; wait() from one thread, once. The child runs in a process group
// of its own: a Ctrl-C on the terminal reaches only this process, which decides what the child
// is told (the engine checkpoints when its input ends), and kill() reaches the whole group.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lorascope::common {

// The child could not be started; the message names the program and the reason.
class ChildProcessError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ChildOptions {
  std::string program;  // a path (no search of PATH)
  std::vector<std::string> arguments;
  // Set in the child on top of this process's own environment.
  std::vector<std::pair<std::string, std::string>> environment;
  // Where the child starts; "" = this process's working directory.
  std::string workingDirectory = {};
};

// How the child ended.
struct ChildExit {
  bool signaled = false;  // killed by a signal (a crash, a kill)
  int exitCode = 0;       // when it exited
  int signal = 0;         // when signaled: the signal's number
};

class ChildProcess {
 public:
  // Starts the child; throws ChildProcessError when it cannot be started (missing, not
  // executable).
  explicit ChildProcess(const ChildOptions& options);
  // A child still running is killed and reaped (no zombie is left behind).
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  std::int64_t id() const;

  // Writes all of `bytes` to the child's standard input; false once the child no longer reads it
  // (it exited or closed it). Never raises a signal in this process.
  bool write(std::string_view bytes);
  // Ends the child's standard input (it reads end-of-file).
  void closeInput();

  // Blocks until the child writes to its standard output (error output) or closes it; returns the
  // bytes read, 0 at the end.
  std::size_t readOutput(std::span<char> buffer);
  std::size_t readErrorOutput(std::span<char> buffer);

  // Ends the child (and its process group) at once; nothing once it has been reaped.
  void kill();
  // Asks the child's process group to end (SIGTERM on POSIX): a trainer may save and exit.
  // Nothing once it has been reaped.
  void terminate();
  // The child and every process below it (its children, theirs, ...) that still runs, the child
  // first; empty once it has been reaped. Where the platform cannot list processes: the child.
  std::vector<std::int64_t> processTree() const;
  // Blocks until the child has ended and reaps it.
  ChildExit wait();
  // Blocks until the child has ended without reaping it: terminate() and kill() still reach what
  // it left running in its process group (job object) until wait() reaps it.
  void waitForExit();
  // Ends the reads: readOutput and readErrorOutput, blocked or later, return 0 (end) even while
  // a process outside the group (a daemon that left it) still holds the pipes open.
  void abandonOutput();

  // The signal's name ("SIGKILL", "SIGSEGV"), or "signal N".
  static std::string signalName(int signal);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// `name` as the shell would find it: a name with a '/' as it is, else the first executable file
// of that name in the directories of PATH. "" when there is none (or it is not executable).
std::string findExecutable(const std::string& name);

// The path of the running program (to start another instance of it), UTF-8; "" when the
// platform does not tell.
std::string currentExecutablePath();

}  // namespace lorascope::common

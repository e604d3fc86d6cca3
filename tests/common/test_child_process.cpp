// test_child_process.cpp — common/ChildProcess on this system, with this program as its own
// child: what is written to the child's stdin comes back on its stdout, its stderr is separate,
// its exit code arrives; the environment given is set in it (a value with spaces);
// arguments with spaces, quotes and backslashes arrive as they were given (the Win32 side quotes
// a command line); kill() ends it and reads as SIGKILL; a missing program is an error naming it.
// Qt-free (a plain main), so the Windows build runs the Win32 implementation with it.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/ChildProcess.h"

namespace common = lorascope::common;

namespace {

int gFailures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    ++gFailures;
    std::printf("FAIL: %s\n", what.c_str());
  }
}

// The child's side: echoes its input, then the variable, then exits 7.
int echoChild() {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::cout << "echo: " << line << "\n";
  }
  const char* value = std::getenv("LORASCOPE_TEST_VAR");
  std::cout << "LORASCOPE_TEST_VAR=" << (value != nullptr ? value : "(unset)") << std::endl;
  std::cerr << "to stderr" << std::endl;
  return 7;
}

std::string readAll(common::ChildProcess& child, bool errorOutput) {
  std::string text;
  char buffer[256];
  for (;;) {
    const std::size_t n = errorOutput ? child.readErrorOutput(buffer) : child.readOutput(buffer);
    if (n == 0) {
      return text;
    }
    text.append(buffer, n);
  }
}

std::string withoutCarriageReturns(std::string text) {
  std::erase(text, '\r');
  return text;
}

void streamsEnvironmentAndExitCode(const std::string& self) {
  common::ChildProcess child({self, {"--echo"}, {{"LORASCOPE_TEST_VAR", "value with spaces"}}});
  check(child.id() > 0, "the child has an id");
  check(child.write("hello\nworld\n"), "the child reads its input");
  child.closeInput();
  std::string errors;
  std::thread stderrReader([&] { errors = readAll(child, true); });
  const std::string output = withoutCarriageReturns(readAll(child, false));
  stderrReader.join();
  const common::ChildExit exit = child.wait();
  check(output == "echo: hello\necho: world\nLORASCOPE_TEST_VAR=value with spaces\n",
        "its output: the echoed lines and the variable (got '" + output + "')");
  check(withoutCarriageReturns(errors) == "to stderr\n", "its error output apart");
  check(!exit.signaled && exit.exitCode == 7, "its exit code 7");
}

void argumentsArriveAsGiven(const std::string& self) {
  const std::vector<std::string> arguments = {
      "plain", "with space", "quote\"inside", "back\\slash\\", "C:\\dir with space\\", ""};
  std::vector<std::string> given = {"--args"};
  given.insert(given.end(), arguments.begin(), arguments.end());
  common::ChildProcess child({self, given, {}});
  child.closeInput();
  const std::string output = withoutCarriageReturns(readAll(child, false));
  child.wait();
  std::string expected;
  for (const std::string& a : arguments) {
    expected += "[" + a + "]\n";
  }
  check(output == expected, "arguments arrive as given (got '" + output + "')");
}

void killEndsItAsSigkill(const std::string& self) {
  common::ChildProcess child({self, {"--sleep"}, {}});
  child.kill();
  const common::ChildExit exit = child.wait();
  check(exit.signaled && common::ChildProcess::signalName(exit.signal) == "SIGKILL",
        "kill() ends the child and reads as SIGKILL");
}

void aMissingProgramIsNamed() {
  try {
    common::ChildProcess child({"/nonexistent/lorascope-no-such-program", {}, {}});
    check(false, "starting a missing program throws");
  } catch (const common::ChildProcessError& e) {
    check(std::string(e.what()).find("lorascope-no-such-program") != std::string::npos,
          std::string("the error names the program: ") + e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--echo") {
    return echoChild();
  }
  if (mode == "--args") {
    for (int i = 2; i < argc; ++i) {
      std::cout << "[" << argv[i] << "]\n";
    }
    return 0;
  }
  if (mode == "--sleep") {
    std::this_thread::sleep_for(std::chrono::minutes(5));
    return 0;
  }
  const std::string self = common::currentExecutablePath();
  check(!self.empty(), "this program's path is known");
  streamsEnvironmentAndExitCode(self);
  argumentsArriveAsGiven(self);
  killEndsItAsSigkill(self);
  aMissingProgramIsNamed();
  std::printf("%s: %d failure(s)\n", gFailures == 0 ? "PASS" : "FAIL", gFailures);
  return gFailures == 0 ? 0 : 1;
}

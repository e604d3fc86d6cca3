// test_child_process.cpp — common/ChildProcess on this system, with this program as its own
// child: what is written to the child's stdin comes back on its stdout, its stderr is separate,
// its exit code arrives; the environment given is set in it (a value with spaces);
// arguments with spaces, quotes, backslashes and non-ASCII letters arrive as they were given (the
// Win32 side quotes a UTF-16 command line; the child reads it back through
// common::commandLineArguments, as lorascope-train does); kill() ends it and reads as SIGKILL;
// abandonOutput() ends a read blocked on a silent child; waitForExit() leaves the exit code to
// wait(); this process's tree (common::processTree) holds its child; a missing program is an error
// naming it; findExecutable searches the PATH it is given. On
// the Qt-free runner with a main() of its own (the child modes), so the Windows build runs the
// Win32 implementation with it.
#include "TestRunner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "common/ChildProcess.h"
#include "common/OsError.h"  // defines: pathFromUtf8, pathText
#include "common/Platform.h"

namespace common = lorascope::common;

namespace {

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

// This program, started again as the child.
std::string self() {
  const std::string path = common::currentExecutablePath();
  VERIFY2(!path.empty(), "this program's path is known");
  return path;
}

}  // namespace

TEST_CASE(streamsEnvironmentAndExitCode) {
  common::ChildProcess child({self(), {"--echo"}, {{"LORASCOPE_TEST_VAR", "value with spaces"}}});
  VERIFY2(child.id() > 0, "the child has an id");
  VERIFY2(child.write("hello\nworld\n"), "the child reads its input");
  child.closeInput();
  std::string errors;
  std::thread stderrReader([&] { errors = readAll(child, true); });
  const std::string output = withoutCarriageReturns(readAll(child, false));
  stderrReader.join();
  const common::ChildExit exit = child.wait();
  VERIFY2(output == "echo: hello\necho: world\nLORASCOPE_TEST_VAR=value with spaces\n",
          "its output: the echoed lines and the variable (got '" + output + "')");
  VERIFY2(withoutCarriageReturns(errors) == "to stderr\n", "its error output apart");
  VERIFY2(!exit.signaled && exit.exitCode == 7, "its exit code 7");
}

TEST_CASE(argumentsArriveAsGiven) {
  const std::vector<std::string> arguments = {
      "plain",
      "with space",
      "quote\"inside",
      "back\\slash\\",
      "C:\\dir with space\\",
      "",
      "\xc5\x81ukasz/\xe6\x97\xa5\xe6\x9c\xac"};  // "Łukasz/日本" as UTF-8
  std::vector<std::string> given = {"--args"};
  given.insert(given.end(), arguments.begin(), arguments.end());
  common::ChildProcess child({self(), given, {}});
  child.closeInput();
  const std::string output = withoutCarriageReturns(readAll(child, false));
  child.wait();
  std::string expected;
  for (const std::string& a : arguments) {
    expected += "[" + a + "]\n";
  }
  VERIFY2(output == expected, "arguments arrive as given (got '" + output + "')");
}

TEST_CASE(killEndsItAsSigkill) {
  common::ChildProcess child({self(), {"--sleep"}, {}});
  child.kill();
  const common::ChildExit exit = child.wait();
  VERIFY2(exit.signaled && common::ChildProcess::signalName(exit.signal) == "SIGKILL",
          "kill() ends the child and reads as SIGKILL");
}

TEST_CASE(thisProcessTreeHoldsItsChild) {
  common::ChildProcess child({self(), {"--sleep"}, {}});
  const std::vector<std::int64_t> childTree = child.processTree();
  VERIFY2(!childTree.empty(), "a running child's tree holds the child");
  const std::vector<std::uint32_t> ours = common::processTree(common::currentProcessId());
  VERIFY2(!ours.empty() && ours.front() == common::currentProcessId(),
          "the tree starts at its root");
  VERIFY2(std::find(ours.begin(), ours.end(), static_cast<std::uint32_t>(childTree.front())) !=
              ours.end(),
          "this process's tree holds the child it started");
  child.kill();
  child.wait();
}

TEST_CASE(abandonedOutputEndsABlockedRead) {
  common::ChildProcess child({self(), {"--sleep"}, {}});  // holds its output open, silent
  std::size_t read = 1;
  std::thread reader([&] {
    char buffer[64];
    read = child.readOutput(buffer);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the read waits by now
  child.abandonOutput();
  reader.join();
  VERIFY2(read == 0, "an abandoned read ends as at the end of the output");
  char buffer[64];
  VERIFY2(child.readErrorOutput(buffer) == 0, "and so does every later read");
  child.kill();
  child.wait();
}

TEST_CASE(waitForExitLeavesTheExitToWait) {
  common::ChildProcess child({self(), {"--echo"}, {}});
  child.closeInput();
  std::thread drain([&] { readAll(child, true); });
  readAll(child, false);
  drain.join();
  child.waitForExit();
  child.terminate();  // the group of an exited child: nothing left, no harm
  const common::ChildExit exit = child.wait();
  VERIFY2(!exit.signaled && exit.exitCode == 7, "wait() still reaps it with its exit code");
}

TEST_CASE(aMissingProgramIsNamed) {
  try {
    common::ChildProcess child({"/nonexistent/lorascope-no-such-program", {}, {}});
    FAIL("starting a missing program throws");
  } catch (const common::ChildProcessError& e) {
    VERIFY2(std::string(e.what()).find("lorascope-no-such-program") != std::string::npos,
            std::string("the error names the program: ") + e.what());
  }
}

TEST_CASE(findExecutableSearchesPath) {
  const std::filesystem::path program = common::pathFromUtf8(self());
  const std::string folder = common::pathText(program.parent_path());
  const std::string name = common::pathText(program.filename());
  const char separator = common::kOsFamily == common::OsFamily::Windows ? ';' : ':';
  // In a child, so that PATH is the one given: a folder without the program, then its own.
  const std::string path = "/nonexistent/lorascope" + std::string(1, separator) + folder;
  common::ChildProcess child(
      {self(), {"--find", name, "lorascope-no-such-program"}, {{"PATH", path}}});
  child.closeInput();
  const std::string output = withoutCarriageReturns(readAll(child, false));
  child.wait();
  VERIFY2(
      output == "[" + self() + "]\n[]\n",
      "the program is found in PATH's second folder, a missing one is not (got '" + output + "')");
  VERIFY2(common::findExecutable(self()) == self(), "a name with a folder is taken as it is");
  VERIFY2(common::findExecutable(folder + "/lorascope-no-such-program").empty(),
          "and is not searched for");
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "--echo") {
    return echoChild();
  }
  if (mode == "--args") {
    const std::vector<std::string> arguments = common::commandLineArguments(argc, argv);
    for (std::size_t i = 1; i < arguments.size(); ++i) {
      std::cout << "[" << arguments[i] << "]\n";
    }
    return 0;
  }
  if (mode == "--find") {
    for (int i = 2; i < argc; ++i) {
      std::cout << "[" << common::findExecutable(argv[i]) << "]\n";
    }
    return 0;
  }
  if (mode == "--sleep") {
    std::this_thread::sleep_for(std::chrono::minutes(5));
    return 0;
  }
  return lstest::runTests(argc, argv);
}

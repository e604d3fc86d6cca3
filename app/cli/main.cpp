// cli/main.cpp — lorascope-train: the command-line trainer and tools. Plain C++ (no Qt), so it
// runs on machines without a display and builds where Qt is absent.
#include <algorithm>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/Commands.h"
#include "common/Platform.h"  // defines: commandLineArguments
#include "compute/BuildInfo.h"
#include "job/CliArgs.h"
#include "job/RunOptions.h"  // defines: trainCommand

namespace {

using lorascope::cli::Args;

struct Subcommand {
  std::function<int(const Args&)> run;
  const lorascope::job::CommandSpec& spec;
};

const std::vector<Subcommand>& subcommands() {
  namespace cli = lorascope::cli;
  static const std::vector<Subcommand> table = {
      {cli::runBench, cli::benchCommand()},
      {cli::runDemo, cli::demoCommand()},
      {cli::runDevices, cli::devicesCommand()},
      {cli::runDoctor, cli::doctorCommand()},
      {cli::runEngine, cli::engineCommand()},
      {cli::runEval, cli::evalCommand()},
      {cli::runExport, cli::exportCommand()},
      {cli::runGenerate, cli::generateCommand()},
      {cli::runInspectModel, cli::inspectModelCommand()},
      {cli::runProfile, cli::profileCommand()},
      {cli::runSupervise, cli::superviseCommand()},
      {cli::runTokenize, cli::tokenizeCommand()},
      {cli::runTrain, lorascope::job::trainCommand()},
      {cli::runValidateData, cli::validateDataCommand()},
  };
  return table;
}

// `text` wrapped to 96 columns, continuation lines indented by six spaces.
void printWrapped(std::ostream& out, const std::string& first, const std::string& text) {
  std::string line = first;
  std::istringstream words(text);
  std::string word;
  bool fresh = true;
  while (words >> word) {
    if (!fresh && line.size() + 1 + word.size() > 96) {
      out << line << "\n";
      line = "      ";
      fresh = true;
    }
    line += (fresh ? "" : " ") + word;
    fresh = false;
  }
  out << line << "\n";
}

// The synopsis of every command, from the option tables, and what it does.
void printUsage(std::ostream& out) {
  out << "usage: lorascope-train <command> [options]\n"
         "       lorascope-train <command> --help\n"
         "       lorascope-train --version | --help\n\ncommands:\n";
  for (const Subcommand& sub : subcommands()) {
    printWrapped(out, "  ", lorascope::job::synopsis(sub.spec));
    const std::string& summary = sub.spec.summary;
    const std::size_t end = summary.find(". ");
    printWrapped(out, "      ", end == std::string::npos ? summary : summary.substr(0, end + 1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  // UTF-8, also on Windows (where argv is in the ANSI code page): paths are UTF-8 text throughout.
  const Args args = lorascope::common::commandLineArguments(argc, argv);
  if (args.empty()) {
    printUsage(std::cerr);
    return 2;
  }
  if (args[0] == "--help" || args[0] == "-h") {
    printUsage(std::cout);
    return 0;
  }
  if (args[0] == "--version") {
    std::cout << lorascope::compute::describeBuildAndDevices(
        lorascope::compute::queryGpuInventory());
    return 0;
  }
  const auto it = std::find_if(subcommands().begin(), subcommands().end(),
                               [&](const Subcommand& sub) { return sub.spec.name == args[0]; });
  if (it == subcommands().end()) {
    std::cerr << "lorascope-train: unknown command '" << args[0] << "'\n";
    printUsage(std::cerr);
    return 2;
  }
  const Args rest(args.begin() + 1, args.end());
  // Words after "--" belong to a command `supervise` runs, its --help included.
  const auto ours = std::find(rest.begin(), rest.end(), "--");
  if (std::find(rest.begin(), ours, "--help") != ours ||
      std::find(rest.begin(), ours, "-h") != ours) {
    std::cout << lorascope::job::formatHelp(it->spec, "lorascope-train");
    return 0;
  }
  try {
    return it->run(rest);
  } catch (const lorascope::job::UsageError& e) {
    std::cerr << "lorascope-train " << args[0] << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lorascope-train " << args[0] << ": error: " << e.what() << "\n";
    return 1;
  }
}

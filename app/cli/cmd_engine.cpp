// cli/cmd_engine.cpp — `lorascope-train engine`: the isolated engine. Commands arrive as JSON
// lines on stdin, events leave as JSON lines on stdout; an IsolatedHost starts it (under the
// Supervisor: the GUI with a profile's environment, `lorascope-train train` with its own). It
// trains (start) and generates (generate: the GUI's Try it page has an engine of its own). Not
// meant to be typed by hand.
#include <iostream>

#include "cli/Commands.h"
#include "compute/BuildInfo.h"
#include "engine/StdioEngine.h"
#include "group/NcclCollective.h"  // defines: probeCollectiveLibrary
#include "job/CliArgs.h"
#include "job/EngineJob.h"
#include "job/GenerationService.h"  // defines: createGenerationRunner, generationHangCheck

namespace lorascope::cli {

engine::HelloEvent engineHello() {
  const compute::BuildInfo& info = compute::buildInfo();
  engine::HelloEvent hello{engine::kProtocolVersion, info.version, info.flavour, {}};
  const compute::GpuInventory inventory = compute::queryGpuInventory();
  for (const compute::GpuDeviceInfo& d : inventory.devices) {
    hello.devices.push_back({d.name, d.architecture, d.totalBytes});
  }
  hello.gpuRuntime = inventory.runtime;
  hello.noDeviceReason = inventory.unavailableReason;
  const group::CollectiveLibrary library = group::probeCollectiveLibrary();
  if (library.available) {
    hello.collectiveLibrary = library.name + " " + library.version;
  } else {
    hello.noCollectiveReason = library.reason;
  }
  return hello;
}

const job::CommandSpec& engineCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "engine",
      .operands = "",
      .summary =
          "The isolated engine for the GUI and `train`: JSON-line commands on stdin, events on "
          "stdout. Not meant to be typed by hand.",
      .options = {},
  };
  return command;
}

int runEngine(const Args& args) {
  const job::CliArgs parsed(args, engineCommand());
  if (!parsed.positional().empty()) {
    throw job::UsageError("unexpected argument '" + parsed.positional()[0] + "'");
  }
  std::ios::sync_with_stdio(false);
  return engine::serveEngineOverStreams(job::createTrainingJob, engineHello(), std::cin, std::cout,
                                        job::createGenerationRunner(), job::generationHangCheck());
}

}  // namespace lorascope::cli

// cli/cmd_demo.cpp — `lorascope-train demo [--json]`: the built-in demo's model folder and
// dataset, written into the per-user cache when absent (train/DemoModel.h, train/DemoDataset.h),
// and where they are. The window's Setup page asks this command for them, so that it inspects the
// demo without linking the trainer that assembles it.
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/Commands.h"
#include "common/OsError.h"  // defines: pathText
#include "job/CliArgs.h"
#include "train/DemoDataset.h"  // defines: ensureDemoDataset
#include "train/DemoModel.h"    // defines: defaultCacheDir, ensureDemoModel

namespace lorascope::cli {

const job::CommandSpec& demoCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "demo",
      .summary =
          "Writes the built-in demo's model folder and dataset into the cache (when absent) "
          "and prints where they are. Exit 1 when they cannot be written.",
      .options = {{.name = "json",
                   .type = OptionType::Bool,
                   .help = "One JSON object: {\"model\": DIR, \"data\": FILE}."}}};
  return command;
}

int runDemo(const Args& args) {
  const job::CliArgs parsed(args, demoCommand());
  if (!parsed.positional().empty()) {
    throw job::UsageError("takes no operands, got '" + parsed.positional().front() + "'");
  }
  const std::filesystem::path cache = train::defaultCacheDir();
  const std::string model = common::pathText(train::ensureDemoModel(cache));
  const std::string data = common::pathText(train::ensureDemoDataset(cache));
  if (parsed.has("json")) {
    std::cout << nlohmann::json{{"model", model}, {"data", data}}.dump() << "\n";
  } else {
    std::cout << "model " << model << "\ndata  " << data << "\n";
  }
  return 0;
}

}  // namespace lorascope::cli

// cli/cmd_export.cpp — `lorascope-train export RUN_DIR [--out DIR] [--merge OUT]
// [--checkpoint N]`: the run's adapter in PEFT's format (the final one, else the newest
// checkpoint, or checkpoint N), copied to DIR and/or merged into the base model as a folder
// transformers loads.
#include <iostream>

#include "cli/Commands.h"
#include "job/CliArgs.h"
#include "train/Merge.h"
#include "train/PeftExport.h"
#include "train/RunDirectory.h"

namespace lorascope::cli {
namespace fs = std::filesystem;

const job::CommandSpec& exportCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "export",
      .operands = "RUN_DIR",
      .summary =
          "The run's adapter in PEFT's format (the final one, else the newest checkpoint); --merge "
          "writes base + adapter as a model folder transformers loads.",
      .options =
          {
              {.name = "out",
               .type = OptionType::Text,
               .help = "Copy the adapter to this folder.",
               .valueName = "DIR"},
              {.name = "merge",
               .type = OptionType::Text,
               .help = "Write the merged model to this folder.",
               .valueName = "OUT_DIR"},
              {.name = "checkpoint",
               .type = OptionType::Integer,
               .help = "The checkpoint's step to export instead.",
               .min = 1,
               .max = 1e15},
          },
  };
  return command;
}

int runExport(const Args& args) {
  const job::CliArgs parsed(args, exportCommand());
  if (parsed.positional().size() != 1) {
    throw job::UsageError("expects one RUN_DIR (the --out folder of `lorascope-train train`)");
  }
  const train::RunDirectory run = train::RunDirectory::open(parsed.positional()[0]);
  fs::path source;
  std::optional<std::int64_t> exportedStep;  // the checkpoint's step; unset for adapter/
  if (const auto step = parsed.value("checkpoint")) {
    std::int64_t n = 0;
    try {
      n = std::stoll(*step);
    } catch (const std::exception&) {
      throw job::UsageError("--checkpoint needs a step number, got '" + *step + "'");
    }
    run.loadCheckpoint(n);  // checks that it exists, is complete and belongs to this config
    source = run.checkpointDir(n);
    exportedStep = n;
  } else if (fs::exists(run.finalAdapterDir() / train::kAdapterWeightsFile)) {
    source = run.finalAdapterDir();
  } else {
    exportedStep = run.loadCheckpoint(
                          std::nullopt,
                          [](const std::string& note) { std::cerr << "warning: " << note << "\n"; })
                       .step;
    source = run.checkpointDir(*exportedStep);
  }
  const train::PeftAdapterFiles adapter = train::readPeftAdapter(source);
  std::cout << "adapter: " << source.string() << " (r " << adapter.adapter.config.rank << ", "
            << adapter.adapter.weights.size() << " projections, "
            << adapter.adapter.parameterCount() << " parameters)\n";
  if (const auto out = parsed.value("out")) {
    train::writePeftAdapter(*out, adapter.adapter, run.baseModelName());
    run.writeModelCard(*out, adapter.adapter, exportedStep);
    std::cout << "PEFT adapter written to " << *out
              << " (load it with peft.PeftModel.from_pretrained(base, \"" << *out << "\"))\n";
  }
  if (const auto mergeDir = parsed.value("merge")) {
    const train::MergeReport report =
        train::mergeAdapterIntoModel(run.baseModel(), adapter.adapter, *mergeDir);
    std::cout << "merged model written to " << *mergeDir << ": " << report.mergedTensors
              << " projections merged, " << report.copiedTensors << " tensors and "
              << report.copiedFiles << " files copied from " << run.baseModel() << "\n";
  }
  return 0;
}

}  // namespace lorascope::cli

// cli/cmd_export.cpp — `lorascope-train export RUN_DIR [--out DIR] [--merge OUT]
// [--checkpoint N] [--json]`: the run's adapter in PEFT's format (the final one, else the newest
// checkpoint, or checkpoint N), copied to DIR and/or merged into the base model as a folder
// transformers loads. A merge shows its progress (bytes of weights written). With --json, stdout
// carries one event per line and nothing else:
//   {"v":1,"type":"adapter","path":...,"rank":8,"projections":28,"parameters":147968}
//   {"v":1,"type":"progress","done_bytes":...,"total_bytes":...}          (during --merge)
//   {"v":1,"type":"written","kind":"adapter"|"merged","path":..., ...}
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/Commands.h"
#include "common/Format.h"
#include "common/OsError.h"   // defines: pathFromUtf8, pathText
#include "common/Platform.h"  // defines: isTerminal
#include "job/CliArgs.h"
#include "train/Merge.h"
#include "train/PeftExport.h"
#include "train/RunDirectory.h"

namespace lorascope::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void printEvent(json event) {
  event["v"] = 1;
  std::cout << event.dump() << std::endl;
}

// The merge's progress: a line rewritten in place on a terminal, a line per 10 % otherwise, an
// event per percent with --json.
class MergeProgressOutput {
 public:
  explicit MergeProgressOutput(bool asJson)
      : json_(asJson), terminal_(common::isTerminal(common::StandardStream::Output)) {}

  void operator()(std::uint64_t done, std::uint64_t total) {
    const int percent = total > 0 ? static_cast<int>(100 * done / total) : 100;
    const int step = json_ || terminal_ ? 1 : 10;
    if (percent / step == shownPercent_ / step) {
      return;
    }
    shownPercent_ = percent;
    if (json_) {
      printEvent({{"type", "progress"}, {"done_bytes", done}, {"total_bytes", total}});
      return;
    }
    std::cout << (terminal_ ? "\r" : "") << "merging: " << std::setw(3) << percent << "% ("
              << common::formatBytes(done) << " of " << common::formatBytes(total) << ")"
              << (terminal_ ? "\x1b[K" : "\n") << std::flush;
    if (terminal_ && done == total) {
      std::cout << "\n";
    }
  }

 private:
  bool json_;
  bool terminal_;
  int shownPercent_ = -1;
};

}  // namespace

const job::CommandSpec& exportCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "export",
      .operands = "RUN_DIR",
      .summary =
          "The run's adapter in PEFT's format (the final one, else the newest checkpoint): --out "
          "copies it, --merge writes base + adapter as a model folder transformers loads (with "
          "its progress); with neither, it names the adapter it would export.",
      .options =
          {
              {.name = "out",
               .type = OptionType::Text,
               .help = "Copy the adapter to this folder, with a model card (README.md).",
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
              {.name = "json",
               .type = OptionType::Bool,
               .help = "Print one JSON event per line (adapter, progress, written) and nothing "
                       "else.",
               .defaultText = "false"},
          },
  };
  return command;
}

int runExport(const Args& args) {
  const job::CliArgs parsed(args, exportCommand());
  if (parsed.positional().size() != 1) {
    throw job::UsageError("expects one RUN_DIR (the --out folder of `lorascope-train train`)");
  }
  const bool asJson = parsed.has("json");
  // A writer's access: an export while the run trains would read a checkpoint being rotated away.
  const train::RunDirectory run = train::RunDirectory::open(
      common::pathFromUtf8(parsed.positional()[0]), train::RunDirectory::Access::Write);
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
  if (asJson) {
    printEvent({{"type", "adapter"},
                {"path", common::pathText(source)},
                {"rank", adapter.adapter.config.rank},
                {"projections", adapter.adapter.weights.size()},
                {"parameters", adapter.adapter.parameterCount()}});
  } else {
    std::cout << "adapter: " << common::pathText(source) << " (r " << adapter.adapter.config.rank
              << ", " << adapter.adapter.weights.size() << " projections, "
              << adapter.adapter.parameterCount() << " parameters)\n";
  }
  if (const auto out = parsed.value("out")) {
    train::writePeftAdapter(common::pathFromUtf8(*out), adapter.adapter, run.baseModelName());
    run.writeModelCard(common::pathFromUtf8(*out), adapter.adapter, exportedStep);
    if (asJson) {
      printEvent({{"type", "written"}, {"kind", "adapter"}, {"path", *out}});
    } else {
      std::cout << "PEFT adapter written to " << *out
                << " (load it with peft.PeftModel.from_pretrained(base, \"" << *out << "\"))\n";
    }
  }
  if (const auto mergeDir = parsed.value("merge")) {
    MergeProgressOutput progress(asJson);
    const train::MergeReport report = train::mergeAdapterIntoModel(
        common::pathFromUtf8(run.baseModel()), adapter.adapter, common::pathFromUtf8(*mergeDir),
        [&progress](std::uint64_t done, std::uint64_t total) { progress(done, total); });
    if (asJson) {
      printEvent({{"type", "written"},
                  {"kind", "merged"},
                  {"path", *mergeDir},
                  {"merged_tensors", report.mergedTensors},
                  {"copied_tensors", report.copiedTensors},
                  {"copied_files", report.copiedFiles},
                  {"base_model", run.baseModel()}});
    } else {
      std::cout << "merged model written to " << *mergeDir << ": " << report.mergedTensors
                << " projections merged, " << report.copiedTensors << " tensors and "
                << report.copiedFiles << " files copied from " << run.baseModel() << "\n";
    }
  }
  return 0;
}

}  // namespace lorascope::cli

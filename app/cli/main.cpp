// cli/main.cpp — lorascope-train: the command-line trainer and tools. Plain C++ (no Qt), so it
// runs on machines without a display and builds where Qt is absent.
#include <functional>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "cli/Commands.h"
#include "compute/BuildInfo.h"
#include "job/CliArgs.h"

namespace {

using lorascope::cli::Args;

struct Subcommand {
  std::function<int(const Args&)> run;
  const char* usage;
};

const std::map<std::string, Subcommand>& subcommands() {
  static const std::map<std::string, Subcommand> table = {
      {"engine",
       {lorascope::cli::runEngine,
        "engine   the isolated engine for the GUI: JSON-line commands on stdin, events on stdout"}},
      {"bench",
       {lorascope::cli::runBench,
        "bench [--model tiny|qwen|all] [--threads 1,2,16] [--steps N] [--checkpointing] "
        "[--profile]   CPU LoRA step tokens/s and peak RSS (the performance target's shapes)"}},
      {"devices",
       {lorascope::cli::runDevices,
        "devices [--json] [--watch] [--count N] [--interval-ms MS]   GPUs, live readings "
        "(VRAM, GTT, busy, temperature, power, clocks), processes and who holds the VRAM"}},
      {"eval",
       {lorascope::cli::runEval,
        "eval --model DIR (--ids \"1,2,3\" | --text \"...\") [--labels \"...\"] [--json]   "
        "CPU forward: loss and last logits"}},
      {"inspect-model",
       {lorascope::cli::runInspectModel,
        "inspect-model DIR [--json] [--batch N] [--seq N] [--rank R] [--check]   architecture, "
        "parameters, dtypes, LoRA training memory; --check reads every weight for NaN/inf"}},
      {"export",
       {lorascope::cli::runExport,
        "export RUN_DIR [--out DIR] [--merge OUT_DIR] [--checkpoint N]   the run's PEFT adapter; "
        "--merge writes base + adapter as a model folder transformers loads"}},
      {"profile",
       {lorascope::cli::runProfile,
        "profile check FILE...   a stability profile checked as the GUI loads it: allowed "
        "environment variables, value sizes, toggles; exit 1 when one is invalid"}},
      {"tokenize",
       {lorascope::cli::runTokenize,
        "tokenize --tokenizer PATH_OR_MODEL_DIR [--json] [--decode] [--skip-special] "
        "[--post-processor]   stdin lines to ids (or ids to text)"}},
      {"train",
       {lorascope::cli::runTrain,
        "train (--model DIR --data FILE --out RUN_DIR | --demo [--out RUN_DIR] | --resume RUN_DIR "
        "[--checkpoint N] [--device D]) [--steps N | --epochs E] [--batch-size B|auto] "
        "[--memory-margin F] [--grad-accum G] "
        "[--max-seq-len L] [--lr X] [--schedule constant|linear|cosine] [--warmup N] "
        "[--lora-r R] [--lora-alpha A] [--lora-dropout P] [--rslora true] [--targets q,k,v,...] "
        "[--seed S] [--checkpoint-every N] [--keep-checkpoints K] [--weight-decay W] "
        "[--max-grad-norm C] [--non-finite-steps N] [--packing true] [--activation-checkpointing "
        "true] "
        "[--device cpu|gpu|auto] [--config run.json]   LoRA training into a run folder (auto: the "
        "GPU when one is usable); Ctrl-C checkpoints and exits"}},
      {"validate-data",
       {lorascope::cli::runValidateData,
        "validate-data FILE (--model DIR | --tokenizer PATH) [--template NAME] "
        "[--max-seq-len N] [--format auto|alpaca|chat|text] [--policy truncate|drop] "
        "[--train-on-all] [--json]   dataset report; exit 0 when the report is produced (even "
        "with bad lines), 1 when FILE or the tokenizer cannot be read"}},
  };
  return table;
}

void printUsage(std::ostream& out) {
  out << "usage: lorascope-train <command> [options]\n"
         "       lorascope-train --version | --help\n\ncommands:\n";
  for (const auto& [name, sub] : subcommands()) {
    out << "  " << sub.usage << "\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Args args(argv + 1, argv + argc);
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
  const auto it = subcommands().find(args[0]);
  if (it == subcommands().end()) {
    std::cerr << "lorascope-train: unknown command '" << args[0] << "'\n";
    printUsage(std::cerr);
    return 2;
  }
  try {
    return it->second.run(Args(args.begin() + 1, args.end()));
  } catch (const lorascope::job::UsageError& e) {
    std::cerr << "lorascope-train " << args[0] << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "lorascope-train " << args[0] << ": error: " << e.what() << "\n";
    return 1;
  }
}

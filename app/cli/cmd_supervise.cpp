// cli/cmd_supervise.cpp — `lorascope-train supervise [options] -- COMMAND ARGS...`: runs a trainer
// we did not write (a PyTorch script, Hugging Face Trainer, accelerate, kohya-ss, Lightning) under
// a stability profile and the recovery ladder (external/CommandHost, external/ExternalSupervisor).
// Bad input — a command that cannot be found, a parser regex that does not compile, a profile
// that may not be used, a template without its placeholder — is an error before anything runs.
//
// Its lines are printed as the command prints them; LoRAscope's own lines start with
// "lorascope:" (steps parsed or probed, errors, incidents, restarts, the end). With --json stdout
// carries the events only, one JSON line each (engine/Protocol.h). <out> is a run folder
// (external/SupervisedRun.h): config.json, events.jsonl, metrics.jsonl, command.log; the window's
// Runs page lists it. Ctrl-C / SIGTERM: the command's process group is asked to end (SIGTERM) and
// is killed (SIGKILL) after --grace seconds, exit 130. Exit 0 when the command finished well, 1
// when it failed for good. --resume DIR runs the command of the run in DIR again, resuming from
// its newest checkpoint.
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/Commands.h"
#include "common/ChildProcess.h"  // defines: findExecutable
#include "common/Format.h"        // defines: formatBytes
#include "common/OsError.h"       // defines: pathFromUtf8, pathText
#include "common/Platform.h"      // defines: InterruptCounter
#include "external/CommandHost.h"
#include "external/SupervisedRun.h"
#include "job/CliArgs.h"
#include "runs/RunFolder.h"  // defines: unusedFolder

namespace lorascope::cli {
namespace fs = std::filesystem;

const job::CommandSpec& superviseCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "supervise",
      .operands = "-- COMMAND [ARGS...]",
      .summary =
          "Runs a trainer of your own (a PyTorch script, Hugging Face Trainer, accelerate, "
          "kohya-ss, Lightning) under a stability profile: progress parsed from its output, GPU "
          "errors classified, a crash or hang restarted with the next profile of the recovery "
          "ladder and the resume argument pointing at the newest checkpoint. With python -m "
          "lorascope_probe (python/ of the source tree on PYTHONPATH), PyTorch's memory "
          "statistics and allocator snapshots reach the memory map.",
      .options =
          {
              {.name = "profile",
               .type = OptionType::Text,
               .help = "the stability profile (a built-in or saved profile's name, or a profile "
                       "JSON file) whose environment the command starts with",
               .defaultText = "Balanced",
               .valueName = "NAME"},
              {.name = "parser",
               .type = OptionType::Text,
               .help = "how progress is read from the output: hf, tqdm, kohya, lightning, or "
                       "regex:PATTERN with named groups step, loss, lr, epoch",
               .defaultText = "hf",
               .valueName = "FORMAT"},
              {.name = "resume-arg",
               .type = OptionType::Text,
               .help = "arguments added on a restart, with {checkpoint_dir} replaced by the "
                       "newest checkpoint --checkpoint-glob finds (\"--resume {checkpoint_dir}\")",
               .valueName = "TEMPLATE"},
              {.name = "checkpoint-glob",
               .type = OptionType::Text,
               .help = "where the command's checkpoints are (\"out/checkpoint-*\"); the newest "
                       "match is resumed from",
               .valueName = "GLOB"},
              {.name = "batch-arg",
               .type = OptionType::Text,
               .help = "arguments that set the batch, with {batch} replaced by the batch "
                       "(\"--per_device_train_batch_size {batch}\"); the ladder halves it after "
                       "running out of memory",
               .valueName = "TEMPLATE"},
              {.name = "batch",
               .type = OptionType::Integer,
               .help = "the first attempt's batch, for --batch-arg",
               .min = 1,
               .max = 1 << 20},
              {.name = "hang-after",
               .type = OptionType::Integer,
               .help = "seconds without an output line or a probe step after which the command "
                       "counts as hung and is restarted",
               .defaultText = "0",
               .min = 0,
               .max = 7 * 24 * 3600,
               .zeroMeans = "no hang watch",
               .unit = "seconds"},
              {.name = "max-restarts",
               .type = OptionType::Integer,
               .help = "restarts before the run fails for good",
               .defaultText = "8",
               .min = 0,
               .max = 100},
              {.name = "grace",
               .type = OptionType::Integer,
               .help = "seconds the command's processes have to end after SIGTERM (Ctrl-C, a "
                       "stop, or the command's exit leaving processes behind) before SIGKILL; "
                       "output pipes still held open after that are no longer read",
               .defaultText = "10",
               .min = 1,
               .max = 3600,
               .unit = "seconds"},
              {.name = "out",
               .type = OptionType::Text,
               .help = "the run folder: config.json, events.jsonl, metrics.jsonl, command.log "
                       "and the probe's files (default lorascope-supervise-<date>-<time> in the "
                       "current directory)",
               .valueName = "DIR"},
              {.name = "resume",
               .type = OptionType::Text,
               .help = "run the command of the supervised run in DIR again (its config.json: "
                       "its command and the options that shape it), resuming from its newest "
                       "checkpoint, under its profile unless --profile names another; no command "
                       "after --, and only --profile, --json and --telemetry beside it",
               .valueName = "DIR"},
              {.name = "json",
               .type = OptionType::Bool,
               .help = "print the events as JSON lines (engine/Protocol.h) instead of text"},
              {.name = "telemetry",
               .type = OptionType::Bool,
               .help = "read the GPU's driver (NVML, amd-smi, rocm-smi, sysfs) for used VRAM and "
                       "who holds it",
               .defaultText = "true"},
          },
  };
  return command;
}

namespace {

// Named by the time, and a folder of its own also for a second `supervise` started within the
// same second in the same place.
std::string defaultOutDir() {
  const std::time_t now = std::time(nullptr);
  char text[64];
  // std::gmtime: gmtime_r is POSIX's only (check-os-headers.sh); the CLI asks once, on its main
  // thread.
  std::strftime(text, sizeof text, "lorascope-supervise-%Y%m%d-%H%M%S", std::gmtime(&now));
  return common::pathText(runs::unusedFolder(text));
}

void printEvent(const engine::TimedEvent& timed) {
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, engine::LogEvent>) {
          std::cout << e.text << "\n";
        } else if constexpr (std::is_same_v<T, engine::StepEvent>) {
          std::cout << "lorascope: step " << e.step
                    << (e.totalSteps > 0 ? "/" + std::to_string(e.totalSteps) : "") << " loss "
                    << e.loss;
          if (e.learningRate != 0)
            std::cout << " lr " << e.learningRate;
          if (e.microBatch > 0)
            std::cout << " batch " << e.microBatch;
          if (e.epoch)
            std::cout << " epoch " << *e.epoch;
          std::cout << "\n";
        } else if constexpr (std::is_same_v<T, engine::ErrorEvent>) {
          std::cout << "lorascope: error [" << e.category << "]: " << e.message
                    << (e.advice.empty() ? "" : " — " + e.advice) << "\n";
        } else if constexpr (std::is_same_v<T, engine::IncidentEvent>) {
          std::cout << "lorascope: incident: " << e.what << " — " << e.action << "\n";
        } else if constexpr (std::is_same_v<T, engine::StateEvent>) {
          if (e.state != engine::RunState::Running)
            std::cout << "lorascope: " << engine::toString(e.state) << ": " << e.detail << "\n";
        } else if constexpr (std::is_same_v<T, engine::SnapshotEvent>) {
          const auto& segments = e.snapshot.value("segments", nlohmann::json::array());
          std::uint64_t total = 0;
          for (const auto& s : segments)
            total += s.value("total_size", std::uint64_t{0});
          std::cout << "lorascope: allocator snapshot: " << segments.size() << " segments, "
                    << common::formatBytes(total) << " reserved\n";
        }
      },
      timed.event);
  std::cout.flush();
}

}  // namespace

namespace {

// The command after --, with the options that shape it.
external::SupervisedCommand commandFromArguments(const job::CliArgs& args, const Args& theirs) {
  if (theirs.empty())
    throw job::UsageError("no command: write it after --, as in supervise -- python train.py");
  external::SupervisedCommand command;
  command.program = common::findExecutable(theirs.front());
  if (command.program.empty()) {
    throw external::ExternalError(
        theirs.front() + ": " +
        (theirs.front().find('/') != std::string::npos
             ? "no such executable file"
             : "not found in PATH (" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "") +
                   ")"));
  }
  command.arguments.assign(theirs.begin() + 1, theirs.end());
  command.parser = args.value("parser").value_or("hf");
  external::makeOutputParser(command.parser);  // a bad format or regex fails here
  command.resumeArgument = args.value("resume-arg").value_or("");
  command.checkpointGlob = args.value("checkpoint-glob").value_or("");
  if (!command.resumeArgument.empty()) {
    if (command.resumeArgument.find("{checkpoint_dir}") == std::string::npos)
      throw job::UsageError("--resume-arg '" + command.resumeArgument +
                            "' has no {checkpoint_dir} to replace");
    if (command.checkpointGlob.empty())
      throw job::UsageError("--resume-arg needs --checkpoint-glob (where the checkpoints are)");
  }
  command.batchArgument = args.value("batch-arg").value_or("");
  if (!command.batchArgument.empty()) {
    if (command.batchArgument.find("{batch}") == std::string::npos)
      throw job::UsageError("--batch-arg '" + command.batchArgument +
                            "' has no {batch} to replace");
    if (!args.value("batch"))
      throw job::UsageError("--batch-arg needs --batch N (the first attempt's batch)");
    command.batch = std::stoi(*args.value("batch"));
  }
  command.hangAfterSeconds = std::stoi(args.value("hang-after").value_or("0"));
  command.maxRestarts = std::stoi(args.value("max-restarts").value_or("8"));
  command.graceSeconds = std::stoi(args.value("grace").value_or("10"));
  return command;
}

}  // namespace

int runSupervise(const Args& all) {
  const auto dashes = std::find(all.begin(), all.end(), "--");
  const Args ours(all.begin(), dashes);
  const Args theirs(dashes == all.end() ? dashes : dashes + 1, all.end());
  const job::CliArgs args(ours, superviseCommand());
  if (!args.positional().empty())
    throw job::UsageError("unexpected '" + args.positional().front() +
                          "': the command comes after --");
  external::SupervisedCommand command;
  profiles::Profile profile;
  std::string outDir = args.value("out").value_or("");
  if (const auto resume = args.value("resume")) {
    if (!theirs.empty() || !outDir.empty())
      throw job::UsageError(
          "--resume DIR runs the command recorded in DIR: no command after --, "
          "no --out");
    // The command's options are the recorded run's: one given here would be dropped.
    for (const char* recorded : {"parser", "resume-arg", "checkpoint-glob", "batch-arg", "batch",
                                 "hang-after", "max-restarts", "grace"}) {
      if (args.value(recorded))
        throw job::UsageError(std::string("--resume DIR runs the command with the options "
                                          "recorded in DIR's config.json; --") +
                              recorded +
                              " cannot change them (--profile, --json and --telemetry can)");
    }
    const fs::path dir = common::pathFromUtf8(*resume);
    const external::SupervisedRun run = external::readSupervisedRun(dir);
    command = run.command;
    if (!external::resumableCheckpoint(command))
      throw external::ExternalError(
          common::pathText(dir) + ": nothing to resume from: " +
          (command.resumeArgument.empty()
               ? "the run has no --resume-arg"
               : "no checkpoint matches '" + command.checkpointGlob + "'"));
    command.resumeFirst = true;
    command.resumedAfterStep = external::lastRecordedStep(dir);
    profile = external::findProfile(args.value("profile").value_or(run.profile));
    outDir = *resume;
  } else {
    command = commandFromArguments(args, theirs);
    profile = external::findProfile(args.value("profile").value_or("Balanced"));
    if (outDir.empty())
      outDir = defaultOutDir();
  }
  const bool asJson = args.has("json");

  external::CommandHostOptions options;
  options.runDirectory = common::pathFromUtf8(outDir);
  options.telemetry = args.value("telemetry").value_or("true") == "true";
  if (!asJson) {
    std::cout << "lorascope: supervising " << command.program << " with profile '" << profile.name
              << "'; log and events in " << common::pathText(options.runDirectory) << "\n";
  }
  engine::HostListener listener{[&](const engine::TimedEvent& e) {
                                  if (asJson) {
                                    std::cout << engine::encodeEvent(e) << std::endl;
                                  } else {
                                    printEvent(e);
                                  }
                                },
                                {}};
  std::optional<int> outcome;
  {
    const common::InterruptCounter interrupts;  // Ctrl-C, SIGTERM
    external::CommandHost host(command, profile, options, listener);
    bool stopSent = false;
    while (!(outcome = host.waitForOutcome(std::chrono::milliseconds(100)))) {
      if (interrupts.count() > 0 && !stopSent) {
        host.send(engine::StopCommand{});
        stopSent = true;
      }
    }
  }
  return *outcome;
}

}  // namespace lorascope::cli

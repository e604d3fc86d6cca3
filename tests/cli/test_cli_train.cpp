// test_cli_train.cpp — `lorascope-train train` runs the engine's job under the Supervisor, with
// the protections a GUI run has, and says what they did:
//   - an out-of-memory error injected by LORASCOPE_FAULTS is handled in place and reported, and
//     (retried as it was) leaves the adapter byte-identical to an uninterrupted run's;
//   - an engine child SIGKILLed mid-run is restarted, resumes from the state mirror and the run
//     ends with the same adapter as an uninterrupted run;
//   - Ctrl-C (SIGINT) checkpoints and exits 130, and --resume finishes to the same adapter;
//   - --quantize nf4 trains on 4-bit projections: recorded in config.json and the model card (as
//     PEFT recorded QLoRA runs), a first loss close to the unquantised run's, and `export --merge`
//     merges the adapter into the stored (unquantised) base;
//   - a run that evaluates a held-out set (--eval-data, --eval-every) trains to the same adapter,
//     interrupted and resumed, and logs every evaluation once;
//   - --profile starts the run under a profile, recorded in config.json;
//   - while a run trains, a second `train --out` of its folder, a `train --resume` and an `export`
//     of it are refused, naming the holder's process id (issue 31: both wrote metrics.jsonl);
//   - --group-by-length trains the demo in its length-grouped order (less padding computed),
//     recorded in config.json; stopped and resumed, it ends with the uninterrupted grouped run's
//     adapter;
//   - a bad option (or profile) is a usage error (exit 2) before any engine starts.
// Plain C++ (no Qt), so it also runs where the GPU machine has no Qt. Linux: it finds the engine
// child through /proc. The demo is shrunk (short sequences, rank 4) to keep each run to seconds.
#include <signal.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "TestPaths.h"
#include "common/ChildProcess.h"

namespace fs = std::filesystem;
using lorascope::common::ChildExit;
using lorascope::common::ChildOptions;
using lorascope::common::ChildProcess;

namespace {

int gFailures = 0;

void check(bool ok, const std::string& what, const std::string& output = {}) {
  if (!ok) {
    ++gFailures;
    std::cerr << "FAIL: " << what << "\n";
    if (!output.empty())
      std::cerr << "---- output ----\n" << output << "----------------\n";
  } else {
    std::cout << "ok: " << what << "\n";
  }
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct Run {
  int exitCode = -1;
  std::string output;  // stdout and stderr, as lines arrived
};

// Runs `lorascope-train COMMAND ARGS`; `onLine` sees each stdout line with the process's id.
Run command(const std::string& name, const std::vector<std::string>& args,
            const std::vector<std::pair<std::string, std::string>>& environment = {},
            const std::function<void(const std::string&, std::int64_t)>& onLine = {}) {
  ChildOptions options{lstest::trainProgram(), {name}, environment};
  options.arguments.insert(options.arguments.end(), args.begin(), args.end());
  ChildProcess child(options);
  child.closeInput();
  std::string errors;
  std::thread stderrReader([&] {
    char buffer[4096];
    while (std::size_t n = child.readErrorOutput(buffer))
      errors.append(buffer, n);
  });
  Run run;
  std::string pending;
  char buffer[4096];
  while (std::size_t n = child.readOutput(buffer)) {
    pending.append(buffer, n);
    for (std::size_t newline; (newline = pending.find('\n')) != std::string::npos;) {
      const std::string line = pending.substr(0, newline);
      pending.erase(0, newline + 1);
      run.output += line + "\n";
      if (onLine)
        onLine(line, child.id());
    }
  }
  stderrReader.join();
  const ChildExit exit = child.wait();
  run.exitCode = exit.signaled ? 128 + exit.signal : exit.exitCode;
  run.output += pending + errors;
  return run;
}

// Runs `lorascope-train train ARGS`.
Run train(const std::vector<std::string>& args,
          const std::vector<std::pair<std::string, std::string>>& environment = {},
          const std::function<void(const std::string&, std::int64_t)>& onLine = {}) {
  return command("train", args, environment, onLine);
}

// The "loss" of the first line of a run's metrics.jsonl, or NaN.
double firstLoss(const fs::path& run) {
  const std::string text = readFile(run / "metrics.jsonl");
  const std::size_t at = text.find("\"loss\":");
  return at == std::string::npos ? std::nan("") : std::strtod(text.c_str() + at + 7, nullptr);
}

// The processes whose parent is `parent` (from /proc/PID/stat: "pid (comm) state ppid ...").
std::vector<pid_t> childrenOf(std::int64_t parent) {
  std::vector<pid_t> children;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const std::string stat = readFile(entry.path() / "stat");
    const std::size_t close = stat.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    std::int64_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == parent)
      children.push_back(static_cast<pid_t>(std::stoll(name)));
  }
  return children;
}

// The sum of `key` over a run's metrics.jsonl lines.
std::int64_t sumOf(const fs::path& run, const std::string& key) {
  std::istringstream lines(readFile(run / "metrics.jsonl"));
  std::int64_t sum = 0;
  for (std::string line; std::getline(lines, line);) {
    const std::size_t at = line.find("\"" + key + "\":");
    if (at != std::string::npos)
      sum += std::stoll(line.substr(at + key.size() + 3));
  }
  return sum;
}

const std::vector<std::string> kDemo = {
    "--demo", "--steps",  "8", "--batch-size",       "2", "--max-seq-len",
    "80",     "--lora-r", "4", "--checkpoint-every", "3"};

std::vector<std::string> demoInto(const fs::path& out) {
  std::vector<std::string> args = kDemo;
  args.insert(args.end(), {"--out", out.string()});
  return args;
}

std::string adapterOf(const fs::path& run) {
  return readFile(run / "adapter" / "adapter_model.safetensors");
}

}  // namespace

int main() {
  const fs::path scratch =
      fs::temp_directory_path() / ("lorascope-test-cli-train-" + std::to_string(::getpid()));
  fs::remove_all(scratch);
  fs::create_directories(scratch);
  ::setenv("LORASCOPE_CACHE_DIR", (scratch / "cache").c_str(), 1);  // the demo, made once
  ::setenv("OPENBLAS_NUM_THREADS", "1", 1);
  ::unsetenv("LORASCOPE_FAULTS");

  // The uninterrupted reference.
  const Run reference = train(demoInto(scratch / "reference"));
  check(reference.exitCode == 0, "an uninterrupted run exits 0", reference.output);
  check(contains(reference.output, "step 8/8") && contains(reference.output, "done: 8 steps"),
        "it prints step lines and the done line", reference.output);
  check(contains(reference.output, "export or merge with: lorascope-train export"),
        "it prints the export hint", reference.output);
  check(!contains(reference.output, "protections:"), "an uneventful run reports no protections",
        reference.output);
  const std::string referenceAdapter = adapterOf(scratch / "reference");
  check(!referenceAdapter.empty(), "the reference run wrote its adapter");

  // LORASCOPE_FAULTS: an out-of-memory error at step 3, handled in place.
  {
    const Run run = train(demoInto(scratch / "oom"), {{"LORASCOPE_FAULTS", "oom@step#3"}});
    check(run.exitCode == 0, "a run with an injected OOM exits 0", run.output);
    check(contains(run.output, "out of memory at step 3") &&
              contains(run.output, "the step is retried as it was"),
          "the OOM and what was done about it are printed", run.output);
    check(contains(run.output,
                   "protections: 0 incident(s), 0 engine restart(s), 1 "
                   "out-of-memory error(s) handled in place"),
          "the summary counts the OOM", run.output);
    check(contains(readFile(scratch / "oom" / "faults.ledger"), "fired oom@step#3"),
          "the fault fired (faults.ledger)");
    check(adapterOf(scratch / "oom") == referenceAdapter,
          "an OOM retried as it was leaves the adapter byte-identical", run.output);
  }

  // --batch-size auto: a second OOM in a step takes the planner's next smaller micro-batch.
  {
    std::vector<std::string> args = demoInto(scratch / "auto");
    args[4] = "auto";  // --batch-size
    const Run run = train(args, {{"LORASCOPE_FAULTS", "oom@step#2,oom@step#2"}});
    check(run.exitCode == 0 && contains(run.output, "batch-size auto on "),
          "a --batch-size auto run plans its micro-batch", run.output);
    check(contains(run.output, "out of memory at step 2") &&
              contains(run.output, "stepped down to ") &&
              contains(run.output, "(batch-size auto, same effective batch)"),
          "its second OOM in a step steps down by plan and says so", run.output);
    check(contains(run.output, "done: 8 steps"), "and the run finishes", run.output);
  }

  // The engine child SIGKILLed after step 2: restarted, resumed, the same adapter.
  {
    bool killed = false;
    const Run run = train(demoInto(scratch / "killed"), {},
                          [&](const std::string& line, std::int64_t trainPid) {
                            if (killed || line.rfind("step 2/8", 0) != 0)
                              return;
                            for (pid_t engine : childrenOf(trainPid)) {
                              ::kill(engine, SIGKILL);
                              killed = true;
                            }
                          });
    check(killed, "the engine child was found and killed", run.output);
    check(run.exitCode == 0, "a run whose engine was killed exits 0", run.output);
    check(contains(run.output, "killed by a signal (SIGKILL)") &&
              contains(run.output, "restarted the engine"),
          "the incident and the restart are printed", run.output);
    check(contains(run.output, "protections: 1 incident(s), 1 engine restart(s)"),
          "the summary counts the restart", run.output);
    check(contains(run.output, "done: 8 steps"), "the run finished every step", run.output);
    check(adapterOf(scratch / "killed") == referenceAdapter,
          "the adapter is byte-identical to the uninterrupted run's", run.output);
  }

  // Ctrl-C: checkpoint and exit 130 (128 + SIGINT); --resume finishes the same run.
  {
    bool interrupted = false;
    const Run run = train(demoInto(scratch / "stopped"), {},
                          [&](const std::string& line, std::int64_t trainPid) {
                            if (!interrupted && line.rfind("step 4/8", 0) == 0) {
                              ::kill(static_cast<pid_t>(trainPid), SIGINT);
                              interrupted = true;
                            }
                          });
    check(run.exitCode == 130, "Ctrl-C exits 130", run.output);
    check(contains(run.output, "stopped at step ") && contains(run.output, "; checkpoint ") &&
              contains(run.output, "continue with: lorascope-train train --resume "),
          "Ctrl-C says where it stopped and how to continue", run.output);
    check(!contains(run.output, "done: "), "a stopped run is not done", run.output);
    const Run resumed = train({"--resume", (scratch / "stopped").string()});
    check(resumed.exitCode == 0 && contains(resumed.output, "resuming from step ") &&
              contains(resumed.output, "done: 8 steps"),
          "--resume finishes the stopped run", resumed.output);
    check(adapterOf(scratch / "stopped") == referenceAdapter,
          "stopped and resumed, the adapter is byte-identical", resumed.output);
  }

  // --quantize nf4: the projections in 4 bits (QLoRA), recorded as PEFT records such a run.
  {
    std::vector<std::string> args = demoInto(scratch / "nf4");
    args.insert(args.end(), {"--quantize", "nf4"});
    const Run run = train(args);
    check(run.exitCode == 0 && contains(run.output, "done: 8 steps"),
          "a --quantize nf4 run trains to the end", run.output);
    check(contains(readFile(scratch / "nf4" / "config.json"), "\"quantize\": \"nf4\""),
          "config.json records quantize nf4");
    const std::string card = readFile(scratch / "nf4" / "adapter" / "README.md");
    check(contains(card, "- load_in_4bit: True") && contains(card, "- bnb_4bit_quant_type: nf4") &&
              contains(card, "- bnb_4bit_use_double_quant: True"),
          "the model card has the bitsandbytes 4-bit config section", card);
    check(!contains(readFile(scratch / "reference" / "adapter" / "README.md"), "load_in_4bit"),
          "an unquantised run's card has none");
    const double unquantized = firstLoss(scratch / "reference");
    const double quantized = firstLoss(scratch / "nf4");
    check(std::abs(quantized - unquantized) < 0.05 * unquantized,
          "the first loss on 4-bit weights is within 5 % of the bf16/f32 run's (" +
              std::to_string(quantized) + " vs " + std::to_string(unquantized) + ")");
    check(adapterOf(scratch / "nf4") != referenceAdapter,
          "the adapter differs from the unquantised run's (the base it saw differs)");
    const Run merged =
        command("export", {(scratch / "nf4").string(), "--merge", (scratch / "merged").string()});
    check(merged.exitCode == 0 && fs::exists(scratch / "merged" / "config.json"),
          "export --merge merges a --quantize nf4 run into the stored base", merged.output);
  }

  // Validation: evaluating every 3 steps (on the demo's own data file, so that the training data
  // stays the reference's), interrupted at step 4 and resumed, trains to the reference's adapter
  // byte for byte and logs each evaluation once.
  {
    std::vector<std::string> args = demoInto(scratch / "evaluated");
    args.insert(args.end(),
                {"--eval-data", (scratch / "cache" / "lorascope-demo-tasks-v2.jsonl").string(),
                 "--eval-every", "3"});
    bool interrupted = false;
    const Run run = train(args, {}, [&](const std::string& line, std::int64_t trainPid) {
      if (!interrupted && line.rfind("step 4/8", 0) == 0) {
        ::kill(static_cast<pid_t>(trainPid), SIGINT);
        interrupted = true;
      }
    });
    check(run.exitCode == 130 && contains(run.output, "eval after step 3: loss "),
          "an evaluated run prints its evaluations", run.output);
    const Run resumed = train({"--resume", (scratch / "evaluated").string()});
    // The stop lands a step or two after "step 4/8" (steps take ~20 ms; the state mirror announces
    // each step once the next has run). Wherever it lands, every evaluation runs once: one the
    // stop cut short (after step 6) runs in the resumed run before its next step.
    const auto evaluatedAfter = [&](int step) {
      const std::string line = "eval after step " + std::to_string(step) + ": loss ";
      return int(contains(run.output, line)) + int(contains(resumed.output, line));
    };
    const int evaluations = evaluatedAfter(3) + evaluatedAfter(6) + evaluatedAfter(8);
    check(resumed.exitCode == 0 && evaluatedAfter(3) == 1 && evaluatedAfter(6) == 1 &&
              evaluatedAfter(8) == 1 && contains(resumed.output, "eval after step 8: loss "),
          "resumed, it evaluates every 3 steps and after the last, each once",
          run.output + resumed.output);
    check(adapterOf(scratch / "evaluated") == referenceAdapter,
          "evaluation changes nothing in training: the adapter is byte-identical", resumed.output);
    const std::string metrics = readFile(scratch / "evaluated" / "metrics.jsonl");
    std::size_t evalLines = 0;
    for (std::size_t at = metrics.find("\"eval_loss\""); at != std::string::npos;
         at = metrics.find("\"eval_loss\"", at + 1))
      ++evalLines;
    check(evaluations == 3 && evalLines == 3, "metrics.jsonl holds each evaluation once", metrics);
    check(contains(readFile(scratch / "evaluated" / "trainer_state.json"), "\"eval_loss\""),
          "trainer_state.json's log_history holds them");
  }

  // --profile: the run starts under that profile (its toggles; CPU only keeps this CPU run
  // where it is, so the adapter matches), config.json records it; an unknown name exits 2.
  {
    std::vector<std::string> args = demoInto(scratch / "profiled");
    args.insert(args.end(), {"--profile", "CPU only"});
    const Run run = train(args);
    check(run.exitCode == 0 && contains(run.output, "done: 8 steps"),
          "a run with --profile finishes", run.output);
    check(contains(readFile(scratch / "profiled" / "config.json"), "\"profile\": \"CPU only\""),
          "config.json records the profile", run.output);
    check(adapterOf(scratch / "profiled") == referenceAdapter,
          "under CPU only the adapter is the CPU run's", run.output);
    std::vector<std::string> unknown = demoInto(scratch / "unknown-profile");
    unknown.insert(unknown.end(), {"--profile", "No such profile"});
    const Run refused = train(unknown);
    check(refused.exitCode == 2 &&
              contains(refused.output, "no usable profile named 'No such profile'") &&
              contains(refused.output, "'CPU only'"),
          "an unknown --profile exits 2 naming it and the profiles there are", refused.output);
    check(!fs::exists(scratch / "unknown-profile"), "and leaves no run folder");
    // A profile JSON file, as `supervise --profile` takes one: the run starts under it; one the
    // profile rules refuse exits 2 naming the file and the field.
    const fs::path file = scratch / "slow-gpu.json";
    std::ofstream(file) << R"({"name": "slow GPU", "description": "longer hang budgets", )"
                        << R"("environment": {"LORASCOPE_WATCHDOG": "30,600"}})";
    std::vector<std::string> fromFile = demoInto(scratch / "profile-file");
    fromFile.insert(fromFile.end(), {"--profile", file.string()});
    const Run filed = train(fromFile);
    check(filed.exitCode == 0 && contains(filed.output, "done: 8 steps"),
          "a run with --profile FILE.json finishes", filed.output);
    std::ofstream(scratch / "bad.json") << R"({"name": "bad", "description": "d", )"
                                        << R"("environment": {"LORASCOPE_WATCHDOG": "ten"}})";
    std::vector<std::string> badFile = demoInto(scratch / "bad-profile");
    badFile.insert(badFile.end(), {"--profile", (scratch / "bad.json").string()});
    const Run bad = train(badFile);
    check(bad.exitCode == 2 && contains(bad.output, "bad.json") &&
              contains(bad.output, "environment.LORASCOPE_WATCHDOG"),
          "a profile file the rules refuse exits 2 naming the file and the field", bad.output);
  }

  // One writer per run folder: while the run trains, a second trainer, a resume and an export are
  // refused with the lock holder's process id, that of the `train` the user started (its engine's
  // supervisor, which holds the lock across engine restarts); the run itself goes on and stops as
  // asked.
  {
    std::vector<std::string> args = demoInto(scratch / "locked");
    args[2] = "100000";  // --steps: it trains until it is stopped
    Run second, resumed, exported;
    bool checked = false;
    std::int64_t holder = 0;
    const Run run = train(args, {}, [&](const std::string& line, std::int64_t trainPid) {
      if (checked || line.rfind("step 2/", 0) != 0)
        return;
      checked = true;
      holder = trainPid;
      second = train(demoInto(scratch / "locked"));
      resumed = train({"--resume", (scratch / "locked").string()});
      exported = command("export", {(scratch / "locked").string()});
      ::kill(static_cast<pid_t>(trainPid), SIGINT);
    });
    check(checked && run.exitCode == 130, "the locked run trained until it was stopped",
          run.output);
    for (const auto& [what, refused] :
         {std::pair{"a second train --out", &second}, std::pair{"train --resume", &resumed},
          std::pair{"export", &exported}}) {
      check(refused->exitCode == 1 &&
                contains(refused->output, "is in use: pid " + std::to_string(holder) + ",") &&
                contains(refused->output, ", since ") &&
                contains(refused->output, "a run has one writer at a time"),
            std::string(what) + " of a run that trains is refused naming the train process",
            refused->output);
    }
    // Each step once, in order: no second writer added lines (they read 1,1,2,2,...).
    const std::string metrics = readFile(scratch / "locked" / "metrics.jsonl");
    long previous = 0;
    bool increasing = true;
    for (std::size_t at = metrics.find("\"step\":"); at != std::string::npos;
         at = metrics.find("\"step\":", at + 1)) {
      const long step = std::strtol(metrics.c_str() + at + 7, nullptr, 10);
      increasing = increasing && step == previous + 1;
      previous = step;
    }
    check(previous >= 2 && increasing, "metrics.jsonl holds each step once, in order", metrics);
  }

  // --group-by-length: the demo in its length-grouped order (less padding computed than the
  // reference's order), recorded in config.json; stopped with Ctrl-C and resumed, it continues
  // that order and ends with the uninterrupted grouped run's adapter.
  {
    std::vector<std::string> args = demoInto(scratch / "grouped");
    args.push_back("--group-by-length");
    const Run run = train(args);
    check(run.exitCode == 0 && contains(run.output, "done: 8 steps"),
          "train --demo --group-by-length trains to the end", run.output);
    check(contains(readFile(scratch / "grouped" / "config.json"), "\"group_by_length\": true"),
          "config.json records group_by_length");
    check(contains(readFile(scratch / "reference" / "config.json"), "\"group_by_length\": false"),
          "a run without it records it off");
    const auto fill = [&](const std::string& name) {
      return double(sumOf(scratch / name, "tokens")) / double(sumOf(scratch / name, "positions"));
    };
    check(fill("grouped") > fill("reference"),
          "grouped, more of the positions computed are real tokens (metrics.jsonl: " +
              std::to_string(fill("grouped")) + " vs " + std::to_string(fill("reference")) + ")");
    const std::string groupedAdapter = adapterOf(scratch / "grouped");
    check(!groupedAdapter.empty() && groupedAdapter != referenceAdapter,
          "its adapter differs from the reference's (other sequences in each step)");
    std::vector<std::string> stoppedArgs = demoInto(scratch / "grouped-stopped");
    stoppedArgs.push_back("--group-by-length");
    bool interrupted = false;
    const Run stopped = train(stoppedArgs, {}, [&](const std::string& line, std::int64_t pid) {
      if (!interrupted && line.rfind("step 4/8", 0) == 0) {
        ::kill(static_cast<pid_t>(pid), SIGINT);
        interrupted = true;
      }
    });
    check(stopped.exitCode == 130, "a grouped run stops on Ctrl-C", stopped.output);
    const Run resumed = train({"--resume", (scratch / "grouped-stopped").string()});
    check(resumed.exitCode == 0 && contains(resumed.output, "done: 8 steps"),
          "--resume finishes the grouped run", resumed.output);
    check(adapterOf(scratch / "grouped-stopped") == groupedAdapter,
          "stopped and resumed, the grouped run's adapter is byte-identical", resumed.output);
  }

  // Usage errors come before any engine: exit 2, naming the option.
  {
    std::vector<std::string> args = demoInto(scratch / "bad");
    args.insert(args.end(), {"--lr", "fast"});
    const Run run = train(args);
    check(run.exitCode == 2 && contains(run.output, "lr"), "a bad option value exits 2",
          run.output);
    check(!fs::exists(scratch / "bad"), "and leaves no run folder");
    const Run badCheckpoint =
        train({"--resume", (scratch / "stopped").string(), "--checkpoint", "three"});
    check(badCheckpoint.exitCode == 2 && contains(badCheckpoint.output, "--checkpoint"),
          "a bad --checkpoint exits 2", badCheckpoint.output);
    const Run missing = train({"--resume", (scratch / "no-such-run").string()});
    check(missing.exitCode == 1 && contains(missing.output, "no-such-run"),
          "resuming a missing run exits 1 naming it", missing.output);
    // What would name another run beside --resume or --demo is refused, not dropped: a --config
    // beside --resume had been ignored while --lr beside it was refused.
    const fs::path config = scratch / "lr.json";
    std::ofstream(config) << R"({"lr": 0.5})";
    const Run withConfig =
        train({"--resume", (scratch / "stopped").string(), "--config", config.string()});
    check(withConfig.exitCode == 2 && contains(withConfig.output, "--config"),
          "--config beside --resume exits 2 naming it", withConfig.output);
    const Run withModel = train({"--demo", "--model", (scratch / "stopped").string(), "--out",
                                 (scratch / "demo-model").string()});
    check(withModel.exitCode == 2 && contains(withModel.output, "--model"),
          "--model beside --demo exits 2 naming it", withModel.output);
    check(!fs::exists(scratch / "demo-model"), "and leaves no run folder");
  }

  fs::remove_all(scratch);
  if (gFailures > 0) {
    std::cerr << gFailures << " check(s) failed\n";
    return 1;
  }
  return 0;
}

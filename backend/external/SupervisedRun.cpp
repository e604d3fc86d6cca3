// external/SupervisedRun.cpp — config.json of a supervised run, its status from events.jsonl.
#include "external/SupervisedRun.h"

#include <algorithm>
#include <fstream>

#include "common/OsError.h"  // defines: pathText
#include "external/ExternalSupervisor.h"
#include "external/OutputParser.h"  // defines: ExternalError

namespace lorascope::external {
namespace fs = std::filesystem;
using nlohmann::json;

json supervisedRunConfig(const SupervisedCommand& c, const std::string& profileName,
                         const std::string& created) {
  return json{{"kind", kSupervisedRunKind},
              {"created", created},
              {"profile", profileName},
              {"training", {{"profile", profileName}}},
              {"command_line", commandLine(c.program, c.arguments)},
              {"command",
               {{"program", c.program},
                {"arguments", c.arguments},
                {"working_directory", c.workingDirectory},
                {"parser", c.parser},
                {"resume_arg", c.resumeArgument},
                {"checkpoint_glob", c.checkpointGlob},
                {"batch_arg", c.batchArgument},
                {"batch", c.batch},
                {"hang_after", c.hangAfterSeconds},
                {"max_restarts", c.maxRestarts},
                {"grace", c.graceSeconds}}}};
}

bool isSupervisedRunConfig(const json& config) {
  return config.is_object() && config.value("kind", std::string()) == kSupervisedRunKind;
}

bool isSupervisedRunFolder(const fs::path& dir) {
  std::ifstream in(dir / "config.json", std::ios::binary);
  return in && isSupervisedRunConfig(json::parse(in, nullptr, false));
}

SupervisedRun readSupervisedRun(const fs::path& dir) {
  const fs::path file = dir / "config.json";
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw ExternalError(common::pathText(file) + ": cannot be read");
  const json config = json::parse(in, nullptr, false);
  if (!isSupervisedRunConfig(config))
    throw ExternalError(common::pathText(file) + ": not a supervised command's run (\"kind\": \"" +
                        kSupervisedRunKind + "\")");
  SupervisedRun run;
  try {
    const json& c = config.at("command");
    run.command.program = c.at("program").get<std::string>();
    run.command.arguments = c.at("arguments").get<std::vector<std::string>>();
    run.command.workingDirectory = c.value("working_directory", std::string());
    run.command.parser = c.value("parser", std::string("hf"));
    run.command.resumeArgument = c.value("resume_arg", std::string());
    run.command.checkpointGlob = c.value("checkpoint_glob", std::string());
    run.command.batchArgument = c.value("batch_arg", std::string());
    run.command.batch = c.value("batch", 0);
    run.command.hangAfterSeconds = c.value("hang_after", 0);
    run.command.maxRestarts = c.value("max_restarts", 8);
    run.command.graceSeconds = c.value("grace", 10);
    run.profile = config.value("profile", std::string("Balanced"));
  } catch (const json::exception& e) {
    throw ExternalError(common::pathText(file) + ": command: " + e.what());
  }
  return run;
}

SupervisedRunStatus readSupervisedRunStatus(const fs::path& dir) {
  SupervisedRunStatus status;
  const fs::path file = dir / kEventsFile;
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return status;  // no event yet
  std::string line;
  while (std::getline(in, line)) {
    // Only state and incident lines matter; the rest (output, memory, snapshots) is not parsed.
    const bool state = line.find("\"type\":\"state\"") != std::string::npos;
    if (!state && line.find("\"type\":\"incident\"") == std::string::npos)
      continue;
    const json event = json::parse(line, nullptr, false);
    if (!event.is_object())
      continue;  // a torn last line
    if (!state) {
      ++status.incidents;
      continue;
    }
    status.state = event.value("state", std::string());
    status.detail = event.value("detail", std::string());
    status.finishedWell = status.state == "finished" && status.detail == kFinishedWellDetail;
  }
  return status;
}

std::optional<fs::path> resumableCheckpoint(const SupervisedCommand& command) {
  if (command.resumeArgument.empty() || command.checkpointGlob.empty())
    return std::nullopt;
  return newestCheckpoint(command.checkpointGlob, command.workingDirectory);
}

std::string metricsLine(const engine::StepEvent& step, double seconds, bool gpu) {
  runs::StepRecord line = step;  // the step as announced, with what the run folder adds
  line.seconds = seconds;
  line.cycleSeconds = seconds;
  line.device = gpu ? "gpu" : "cpu";
  line.replayed = false;
  line.totalSteps = 0;
  return runs::toJson(line).dump();
}

std::int64_t lastRecordedStep(const fs::path& dir) {
  std::ifstream in(dir / kMetricsFile, std::ios::binary);
  std::int64_t last = 0;
  std::string line;
  while (std::getline(in, line)) {
    const json entry = json::parse(line, nullptr, false);  // a torn last line is skipped
    if (entry.is_object() && entry.contains("step") && entry.at("step").is_number_integer())
      last = std::max(last, entry.at("step").get<std::int64_t>());
  }
  return last;
}

}  // namespace lorascope::external

// external/SupervisedRun.h — the folder of a supervised command's run, a run like the engine's:
//   config.json    {"kind": "supervised_command", "command": {...}, "command_line", "profile",
//                  "created", "training": {"profile"}}: what ran, to show and to resume it
//   events.jsonl   every event, one protocol line each (engine/Protocol.h)
//   metrics.jsonl  one line per announced step, in runs/StepRecord.h's format
//   command.log    the command's output lines; probe-N.jsonl the probe's events of attempt N
// The Runs page lists such a folder (status, steps, last loss, incidents), shows its curves from
// metrics.jsonl and resumes it: the command again, with the resume argument at its newest
// checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/Protocol.h"  // defines: StepEvent
#include "external/LaunchPlan.h"
#include "runs/RunFolder.h"  // defines: kMetricsFile

namespace lorascope::external {

inline constexpr const char* kSupervisedRunKind = "supervised_command";
inline constexpr const char* kEventsFile = "events.jsonl";
using runs::kMetricsFile;

// One metrics.jsonl line (no newline) in the format of runs/StepRecord.h
// (runs::readStepRecords: the Runs page, Show charts): the step, its loss (null when not a
// number), learning rate, gradient norm, batch and accumulation (0: unknown), the seconds since
// the step before and the device ("gpu" once a GPU reading came, else "cpu").
std::string metricsLine(const engine::StepEvent& step, double seconds, bool gpu);

// config.json of a run of `command` under the profile `profileName`, made at `created` (ISO 8601).
nlohmann::json supervisedRunConfig(const SupervisedCommand& command, const std::string& profileName,
                                   const std::string& created);
bool isSupervisedRunConfig(const nlohmann::json& config);
// Whether `dir`'s config.json is a supervised command's (false without one, or for another's).
bool isSupervisedRunFolder(const std::filesystem::path& dir);

struct SupervisedRun {
  SupervisedCommand command;
  std::string profile;
};
// The command and profile of the run in `dir` (its config.json). Throws ExternalError naming the
// file and the field when it is not a supervised run's config.
SupervisedRun readSupervisedRun(const std::filesystem::path& dir);

// What the run's events.jsonl says about how it went (its state and incident lines only).
struct SupervisedRunStatus {
  std::string state;   // the last state event's: "running", "finished", "failed" ("" = none)
  std::string detail;  // that event's detail
  int incidents = 0;
  bool finishedWell = false;  // the command exited 0
};
// Throws ExternalError naming the file when it cannot be read.
SupervisedRunStatus readSupervisedRunStatus(const std::filesystem::path& dir);

// The newest checkpoint of the run's command (its --checkpoint-glob from its working directory),
// when it has a resume argument to take it.
std::optional<std::filesystem::path> resumableCheckpoint(const SupervisedCommand& command);

// The last step of the run's metrics.jsonl (0 without one): a resumed run announces the steps
// after it.
std::int64_t lastRecordedStep(const std::filesystem::path& dir);

}  // namespace lorascope::external

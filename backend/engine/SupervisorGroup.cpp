// engine/SupervisorGroup.cpp — the supervisor's group of GPUs: forming it for a start, the ranks'
// events, and one rank's failure ending and restarting them all (engine/Supervisor.h).
#include <filesystem>
#include <fstream>

#include "common/Format.h"    // defines: trimBlanks
#include "common/OsError.h"   // defines: pathFromUtf8, pathText
#include "common/Platform.h"  // defines: currentProcessId
#include "engine/Supervisor.h"
#include "group/RankPlan.h"  // defines: parseGpuList, gpuListText
#include "runs/RunFolder.h"  // defines: kRunConfigFile

namespace lorascope::engine {
namespace {

namespace fs = std::filesystem;

std::optional<std::string> listIn(const nlohmann::json& value) {
  if (value.is_string() && !common::trimBlanks(value.get<std::string>()).empty()) {
    return value.get<std::string>();
  }
  return std::nullopt;
}

// The "gpus" a resumed run recorded in its config.json; none when it has none or it cannot be
// read (the engine then says what is wrong with the folder).
std::optional<std::string> recordedGpus(const nlohmann::json& start) {
  const auto out = start.find("out");
  if (out == start.end() || !out->is_string()) {
    return std::nullopt;
  }
  std::ifstream in(common::pathFromUtf8(out->get<std::string>()) / runs::kRunConfigFile,
                   std::ios::binary);
  const nlohmann::json config = nlohmann::json::parse(in, nullptr, false);
  if (!in || config.is_discarded() || !config.is_object() || !config.contains("training") ||
      !config["training"].is_object() || !config["training"].contains("gpus")) {
    return std::nullopt;
  }
  return listIn(config["training"]["gpus"]);
}

}  // namespace

std::optional<std::string> Supervisor::gpusOfStart(const nlohmann::json& config) {
  if (!config.is_object()) {
    return std::nullopt;
  }
  if (config.contains("gpus")) {
    return listIn(config["gpus"]);  // a resume on the GPUs asked for now
  }
  if (config.contains("device")) {
    return std::nullopt;  // a resume on the device asked for now
  }
  if (const auto options = config.find("options");
      options != config.end() && options->is_object() && options->contains("gpus")) {
    return listIn((*options)["gpus"]);
  }
  if (const auto resume = config.find("resume"); resume != config.end() && *resume == true) {
    return recordedGpus(config);
  }
  return std::nullopt;
}

std::vector<int> Supervisor::groupDevicesFor(const std::string& gpus, std::string& problem) const {
  const int available = static_cast<int>(hello_->devices.size());
  try {
    std::vector<int> devices = group::parseGpuList(gpus, available);
    if (devices.size() > 1 && !hello_->noCollectiveReason.empty()) {
      problem = "--gpus \"" + gpus + "\": " + hello_->noCollectiveReason;
      return {};
    }
    return devices;
  } catch (const std::invalid_argument& e) {
    problem = e.what();
    if (available == 0 && !hello_->noCollectiveReason.empty()) {
      problem += "; " + hello_->noCollectiveReason;
    }
    return {};
  }
}

void Supervisor::refuseStart(const std::string& problem) {
  publish(ErrorEvent{"input", "start", 0, problem,
                     "lorascope-train devices lists this machine's GPUs and its collective library",
                     false});
  publish(StateEvent{RunState::Failed, 0, problem});
}

void Supervisor::formGroup(nlohmann::json& config) {
  retireRanks();
  groupFaults_.clear();  // a new group: the faults of the last one were acted on
  const int size = static_cast<int>(groupDevices_.size());
  nlohmann::json spec = {{"rank", 0}, {"size", size}, {"device", groupDevices_.front()}};
  if (size > 1) {
    // Fresh for every start of the group, so that no rank reads the id of a group gone.
    const fs::path file = fs::temp_directory_path() /
                          ("lorascope-group-" + std::to_string(common::currentProcessId()) + "-" +
                           std::to_string(++groupsFormed_));
    std::error_code ignored;
    fs::remove(file, ignored);
    rendezvous_ = common::pathText(file);
    spec["rendezvous"] = rendezvous_;
  }
  config["group"] = spec;
  for (int r = 1; r < size; ++r) {
    nlohmann::json rankConfig = config;
    rankConfig["group"]["rank"] = r;
    rankConfig["group"]["device"] = groupDevices_[static_cast<std::size_t>(r)];
    Rank rank{++launches_, r, nullptr};
    rank.host = launcher_.launch(rank.engineId, profile_.environment, profile_.engine);
    rank.host->send(StartCommand{std::move(rankConfig)});
    ranks_.push_back(std::move(rank));
  }
}

void Supervisor::retireRanks() {
  for (Rank& rank : ranks_) {
    rank.host->kill();  // it may wait in a collective on a rank that is gone
  }
  ranks_.clear();
  if (!rendezvous_.empty()) {
    std::error_code ignored;
    fs::remove(common::pathFromUtf8(rendezvous_), ignored);
    rendezvous_.clear();
  }
}

void Supervisor::sendToRanks(const Command& command) {
  for (Rank& rank : ranks_) {
    rank.host->send(command);
  }
}

void Supervisor::sendToAllRanks(const Command& command) {
  if (host_) {
    host_->send(command);
  }
  sendToRanks(command);
}

Supervisor::Rank* Supervisor::rankOf(int engineId) {
  for (Rank& rank : ranks_) {
    if (rank.engineId == engineId) {
      return &rank;
    }
  }
  return nullptr;
}

bool Supervisor::isOfCard(const Event& event) {
  return std::holds_alternative<MemoryEvent>(event) || std::holds_alternative<QueueEvent>(event) ||
         std::holds_alternative<SnapshotEvent>(event);
}

void Supervisor::publishOfCard(int card, const TimedEvent& timed) {
  Event event = timed.event;
  std::visit(
      [card](auto& e) {
        if constexpr (requires { e.card; })
          e.card = card;
      },
      event);
  publish_(TimedEvent{toSupervisorTime(timed.timeMs), std::move(event)});
}

group::RankFault Supervisor::faultOfError(int rank, const ErrorEvent& error) {
  const std::optional<group::CollectiveOp> op = group::parseCollectiveOp(error.op);
  if (op && (error.category == "hang" || error.category == "collective")) {
    return group::collectiveFault(
        rank, group::CollectiveError(*op, error.category == "hang", error.message));
  }
  return group::RankFault{rank, runtime::classifyError(error.category, error.message, error.op),
                          std::nullopt, false};
}

std::string Supervisor::refusedInGroup(const Command& command) const {
  if (std::holds_alternative<PauseCommand>(command)) {
    return "a run on several GPUs does not pause: its ranks would stop at different steps, and "
           "those still running would wait in their collective for the others";
  }
  const std::string together =
      "a run on several GPUs changes its micro-batch only when its ranks restart together, so "
      "that every rank computes the same share of each step";
  if (const auto* set = std::get_if<SetToggleCommand>(&command);
      set && set->toggle == Toggle::MicroBatch) {
    return together;
  }
  if (std::holds_alternative<UndoRungCommand>(command) && !rungSteps_.empty()) {
    // Stepping back over the rung that halved the micro-batch would change it during the run.
    for (int r = static_cast<int>(rungSteps_.back().previous) + 1; r <= static_cast<int>(rung_);
         ++r) {
      for (const settings::Setting* s : settings::registry().setByRung(runtime::RecoveryRung(r))) {
        if (s->ladder->halves) {
          return together;
        }
      }
    }
  }
  return "";
}

void Supervisor::rankEvent(Rank& rank, const TimedEvent& timed) {
  const int device = groupDevices_.at(static_cast<std::size_t>(rank.rank));
  const std::string who =
      "rank " + std::to_string(rank.rank) + " (GPU " + std::to_string(device) + "): ";
  if (isOfCard(timed.event)) {
    publishOfCard(device, timed);
  } else if (const auto* error = std::get_if<ErrorEvent>(&timed.event)) {
    ErrorEvent named = *error;
    named.message = who + named.message;
    publish_(TimedEvent{toSupervisorTime(timed.timeMs), named});
    if (error->sticky && !rank.sticky) {
      rank.sticky = true;  // its exit follows; the group recovers then
      groupFaults_.push_back(faultOfError(rank.rank, *error));
    }
    rank.startRefused = rank.startRefused || (!error->sticky && error->op == "start");
  } else if (const auto* log = std::get_if<LogEvent>(&timed.event);
             log && (log->level == LogLevel::Warning || log->level == LogLevel::Error)) {
    publish_(TimedEvent{toSupervisorTime(timed.timeMs), LogEvent{log->level, who + log->text}});
  } else if (const auto* state = std::get_if<StateEvent>(&timed.event);
             state && state->state == RunState::Failed && rank.startRefused && running_) {
    // Rank 0 waits for it to join: the run cannot start. A rank's step that failed without a
    // sticky error (non-finite training) fails rank 0's too, which ends the run as one engine's.
    failGroupRun(who + state->detail);
  }
  // Its steps, checkpoints, states and toggles are rank 0's too (Note [rank 0 writes]).
}

void Supervisor::rankExited(Rank& rank, const EngineExit& exit) {
  if (!running_) {
    return;
  }
  const int device = groupDevices_.at(static_cast<std::size_t>(rank.rank));
  if (!rank.sticky) {
    const std::optional<runtime::ErrorClass> killed =
        exit.crashed ? runtime::classifyKill(exit.signal, hostMemory_) : std::nullopt;
    groupFaults_.push_back(
        group::RankFault{rank.rank, killed ? *killed : runtime::classifyError("", exit.stderrTail),
                         std::nullopt, false});
  }
  rankFailed(describeExit(exit) + " (rank " + std::to_string(rank.rank) + ", GPU " +
             std::to_string(device) + ") after step " + std::to_string(lastStep_));
}

void Supervisor::rankFailed(const std::string& what) {
  retireRanks();
  if (planned_ && planned_->error) {
    // Rank 0 is being ended already (its hang): that came first, and decides with this.
    if (!planned_->groupFault) {
      groupFaults_.insert(groupFaults_.begin(),
                          group::RankFault{0, *planned_->error, std::nullopt, false});
      planned_->groupFault = true;
    }
    return;
  }
  if (host_ == nullptr) {
    recoverGroup(what);  // rank 0 is gone already
    return;
  }
  // Rank 0 is ended as a hang is; the group recovers once it has exited (two engines never
  // share the state mirror).
  planned_ = PlannedRestart{groupFaults_.front().error, what, true, true};
  host_->kill();
}

void Supervisor::failGroupRun(const std::string& why) {
  retireRanks();
  groupFaults_.clear();
  running_ = false;
  runLock_.reset();
  if (host_ != nullptr) {
    planned_ = PlannedRestart{std::nullopt, why, false, false};  // a fresh engine, ready
    host_->kill();
  }
  publish(StateEvent{RunState::Failed, lastStep_, why});
}

void Supervisor::recoverGroup(const std::string& what) {
  retireRanks();
  std::vector<group::RankFault> faults = std::exchange(groupFaults_, {});
  const group::GroupRecovery plan = group::planGroupRecovery(groupDevices_, rung_, faults);
  const runtime::ErrorClass cause = group::causeOf(faults)->error;
  const std::string incident = what + "; " + plan.reason;
  if (plan.action == group::GroupAction::ContinueWithoutLost) {
    lastStickyError_.reset();
    running_ = false;
    runLock_.reset();
    const std::string list = group::gpuListText(plan.devices);
    publish(IncidentEvent{incident + " (" + runtime::categoryName(cause.category) + ")",
                          "stopped after step " + std::to_string(lastStep_) +
                              ", which is saved; to continue on GPU(s) " + list +
                              ": lorascope-train train --resume " +
                              runConfig_->value("out", std::string("RUN_DIR")) + " --gpus " + list,
                          lastStep_});
    publish(StateEvent{RunState::Failed, lastStep_, plan.reason});
    groupDevices_.clear();
    startEngine();  // an engine ready for what the user chooses
    return;
  }
  if (plan.action == group::GroupAction::Restart) {
    groupDevices_ = plan.devices;
    if (groupDevices_.empty()) {
      // Note [the CPU rung of a group]: one engine on the CPU continues the group's curve.
      (*runConfig_)["device"] = "cpu";
      runConfig_->erase("gpus");
    }
  }
  recover(cause, incident, plan.rung);
}

}  // namespace lorascope::engine

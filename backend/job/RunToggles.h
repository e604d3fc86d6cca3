// job/RunToggles.h — the live toggles of a training run: each applied to the run at a step
// boundary (the micro-batch and activation checkpointing to the loop, the device and allocator
// mode to the placement, launch settings process-wide), and the state of all of them confirmed
// as toggle_applied events, with what does nothing where the run computes now.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "engine/Engine.h"  // defines: EventSink
#include "job/DevicePlacement.h"
#include "job/TrainRunConfig.h"
#include "train/TrainLoop.h"

namespace lorascope::job {

class RunToggles {
 public:
  // The toggles of the run in `loop` on `placement`, its settings `settings`; all three must
  // outlive this.
  RunToggles(train::TrainLoop& loop, DevicePlacement& placement, TrainRunSettings& settings,
             engine::EventSink sink);

  // Applies `value` (checked by the protocol) now; says what happened ("" for nothing to say).
  // Throws (the toggle is refused, the run as it was) when the run cannot take it.
  std::string apply(const engine::Toggle& toggle, const nlohmann::json& value);
  std::string notApplicable(const engine::Toggle& toggle) const {
    return placement_.notApplicable(toggle);
  }

  // What the run starts with, confirmed like the live changes, so the controls show the state the
  // engine really has (after a restart, the mirrored micro-batch).
  void reportStart() const;
  // The toggles whose applicability depends on the device, confirmed again after a move.
  void reportDevice() const;
  // Graph mode failed in `step` (train/StepGraphs.h: the step ran eagerly instead, and the loop
  // left graph mode): the incident, and the toggle confirmed off.
  void leaveGraphMode(const train::StepMetrics& step);

 private:
  void confirm(const engine::Toggle& toggle, nlohmann::json value) const;

  train::TrainLoop& loop_;
  DevicePlacement& placement_;
  TrainRunSettings& settings_;
  engine::EventSink sink_;
};

}  // namespace lorascope::job

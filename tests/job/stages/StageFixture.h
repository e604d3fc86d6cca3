// StageFixture.h — what the run job's stages are tested on: the built-in demo (its model and
// dataset made in a temporary cache), a run folder for it, and a CPU loop over its examples.
#pragma once

#include "TempDir.h"
#include "TestRunner.h"

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/OsError.h"  // defines: pathText
#include "compute/Backend.h"
#include "engine/Engine.h"
#include "job/DevicePlacement.h"
#include "job/RunOpening.h"
#include "job/TrainRunConfig.h"
#include "model/ModelFolder.h"
#include "train/DemoModel.h"
#include "train/TrainLoop.h"

namespace stagetest {

using namespace lorascope;

// The events a stage sends, kept.
struct Sink {
  std::shared_ptr<std::vector<engine::Event>> events =
      std::make_shared<std::vector<engine::Event>>();
  engine::EventSink sink() const {
    return [events = events](const engine::TimedEvent& timed) { events->push_back(timed.event); };
  }
  template <typename T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const engine::Event& e : *events) {
      if (const T* t = std::get_if<T>(&e))
        out.push_back(*t);
    }
    return out;
  }
  // The log lines, one text.
  std::string logText() const {
    std::string text;
    for (const engine::LogEvent& e : all<engine::LogEvent>())
      text += e.text + "\n";
    return text;
  }
};

// The start command of a small demo run in `out` (6 steps of micro-batch 2).
inline nlohmann::json demoStart(const std::filesystem::path& out) {
  return {{"demo", true},
          {"out", common::pathText(out)},
          {"options", {{"steps", 6}, {"batch-size", 2}, {"max-seq-len", 80}, {"lora-r", 4}}}};
}

// A demo run opened as the job opens it, with its model and a CPU loop over its data.
struct DemoRun {
  lstest::TempDir tmp;
  Sink events;
  job::OpenedRun opened;
  std::unique_ptr<model::ModelFolder> folder;
  std::vector<train::TokenizedExample> examples;

  explicit DemoRun(nlohmann::json start = {})
      : opened(
            (lstest::setEnvironment("LORASCOPE_CACHE_DIR", common::pathText(tmp.path() / "cache")),
             job::openRun(start.is_null() ? demoStart(tmp.path() / "run") : start,
                          [](const std::string&) {}))) {
    folder = std::make_unique<model::ModelFolder>(model::ModelFolder::open(opened.run.baseModel()));
    examples = job::loadRunData(opened, folder->config(), events.sink()).examples;
  }
  // A loop over the run's examples on `backend`, with `weights` placed there (both outlive it).
  std::unique_ptr<train::TrainLoop> newLoop(compute::Backend& backend,
                                            const model::ModelWeights& weights) const {
    return std::make_unique<train::TrainLoop>(backend, folder->config(), weights, examples,
                                              opened.settings.train);
  }
};

// The demo run placed on its CPU backend, with a loop over its data.
struct PlacedRun {
  DemoRun demo;
  std::unique_ptr<job::DevicePlacement> placement;
  std::unique_ptr<train::TrainLoop> loop;  // goes before the placement it computes on

  PlacedRun() {
    placement =
        std::make_unique<job::DevicePlacement>(std::move(demo.opened.backend), *demo.folder,
                                               demo.opened.settings, [](const std::string&) {});
    placement->placeWeights();
    loop = demo.newLoop(placement->backend(), placement->weights());
  }
};

}  // namespace stagetest

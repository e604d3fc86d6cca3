// engine/RunFolderLock.h — the supervisor's hold on a run folder's lock (run.lock,
// common/FileLock.h) for the whole run, across the engines it starts: when an engine dies and the
// next one resumes the run, no other trainer, resume or export takes the folder in between. The
// engines are told who holds it (the start command's "run_lock_holder") and check that the holder
// is their parent instead of taking the lock themselves (train/RunDirectory.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/FileLock.h"

namespace lorascope::engine {

class RunFolderLock {
 public:
  // The lock of the folder a start command names ("out"), taken for a run the engine may accept:
  // a resume's folder must hold a run (its config.json), a new run's must pass the folder rule
  // (runs::checkOutputFolder, against its "model") and is made when missing. nullptr when it is
  // not taken here: no "out", a folder the rule refuses, or one another process holds. The engine
  // then refuses the start with its own message (naming the holder), as without a supervisor.
  static std::unique_ptr<RunFolderLock> take(const nlohmann::json& start);
  // Releases it. A folder this lock made that holds nothing else (the engine refused the start:
  // a model or data path that does not exist, a device it cannot open) is removed, with the
  // parents it made, so that a refused start leaves nothing behind.
  ~RunFolderLock();
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

  // Whether `start` names this lock's folder.
  bool covers(const nlohmann::json& start) const;
  const std::filesystem::path& folder() const { return folder_; }
  // The holder's process id (this process), which the engines are told.
  std::uint32_t holder() const;

 private:
  RunFolderLock(std::filesystem::path folder, std::filesystem::path madeFrom);

  std::filesystem::path folder_;
  std::filesystem::path madeFrom_;  // the outermost folder take() made; empty: none
  std::unique_ptr<common::FileLock> lock_;
};

}  // namespace lorascope::engine

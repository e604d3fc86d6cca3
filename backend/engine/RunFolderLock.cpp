// engine/RunFolderLock.cpp — which start commands the supervisor locks for, and undoing a folder
// it made for a start the engine refused.
#include "engine/RunFolderLock.h"

#include "common/FolderContents.h"
#include "common/OsError.h"  // defines: pathFromUtf8
#include "common/Platform.h"
#include "runs/RunFolder.h"

namespace lorascope::engine {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool flag(const json& start, const char* key) {
  const auto it = start.find(key);
  return it != start.end() && it->is_boolean() && it->get<bool>();
}

// A non-empty string field as a path; empty when missing or anything else.
fs::path pathField(const json& start, const char* key) {
  const auto it = start.find(key);
  if (it == start.end() || !it->is_string())
    return {};
  return common::pathFromUtf8(it->get<std::string>());
}

// `dir` absolute and plain ("runs/a/" → "/home/u/runs/a"), for walking up its parents.
fs::path plainFolder(const fs::path& dir) {
  std::error_code error;
  fs::path plain = fs::absolute(dir, error).lexically_normal();
  if (!plain.has_filename() && plain != plain.root_path())
    plain = plain.parent_path();
  return plain;
}

// Removes `dir` and its parents up to `outermost`, as long as they are empty.
void removeMadeFolders(const fs::path& dir, const fs::path& outermost) {
  std::error_code error;
  for (fs::path made = dir; fs::remove(made, error) && made != outermost;
       made = made.parent_path()) {
  }
}

}  // namespace

std::unique_ptr<RunFolderLock> RunFolderLock::take(const json& start) {
  if (!start.is_object())
    return nullptr;
  if (pathField(start, "out").empty())
    return nullptr;
  const fs::path folder = plainFolder(pathField(start, "out"));
  std::error_code error;
  fs::path madeFrom;
  try {
    if (flag(start, "resume") || flag(start, "resume_from_mirror")) {
      if (!runs::isRunConfig(folder / runs::kRunConfigFile))
        return nullptr;
    } else {
      runs::checkOutputFolder(folder, pathField(start, "model"));
      // The outermost folder that is missing: what the start makes, and undoes when refused.
      for (fs::path missing = folder; !fs::exists(missing) && missing != missing.root_path();
           missing = missing.parent_path()) {
        madeFrom = missing;
      }
      fs::create_directories(folder, error);
      if (error)
        return nullptr;  // the engine says why, as it tries to make it
    }
    return std::unique_ptr<RunFolderLock>(new RunFolderLock(folder, madeFrom));
  } catch (const std::exception&) {
    // Refused by the folder rule, held by another process, a lock file that cannot be made: the
    // engine meets the same and says so. A folder made here for it is taken back.
    if (!madeFrom.empty())
      removeMadeFolders(folder, madeFrom);
    return nullptr;
  }
}

RunFolderLock::RunFolderLock(fs::path folder, fs::path madeFrom)
    : folder_(std::move(folder)),
      madeFrom_(std::move(madeFrom)),
      lock_(std::make_unique<common::FileLock>(folder_ / runs::kRunLockFile)) {}

RunFolderLock::~RunFolderLock() {
  if (madeFrom_.empty())
    return;
  std::error_code error;
  const std::string contents = common::describeFolderEntries(folder_, runs::kRunLockFile, error);
  if (error || !contents.empty())
    return;  // the run began: its folder stays
  // Removed while still held, so that no one locks the file on its way out (FileLock::removeFile).
  if (!lock_->removeFile())
    return;
  lock_.reset();
  removeMadeFolders(folder_, madeFrom_);
}

bool RunFolderLock::covers(const json& start) const {
  const fs::path folder = pathField(start, "out");
  std::error_code error;
  return !folder.empty() && fs::equivalent(folder, folder_, error) && !error;
}

std::uint32_t RunFolderLock::holder() const {
  return common::currentProcessId();
}

}  // namespace lorascope::engine

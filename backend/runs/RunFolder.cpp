// runs/RunFolder.cpp — a run folder's names and rules, and reading what a run wrote.
#include "runs/RunFolder.h"

#include <algorithm>
#include <cstring>

#include "common/FolderContents.h"  // defines: describeFolderEntries
#include "common/OsError.h"         // defines: pathText
#include "runs/RunFileError.h"

namespace lorascope::runs {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kStepPrefix = "step-";

// Whether `inner` is `outer` or inside it, after following links ("./m", "m/../m", a link to m).
bool isWithin(const fs::path& inner, const fs::path& outer) {
  std::error_code ec;
  const fs::path a = fs::weakly_canonical(fs::absolute(inner), ec);
  const fs::path b = fs::weakly_canonical(fs::absolute(outer), ec);
  if (ec)
    return false;
  auto ai = a.begin();
  for (auto bi = b.begin(); bi != b.end(); ++bi, ++ai) {
    if (bi->empty())
      continue;  // a trailing separator
    if (ai == a.end() || *ai != *bi)
      return false;
  }
  return true;
}

}  // namespace

std::optional<std::int64_t> checkpointStepOfName(const std::string& name) {
  if (name.rfind(kStepPrefix, 0) != 0 || name.size() == std::strlen(kStepPrefix) ||
      name.size() > std::strlen(kStepPrefix) + 18) {
    return std::nullopt;
  }
  std::int64_t step = 0;
  for (std::size_t i = std::strlen(kStepPrefix); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') {
      return std::nullopt;
    }
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::string checkpointFolderName(std::int64_t step) {
  return kStepPrefix + std::to_string(step);
}

fs::path unusedFolder(const fs::path& wanted) {
  std::error_code ec;  // a folder that cannot be looked at is left to the folder rule to name
  fs::path candidate = wanted;
  for (int n = 2; fs::exists(fs::symlink_status(candidate, ec)); ++n) {
    candidate = wanted;
    candidate += "-" + std::to_string(n);
  }
  return candidate;
}

namespace {

// The model_path of a run's config.json; none for any other file or none.
std::optional<std::string> modelPathIn(const fs::path& configPath) {
  try {
    const json config = readRunJson(configPath);
    if (config.contains("model_path") && config.at("model_path").is_string()) {
      return config.at("model_path").get<std::string>();
    }
  } catch (const RunFileError&) {
  }
  return std::nullopt;
}

}  // namespace

bool isRunConfig(const fs::path& configPath) {
  return modelPathIn(configPath).has_value();
}

std::optional<std::string> runModelPath(const fs::path& dir) {
  return modelPathIn(dir / kRunConfigFile);
}

void checkOutputFolder(const fs::path& dir, const fs::path& modelDir) {
  const std::string shown = common::pathText(dir);
  std::error_code ec;
  if (!modelDir.empty() && isWithin(dir, modelDir)) {
    throw RunFileError(shown, std::string(fs::equivalent(dir, modelDir, ec) ? "is" : "is inside") +
                                  " the model's folder " + common::pathText(modelDir) +
                                  ": a run never writes into its model's folder; choose "
                                  "another --out folder");
  }
  const fs::file_status status = fs::status(dir, ec);
  if (!fs::exists(status))
    return;  // a new folder
  if (!fs::is_directory(status)) {
    throw RunFileError(shown, "exists and is not a folder; choose another --out folder");
  }
  if (fs::exists(dir / kRunConfigFile, ec) && isRunConfig(dir / kRunConfigFile))
    return;  // a LoRAscope run: RunDirectory::create decides whether it may be reused
  const std::string contents = common::describeFolderEntries(dir, kRunLockFile, ec);
  if (ec) {
    throw RunFileError(shown,
                       "cannot be listed (" + ec.message() + "); choose another --out folder");
  }
  if (contents.empty())
    return;  // empty, or only the lock file of a run killed as it began
  throw RunFileError(shown, "is not empty and is not a LoRAscope run: it holds " + contents +
                                ". A run goes only into a new or empty folder (or its own run "
                                "folder, to resume it); choose another --out folder");
}

RunFolder RunFolder::open(const fs::path& dir) {
  const fs::path configPath = dir / kRunConfigFile;
  if (!fs::exists(configPath)) {
    throw RunFileError(common::pathText(configPath),
                       "is missing: " + common::pathText(dir) + " is not a LoRAscope run folder");
  }
  json config = readRunJson(configPath);
  if (!config.contains("model_path") || !config.at("model_path").is_string()) {
    throw RunFileError(common::pathText(configPath),
                       "is not a run config (a JSON object with \"model_path\")");
  }
  return RunFolder(dir, std::move(config));
}

fs::path RunFolder::checkpointDir(std::int64_t step) const {
  return dir_ / kCheckpointsDir / checkpointFolderName(step);
}

std::vector<std::int64_t> RunFolder::checkpointSteps() const {
  std::vector<std::int64_t> steps;
  const fs::path root = dir_ / kCheckpointsDir;
  if (!fs::is_directory(root)) {
    return steps;
  }
  for (const fs::directory_entry& entry : fs::directory_iterator(root)) {
    if (const auto step = checkpointStepOfName(common::pathText(entry.path().filename()));
        step && entry.is_directory()) {
      steps.push_back(*step);
    }
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

}  // namespace lorascope::runs

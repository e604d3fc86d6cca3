// HfCache.cpp — model ids to snapshot folders of the Hugging Face hub cache.
#include "model/HfCache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>

#include "common/OsError.h"   // defines: pathFromUtf8, pathText
#include "common/Platform.h"  // defines: environmentVariable
#include "model/ModelError.h"

namespace lorascope::model {
namespace fs = std::filesystem;

namespace {

bool idCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_' || c == '.';
}

std::string firstLine(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
    line.pop_back();
  return line;
}

// The snapshot of `revision` in one repository folder of the cache, or why there is none.
std::optional<fs::path> findSnapshot(const fs::path& repo, const std::string& revision,
                                     std::string& why) {
  std::error_code ec;
  if (!fs::is_directory(repo, ec)) {
    why = common::pathText(repo) + " (absent)";
    return std::nullopt;
  }
  const fs::path ref = repo / "refs" / common::pathFromUtf8(revision);
  std::string commit;
  if (fs::is_regular_file(ref, ec)) {
    commit = firstLine(ref);
  } else if (revision.size() == 40 && std::all_of(revision.begin(), revision.end(), [](char c) {
               return std::isxdigit(static_cast<unsigned char>(c)) != 0;
             })) {
    commit = revision;  // a commit hash names its snapshot directly
  } else {
    why = common::pathText(ref) + " (absent: revision '" + revision + "' was never downloaded)";
    return std::nullopt;
  }
  const fs::path snapshot = repo / "snapshots" / common::pathFromUtf8(commit);
  if (!fs::is_directory(snapshot, ec)) {
    why = common::pathText(snapshot) + " (absent, though " + common::pathText(ref) + " names it)";
    return std::nullopt;
  }
  return snapshot;
}

}  // namespace

EnvLookup processEnvironment() {
  return [](const char* name) { return common::environmentVariable(name); };  // UTF-8
}

std::vector<fs::path> hubCacheDirs(const EnvLookup& env) {
  std::vector<fs::path> dirs;
  auto add = [&dirs](const fs::path& dir) {
    if (std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
      dirs.push_back(dir);
  };
  if (const auto hubCache = env("HF_HUB_CACHE"))
    add(common::pathFromUtf8(*hubCache));
  if (const auto legacy = env("HUGGINGFACE_HUB_CACHE"))
    add(common::pathFromUtf8(*legacy));
  if (const auto home = env("HF_HOME"))
    add(common::pathFromUtf8(*home) / "hub");
  if (const auto xdg = env("XDG_CACHE_HOME"))
    add(common::pathFromUtf8(*xdg) / "huggingface" / "hub");
  if (const auto home = env("HOME"))
    add(common::pathFromUtf8(*home) / ".cache" / "huggingface" / "hub");
  return dirs;
}

bool looksLikeModelId(std::string_view spec) {
  const std::string_view id = spec.substr(0, spec.find('@'));
  if (id.empty() || id.front() == '.' || id.front() == '-' || id.front() == '/' ||
      id.find("..") != std::string_view::npos)
    return false;
  std::size_t slashes = 0;
  for (char c : id) {
    if (c == '/')
      ++slashes;
    else if (!idCharacter(c))
      return false;
  }
  return slashes <= 1 && id.back() != '/' && id.find("/.") == std::string_view::npos;
}

ResolvedModel resolveModel(const std::string& spec, const EnvLookup& env) {
  std::error_code ec;
  if (const fs::path given = common::pathFromUtf8(spec); fs::is_directory(given, ec))
    return {given, std::nullopt, ""};
  if (!looksLikeModelId(spec)) {
    throw ModelError(spec,
                     std::string(fs::exists(common::pathFromUtf8(spec), ec) ? "is not a folder"
                                                                            : "does not exist") +
                         " (expected a Hugging Face model folder or id)");
  }
  const std::size_t at = spec.find('@');
  const std::string id = spec.substr(0, at);
  const std::string revision = at == std::string::npos ? "main" : spec.substr(at + 1);
  // huggingface_hub's folder name: "models--" + id with "/" replaced by "--".
  std::string repoName = "models--" + id.substr(0, id.find('/'));
  if (id.find('/') != std::string::npos)
    repoName += "--" + id.substr(id.find('/') + 1);
  std::vector<std::string> looked;
  for (const fs::path& cache : hubCacheDirs(env)) {
    std::string why;
    if (const auto snapshot = findSnapshot(cache / common::pathFromUtf8(repoName), revision, why))
      return {*snapshot, id, revision};
    looked.push_back(why);
  }
  std::string message = "is neither a folder nor a model in the Hugging Face cache; looked in:";
  for (const std::string& place : looked)
    message += "\n  " + place;
  if (looked.empty())
    message += "\n  (no cache folder: HF_HUB_CACHE, HF_HOME and HOME are all unset)";
  message += "\nLoRAscope works offline: download it first (huggingface-cli download " + id +
             "), or pass the model folder's path.";
  throw ModelError(spec, message);
}

}  // namespace lorascope::model

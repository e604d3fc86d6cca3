// engine/EnginePaths.cpp — WSL and prefix translation of paths, and of the commands and events
// that carry them.
#include "engine/EnginePaths.h"

#include <algorithm>
#include <cctype>

#include "common/OsError.h"  // defines: pathFromUtf8, pathText

namespace lorascope::engine {
namespace {

// The run configuration's keys whose string values are paths of this side.
constexpr const char* kPathKeys[] = {"out",       "model_path", "data_path", "mirror",
                                     "fault_dir", "model",      "data"};

bool isSeparator(char c) {
  return c == '\\' || c == '/';
}

std::string withSlashes(std::string_view text, char slash) {
  std::string out(text);
  std::replace_if(out.begin(), out.end(), isSeparator, slash);
  return out;
}

// `path` starts with `prefix` as whole components ("/a/b" is under "/a", "/ab" is not).
bool underPrefix(std::string_view path, std::string_view prefix) {
  while (prefix.size() > 1 && isSeparator(prefix.back())) {
    prefix.remove_suffix(1);
  }
  return path.substr(0, prefix.size()) == prefix &&
         (path.size() == prefix.size() || isSeparator(path[prefix.size()]) ||
          isSeparator(prefix.back()));
}

std::string swapPrefix(std::string_view path, std::string_view from, std::string_view to) {
  while (from.size() > 1 && isSeparator(from.back())) {
    from.remove_suffix(1);
  }
  return std::string(to) + std::string(path.substr(from.size()));
}

}  // namespace

std::string windowsToWslPath(std::string_view path) {
  // C:\dir or C:/dir -> /mnt/c/dir
  if (path.size() >= 2 && std::isalpha(static_cast<unsigned char>(path[0])) && path[1] == ':' &&
      (path.size() == 2 || isSeparator(path[2]))) {
    const char drive = static_cast<char>(std::tolower(static_cast<unsigned char>(path[0])));
    return "/mnt/" + std::string(1, drive) + withSlashes(path.substr(2), '/');
  }
  // \\wsl.localhost\<distro>\home\... or \\wsl$\<distro>\... -> /home/...
  for (std::string_view share :
       {"\\\\wsl.localhost\\", "\\\\wsl$\\", "//wsl.localhost/", "//wsl$/"}) {
    if (path.substr(0, share.size()) == share) {
      const std::string_view rest = path.substr(share.size());
      const std::size_t slash = rest.find_first_of("\\/");
      return slash == std::string_view::npos ? "/" : withSlashes(rest.substr(slash), '/');
    }
  }
  return std::string(path);
}

std::string wslToWindowsPath(std::string_view path, std::string_view distro) {
  // /mnt/c/dir -> C:\dir
  if (path.size() >= 6 && path.substr(0, 5) == "/mnt/" &&
      std::isalpha(static_cast<unsigned char>(path[5])) && (path.size() == 6 || path[6] == '/')) {
    const char drive = static_cast<char>(std::toupper(static_cast<unsigned char>(path[5])));
    const std::string rest = withSlashes(path.substr(6), '\\');
    return std::string(1, drive) + ":" + (rest.empty() ? "\\" : rest);
  }
  if (!path.empty() && path[0] == '/' && !distro.empty()) {
    return "\\\\wsl.localhost\\" + std::string(distro) + withSlashes(path, '\\');
  }
  return std::string(path);
}

std::string wslDistribution(const profiles::EngineLocation& location) {
  const auto& args = location.launcher;
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--") {
      break;  // what follows is the command inside the distribution
    }
    if (args[i] == "-d" || args[i] == "--distribution") {
      return args[i + 1];
    }
  }
  return "";
}

EnginePathTranslator::EnginePathTranslator(profiles::EngineLocation location,
                                           std::filesystem::path hostDirectory)
    : location_(std::move(location)),
      hostDirectory_(hostDirectory.empty() ? std::filesystem::current_path() : hostDirectory),
      distro_(wslDistribution(location_)) {}

std::string EnginePathTranslator::toEngine(std::string_view hostPath) const {
  if (location_.paths == profiles::EnginePaths::Same || hostPath.empty()) {
    return std::string(hostPath);
  }
  const std::filesystem::path given = common::pathFromUtf8(hostPath);
  const std::string absolute =
      common::pathText(given.is_absolute() ? given : (hostDirectory_ / given).lexically_normal());
  if (location_.paths == profiles::EnginePaths::Wsl) {
    return windowsToWslPath(absolute);
  }
  for (const auto& [host, engine] : location_.prefixes) {
    if (underPrefix(absolute, host)) {
      return swapPrefix(absolute, host, engine);
    }
  }
  return absolute;
}

std::string EnginePathTranslator::toHost(std::string_view enginePath) const {
  if (location_.paths == profiles::EnginePaths::Wsl) {
    return wslToWindowsPath(enginePath, distro_);
  }
  if (location_.paths == profiles::EnginePaths::Prefixes) {
    for (const auto& [host, engine] : location_.prefixes) {
      if (underPrefix(enginePath, engine)) {
        return swapPrefix(enginePath, engine, host);
      }
    }
  }
  return std::string(enginePath);
}

Command EnginePathTranslator::toEngine(Command command) const {
  if (auto* start = std::get_if<StartCommand>(&command);
      start != nullptr && start->runConfig.is_object()) {
    for (const char* key : kPathKeys) {
      if (auto it = start->runConfig.find(key); it != start->runConfig.end() && it->is_string()) {
        *it = toEngine(it->get<std::string>());
      }
    }
  }
  if (auto* generation = std::get_if<GenerateCommand>(&command)) {
    // A model may be a Hugging Face id, which names no folder here: kept as it is.
    if (std::error_code error;
        std::filesystem::exists(common::pathFromUtf8(generation->model), error))
      generation->model = toEngine(generation->model);
    generation->adapter = toEngine(generation->adapter);
  }
  return command;
}

TimedEvent EnginePathTranslator::toHost(TimedEvent event) const {
  if (auto* checkpoint = std::get_if<CheckpointEvent>(&event.event)) {
    checkpoint->path = toHost(checkpoint->path);
  }
  return event;
}

}  // namespace lorascope::engine

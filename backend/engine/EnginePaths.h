// engine/EnginePaths.h — file paths between this program and an engine that runs elsewhere
// (profiles::EngineLocation): inside WSL2 (C:\Users\Zoë\runs <-> /mnt/c/Users/Zoë/runs; the
// distribution's own files as \\wsl.localhost\<distro>\home\...), or under other prefixes (the
// Linux stand-in launcher of the tests). Paths are UTF-8 text, as they travel in the protocol.
// The commands that carry paths (StartCommand's run configuration: out, model_path, data_path,
// mirror, fault_dir, model, data; GenerateCommand's model folder and adapter) go one way, the
// events that carry paths (CheckpointEvent) come back the other way; a relative path is made
// absolute on this side first, since the engine runs in another working directory.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "engine/Protocol.h"
#include "profiles/Profile.h"

namespace lorascope::engine {

// Windows <-> WSL forms. `distro` names the distribution for paths outside /mnt/<drive> ("" keeps
// them as they are). Text that is not a path of the expected form comes back unchanged.
std::string windowsToWslPath(std::string_view windowsPath);
std::string wslToWindowsPath(std::string_view wslPath, std::string_view distro);

// The distribution a launcher names ("wsl.exe -d Ubuntu ..." or "--distribution Ubuntu"); "" when
// none (the default distribution).
std::string wslDistribution(const profiles::EngineLocation& location);

class EnginePathTranslator {
 public:
  // `hostDirectory` resolves relative paths of this side (the current directory by default).
  explicit EnginePathTranslator(profiles::EngineLocation location,
                                std::filesystem::path hostDirectory = {});

  std::string toEngine(std::string_view hostPath) const;
  std::string toHost(std::string_view enginePath) const;
  Command toEngine(Command command) const;
  TimedEvent toHost(TimedEvent event) const;

 private:
  profiles::EngineLocation location_;
  std::filesystem::path hostDirectory_;
  std::string distro_;
};

}  // namespace lorascope::engine

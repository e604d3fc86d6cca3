// common/Build.h — what this build is (version, flavour, GPU targets, compiler), recorded by CMake.
// Below every layer, so that the GUI says what it is without the GPU code (compute/BuildInfo.h
// adds what the GPU runtime reports, which the GUI hears from its engine's hello event).
#pragma once

#include <string>

namespace lorascope::common {

struct BuildInfo {
  std::string version;     // "0.1.0"
  std::string flavour;     // "cpu", "hip-amd" or "hip-nvidia"
  std::string gpuTargets;  // "gfx1030;gfx90a", "sm_90" or "" for cpu
  std::string compiler;    // e.g. "GNU 12.2.0"
};
const BuildInfo& buildInfo();

}  // namespace lorascope::common

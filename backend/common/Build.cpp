// common/Build.cpp — the build facts CMake wrote into lorascope_build_config.h.
#include "common/Build.h"

#include "lorascope_build_config.h"  // generated: LORASCOPE_VERSION, LORASCOPE_FLAVOUR, ...

namespace lorascope::common {

const BuildInfo& buildInfo() {
  static const BuildInfo info{LORASCOPE_VERSION, LORASCOPE_FLAVOUR, LORASCOPE_GPU_TARGETS,
                              LORASCOPE_COMPILER};
  return info;
}

}  // namespace lorascope::common

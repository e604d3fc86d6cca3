// group/NoNcclCollective.cpp — the cpu flavour has no GPU, so no NCCL/RCCL group: the answers say
// so (the in-process group of the tests does not need this file).
#include "group/NcclCollective.h"

namespace lorascope::group {
namespace {
constexpr const char* kNoGpu =
    "this lorascope-train is the cpu flavour (no GPU code); a group over NCCL or RCCL needs the "
    "hip-nvidia or hip-amd build";
}

CollectiveLibrary probeCollectiveLibrary() {
  return {false, "NCCL/RCCL", "", kNoGpu};
}

std::unique_ptr<Collective> openNcclGroup(const NcclGroupSpec& spec) {
  throw CollectiveError(
      CollectiveOp::Init, false,
      "rank " + std::to_string(spec.rank) + " of " + std::to_string(spec.size) + ": " + kNoGpu);
}

}  // namespace lorascope::group

// group/NoNcclCollective.cpp — builds without GPU code have no NCCL/RCCL group: the answers say
// why (Windows: neither library exists there; the cpu flavour: no GPU). The in-process group of
// the tests does not need this file.
#include "common/Platform.h"  // defines: kOsFamily
#include "group/NcclCollective.h"

namespace lorascope::group {
namespace {

std::string whyNot() {
  if (common::kOsFamily == common::OsFamily::Windows) {
    return "training on several GPUs is Linux only: NCCL and RCCL have no Windows build";
  }
  return "this lorascope-train is the cpu flavour (no GPU code); a group over NCCL or RCCL needs "
         "the hip-nvidia or hip-amd build";
}

}  // namespace

CollectiveLibrary probeCollectiveLibrary() {
  return {false, "NCCL/RCCL", "", whyNot()};
}

std::unique_ptr<Collective> openNcclGroup(const NcclGroupSpec& spec) {
  throw CollectiveError(
      CollectiveOp::Init, false,
      "rank " + std::to_string(spec.rank) + " of " + std::to_string(spec.size) + ": " + whyNot());
}

}  // namespace lorascope::group

// group/GroupCheck.h — a group of one on a GPU through the vendors' collective library (NCCL,
// RCCL): the library loads, the group forms through its rendezvous file, and a bucketed sum, a
// broadcast and a barrier over device memory leave known values as they must. What `doctor`
// checks on the user's card and tests/group/gpu_group_nccl on the GPU machine.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "compute/Backend.h"
#include "group/NcclCollective.h"  // defines: CollectiveLibrary

namespace lorascope::group {

struct GroupOfOneCheck {
  CollectiveLibrary library;
  bool ran = false;                   // the library loaded and the group was asked to form
  bool passed = false;                // it formed and every collective left the values right
  std::string detail;                 // what passed, or what failed (the library's words)
  std::unique_ptr<Collective> group;  // the group of one, when it formed
};

// On `gpu` (the backend of GPU `device`); the rendezvous file is written there and removed.
GroupOfOneCheck checkGroupOfOne(compute::Backend& gpu, int device,
                                const std::filesystem::path& rendezvousFile);

}  // namespace lorascope::group

// group/NcclCollective.h — a group over the vendors' collective library: NCCL on NVIDIA, RCCL on
// AMD (one API, gpu/hip_portability.h's names), one process per GPU, on device memory.
//
// The library is loaded at run time (libnccl.so.2 from the CUDA toolkit or the nvidia-nccl
// package; librccl.so.1 from ROCm), so lorascope-train starts where it is missing and says so
// when a group is asked for. Linux only: neither library has a Windows build.
//
// Forming the group: rank 0 asks the library for the group's unique id and writes it (128 bytes)
// to the rendezvous file durably; the other ranks wait for that file (up to the spec's time-out),
// then every rank joins with ncclCommInitRank on its device. A fresh rendezvous file per start of
// the group (the supervisor names it) keeps a restart from reading the last start's id.
//
// Each collective runs on the group's own stream, then waits for it while polling the
// communicator's asynchronous error; past the time-out the communicator is aborted and the call
// throws a timed-out CollectiveError naming the collective (a hang, for the supervisor). The
// caller synchronizes its own device queue before a collective (group/Collective.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "group/Collective.h"

namespace lorascope::group {

struct NcclGroupSpec {
  int rank = 0;
  int size = 1;
  int device = 0;                        // the GPU this rank runs on
  std::filesystem::path rendezvousFile;  // rank 0 writes the unique id there
  std::int64_t timeoutMs = 300'000;      // for the rendezvous and for each collective
};

// What this build and machine offer: the library's name ("NCCL", "RCCL") and version, or why
// there is none ("this build has no GPU", "libnccl.so.2: cannot open shared object file").
struct CollectiveLibrary {
  bool available = false;
  std::string name;
  std::string version;  // "2.28.9"
  std::string reason;   // when not available
};
CollectiveLibrary probeCollectiveLibrary();

// Joins the group described by `spec`. Throws CollectiveError (op init) naming the library, the
// rank and what failed: no library, a rendezvous file that never came, the library's error.
std::unique_ptr<Collective> openNcclGroup(const NcclGroupSpec& spec);

}  // namespace lorascope::group

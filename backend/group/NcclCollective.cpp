// group/NcclCollective.cpp — NCCL/RCCL loaded at run time (hip-nvidia and hip-amd flavours; the
// cpu flavour compiles group/NoNcclCollective.cpp instead). The types and signatures come from the
// vendor's header through gpu/hip_portability.h (LORASCOPE_COLLECTIVES); nothing links the library.
#define LORASCOPE_COLLECTIVES
#include "gpu/hip_portability.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "common/BoundedFile.h"
#include "common/DurableFile.h"
#include "common/OsError.h"  // defines: pathText
#include "group/NcclCollective.h"
#include "telemetry/DynamicLibrary.h"

namespace lorascope::group {

#if defined(LORASCOPE_HAVE_COLLECTIVES)

namespace {

using Clock = std::chrono::steady_clock;

// A communicator's asynchronous state that is an error. ncclInProgress (NCCL 2.14 on: a
// nonblocking operation still running) is none; older headers, such as Debian's RCCL 5.4 (NCCL
// 2.13's API), have no such state.
bool asyncFailed(ncclResult_t async) {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 14, 0)
  return async != ncclSuccess && async != ncclInProgress;
#else
  return async != ncclSuccess;
#endif
}

// The library's entry points, resolved by name from the vendor's declarations.
struct NcclApi {
  decltype(&ncclGetVersion) getVersion = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclCommAbort) commAbort = nullptr;
  decltype(&ncclCommGetAsyncError) commGetAsyncError = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclBroadcast) broadcast = nullptr;

  telemetry::DynamicLibrary library;
  telemetry::LoadResult loaded;
  std::string version;
};

// Loaded once per process and kept (a communicator's threads live in the library).
NcclApi& api() {
  static NcclApi* instance = [] {
    auto* a = new NcclApi;  // never freed: the library stays loaded for the process's life
    using telemetry::slotFor;
    std::vector<std::string> files;
    for (const char* f : gpu::kCollectiveLibraryFiles) {
      files.emplace_back(f);
    }
    a->loaded = a->library.open(files, {{{"ncclGetVersion"}, slotFor(a->getVersion)},
                                        {{"ncclGetUniqueId"}, slotFor(a->getUniqueId)},
                                        {{"ncclCommInitRank"}, slotFor(a->commInitRank)},
                                        {{"ncclCommDestroy"}, slotFor(a->commDestroy)},
                                        {{"ncclCommAbort"}, slotFor(a->commAbort)},
                                        {{"ncclCommGetAsyncError"}, slotFor(a->commGetAsyncError)},
                                        {{"ncclGetErrorString"}, slotFor(a->getErrorString)},
                                        {{"ncclAllReduce"}, slotFor(a->allReduce)},
                                        {{"ncclBroadcast"}, slotFor(a->broadcast)}});
    int code = 0;
    if (a->loaded.loaded && a->getVersion(&code) == ncclSuccess) {
      // NCCL_VERSION_CODE: major·10000 + minor·100 + patch since 2.9.
      a->version = std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
                   std::to_string(code % 100);
    }
    return a;
  }();
  return *instance;
}

class NcclCollective final : public Collective {
 public:
  NcclCollective(const NcclGroupSpec& spec, ncclComm_t comm, hipStream_t stream, float* scratch)
      : spec_(spec), comm_(comm), stream_(stream), scratch_(scratch) {}
  ~NcclCollective() override {
    if (comm_ != nullptr) {
      (aborted_ ? api().commAbort : api().commDestroy)(comm_);
    }
    (void)hipFree(scratch_);  // a destructor has no one to tell
    (void)hipStreamDestroy(stream_);
  }
  int rank() const override { return spec_.rank; }
  int size() const override { return spec_.size; }
  std::string name() const override { return gpu::kCollectiveLibraryName; }

  void allReduceSum(float* data, std::size_t count) override {
    check(CollectiveOp::AllReduce,
          api().allReduce(data, data, count, ncclFloat32, ncclSum, comm_, stream_));
    wait(CollectiveOp::AllReduce);
  }
  void broadcast(float* data, std::size_t count, int root) override {
    check(CollectiveOp::Broadcast,
          api().broadcast(data, data, count, ncclFloat32, root, comm_, stream_));
    wait(CollectiveOp::Broadcast);
  }
  // NCCL has no barrier: a one-float sum every rank must join.
  void barrier() override {
    check(CollectiveOp::Barrier,
          api().allReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_));
    wait(CollectiveOp::Barrier);
  }

 private:
  std::string where(CollectiveOp op) const {
    return std::string(gpu::kCollectiveLibraryName) + " rank " + std::to_string(spec_.rank) +
           " of " + std::to_string(spec_.size) + " (GPU " + std::to_string(spec_.device) +
           "): " + collectiveOpName(op);
  }
  void check(CollectiveOp op, ncclResult_t result) {
    if (result != ncclSuccess) {
      throw CollectiveError(op, false, where(op) + ": " + api().getErrorString(result));
    }
  }
  // The stream's completion, the communicator's asynchronous errors, and the time-out.
  void wait(CollectiveOp op) {
    const auto deadline = Clock::now() + std::chrono::milliseconds(spec_.timeoutMs);
    for (;;) {
      const hipError_t state = hipStreamQuery(stream_);
      if (state == hipSuccess) {
        return;
      }
      if (state != hipErrorNotReady) {
        throw CollectiveError(
            op, false, where(op) + ": " + hipGetErrorName(state) + ": " + hipGetErrorString(state));
      }
      ncclResult_t async = ncclSuccess;
      api().commGetAsyncError(comm_, &async);
      if (asyncFailed(async)) {
        aborted_ = true;
        throw CollectiveError(op, false, where(op) + ": " + api().getErrorString(async));
      }
      if (Clock::now() > deadline) {
        aborted_ = true;  // the destructor aborts: a destroy would wait for the hung kernel
        throw CollectiveError(op, true,
                              where(op) + ": timed out after " +
                                  std::to_string(spec_.timeoutMs / 1000) +
                                  " s; a rank never arrived (or its GPU stopped)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  NcclGroupSpec spec_;
  ncclComm_t comm_;
  hipStream_t stream_;
  float* scratch_;  // (1) the barrier's value
  bool aborted_ = false;
};

[[noreturn]] void initFailed(const NcclGroupSpec& spec, const std::string& what) {
  throw CollectiveError(CollectiveOp::Init, false,
                        std::string(gpu::kCollectiveLibraryName) + " rank " +
                            std::to_string(spec.rank) + " of " + std::to_string(spec.size) +
                            " (GPU " + std::to_string(spec.device) + "): " + what);
}

// Rank 0 writes the unique id; the others wait for it.
ncclUniqueId rendezvous(const NcclGroupSpec& spec) {
  ncclUniqueId id{};
  const std::string file = common::pathText(spec.rendezvousFile);
  if (spec.rank == 0) {
    const ncclResult_t result = api().getUniqueId(&id);
    if (result != ncclSuccess) {
      initFailed(spec, std::string("ncclGetUniqueId: ") + api().getErrorString(result));
    }
    common::writeFileDurably(spec.rendezvousFile,
                             std::string_view(id.internal, sizeof(id.internal)));
    return id;
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(spec.timeoutMs);
  for (;;) {
    std::error_code ec;
    if (std::filesystem::file_size(spec.rendezvousFile, ec) == sizeof(id.internal)) {
      const std::string bytes =
          common::readBoundedFile(spec.rendezvousFile, {sizeof(id.internal), "a group's id"});
      std::copy(bytes.begin(), bytes.end(), id.internal);
      return id;
    }
    if (Clock::now() > deadline) {
      initFailed(spec, "rank 0 did not write the group's id to " + file + " within " +
                           std::to_string(spec.timeoutMs / 1000) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

CollectiveLibrary probeCollectiveLibrary() {
  NcclApi& a = api();
  CollectiveLibrary library;
  library.name = gpu::kCollectiveLibraryName;
  library.available = a.loaded.loaded;
  library.version = a.version;
  library.reason = a.loaded.error;
  return library;
}

std::unique_ptr<Collective> openNcclGroup(const NcclGroupSpec& spec) {
  if (spec.size < 1 || spec.rank < 0 || spec.rank >= spec.size) {
    initFailed(spec, "rank outside the group");
  }
  if (!api().loaded.loaded) {
    initFailed(spec, "cannot load the library: " + api().loaded.error);
  }
  hipError_t status = hipSetDevice(spec.device);
  if (status != hipSuccess) {
    initFailed(spec, std::string("hipSetDevice: ") + hipGetErrorString(status));
  }
  const ncclUniqueId id = rendezvous(spec);
  hipStream_t stream = nullptr;
  float* scratch = nullptr;
  if ((status = hipStreamCreateWithFlags(&stream, hipStreamNonBlocking)) != hipSuccess ||
      (status = hipMalloc(reinterpret_cast<void**>(&scratch), sizeof(float))) != hipSuccess ||
      (status = hipMemset(scratch, 0, sizeof(float))) != hipSuccess) {
    initFailed(spec, std::string("the group's stream and scratch: ") + hipGetErrorString(status));
  }
  ncclComm_t comm = nullptr;
  const ncclResult_t result = api().commInitRank(&comm, spec.size, id, spec.rank);
  if (result != ncclSuccess) {
    (void)hipFree(scratch);  // the init's failure is the error reported
    (void)hipStreamDestroy(stream);
    initFailed(spec, std::string("ncclCommInitRank: ") + api().getErrorString(result));
  }
  return std::make_unique<NcclCollective>(spec, comm, stream, scratch);
}

#else  // a hip-amd build without RCCL's header: group/NcclCollective.h says why

CollectiveLibrary probeCollectiveLibrary() {
  return {false, gpu::kCollectiveLibraryName, "", gpu::kNoCollectivesReason};
}

std::unique_ptr<Collective> openNcclGroup(const NcclGroupSpec& spec) {
  throw CollectiveError(CollectiveOp::Init, false,
                        std::string(gpu::kCollectiveLibraryName) + " rank " +
                            std::to_string(spec.rank) + ": " + gpu::kNoCollectivesReason);
}

#endif

}  // namespace lorascope::group

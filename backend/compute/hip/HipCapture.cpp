// hip/HipCapture.cpp — whole-step graph capture on the GPU backend (Backend.h, CapturedOps; Note
// [whole-step graphs] in train/StepGraphs.h): the stream captured in relaxed mode, uploads of
// host values made capturable, the allocator's graph pool, pinned host memory and the replay.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "compute/Errors.h"
#include "compute/hip/HipCapture.h"
#include "compute/hip/HipCheck.h"  // defines: LORASCOPE_HIP_CHECK, checkLaunch
#include "runtime/LaunchControl.h"

namespace lorascope::compute::hip {

namespace {

struct PinnedFree {
  std::shared_ptr<PinnedRanges> ranges;
  void operator()(std::byte* p) const {
    ranges->remove(p);
    (void)hipHostFree(p);
  }
};

std::shared_ptr<std::byte[]> allocatePinned(std::size_t bytes) {
  void* p = nullptr;
  LORASCOPE_HIP_CHECK(hipHostMalloc(&p, std::max<std::size_t>(bytes, 1), hipHostMallocDefault));
  std::memset(p, 0, bytes);
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p),
                                      [](std::byte* q) { (void)hipHostFree(q); });
}

}  // namespace

const std::byte* HipBackend::Capture::stage(const void* host, std::size_t bytes) {
  const std::size_t aligned = (bytes + 255) / 256 * 256;
  if (aligned > kStagingBlockBytes) {
    staging.push_back(allocatePinned(aligned));
    used = kStagingBlockBytes;  // the next one starts a block of its own
    std::memcpy(staging.back().get(), host, bytes);
    return staging.back().get();
  }
  if (used + aligned > kStagingBlockBytes) {
    staging.push_back(allocatePinned(kStagingBlockBytes));
    used = 0;
  }
  std::byte* at = staging.back().get() + used;
  used += aligned;
  std::memcpy(at, host, bytes);
  return at;
}

namespace {

class HipCapturedOps final : public CapturedOps {
 public:
  HipCapturedOps(int device, hipStream_t stream, hipGraph_t graph, hipGraphExec_t exec,
                 std::vector<std::shared_ptr<std::byte[]>> staging)
      : device_(device),
        stream_(stream),
        graph_(graph),
        exec_(exec),
        staging_(std::move(staging)) {}
  HipCapturedOps(const HipCapturedOps&) = delete;
  HipCapturedOps& operator=(const HipCapturedOps&) = delete;
  ~HipCapturedOps() override {
    (void)hipSetDevice(device_);
    (void)hipStreamSynchronize(stream_);  // a replay in flight still reads the staging copies
    (void)hipGraphExecDestroy(exec_);
    (void)hipGraphDestroy(graph_);
  }

  void replay() override {
    constexpr const char* op = "step_graph";
    checkLaunch(runtime::gpu::beforeLaunch(op, stream_), op, __FILE__, __LINE__);
    const hipError_t error = hipGraphLaunch(exec_, stream_);
    checkLaunch(runtime::gpu::afterLaunch(op, stream_, error), op, __FILE__, __LINE__);
  }

 private:
  int device_;
  hipStream_t stream_;
  hipGraph_t graph_;
  hipGraphExec_t exec_;
  std::vector<std::shared_ptr<std::byte[]>> staging_;
};

}  // namespace

std::shared_ptr<std::byte[]> HipBackend::pinnedHost(std::size_t bytes) {
  requireNotCapturing("pinnedHost");
  void* p = nullptr;
  LORASCOPE_HIP_CHECK(hipHostMalloc(&p, std::max<std::size_t>(bytes, 1), hipHostMallocDefault));
  std::memset(p, 0, bytes);
  auto* begin = static_cast<std::byte*>(p);
  pinnedRanges_->add(begin, bytes);
  return std::shared_ptr<std::byte[]>(begin, PinnedFree{pinnedRanges_});
}

void HipBackend::requireNotCapturing(const char* op) const {
  if (capturing()) {
    throw UnsupportedOpError(std::string(op) +
                             " waits for the GPU or reads back, which a captured graph cannot");
  }
}

void HipBackend::copyHostToDeviceAsync(void* dst, const void* src, std::size_t bytes) {
  if (capture_ != nullptr && !pinnedRanges_->contains(src, bytes)) {
    src = capture_->stage(src, bytes);
  }
  LORASCOPE_HIP_CHECK(hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, stream_));
}

void HipBackend::copyIn(std::span<const std::byte> host, Tensor& dst) {
  checkCopyArgs("copy_in", caps_, dst, host.size());
  copyHostToDeviceAsync(dst.data(), host.data(), host.size());
}

void HipBackend::copyOut(const Tensor& src, std::span<std::byte> host) {
  checkCopyArgs("copy_out", caps_, src, host.size());
  if (capturing() && !pinnedRanges_->contains(host.data(), host.size())) {
    throw UnsupportedOpError("copy_out: a captured copy must land in pinnedHost() memory");
  }
  LORASCOPE_HIP_CHECK(
      hipMemcpyAsync(host.data(), src.data(), host.size(), hipMemcpyDeviceToHost, stream_));
}

void HipBackend::beginCapture() {
  requireNotCapturing("beginCapture");
  // Eager work still queued must not become part of the graph: it has been issued already, but
  // the stream is drained so that the capture starts from a quiet stream.
  LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_));
  // Relaxed: the allocator may ask the driver for a graph-pool segment while capturing.
  LORASCOPE_HIP_CHECK(hipStreamBeginCapture(stream_, hipStreamCaptureModeRelaxed));
  capture_ = std::make_unique<Capture>();
  allocator_->beginGraphCapture();
  runtime::launchControl().setCapturing(true);
}

std::unique_ptr<CapturedOps> HipBackend::endCapture() {
  if (capture_ == nullptr) {
    throw UnsupportedOpError("endCapture without beginCapture");
  }
  runtime::launchControl().setCapturing(false);
  allocator_->endGraphCapture();
  std::unique_ptr<Capture> capture = std::move(capture_);
  hipGraph_t graph = nullptr;
  LORASCOPE_HIP_CHECK(hipStreamEndCapture(stream_, &graph));
  hipGraphExec_t exec = nullptr;
  const hipError_t error = hipGraphInstantiateWithFlags(&exec, graph, 0);
  if (error != hipSuccess) {
    (void)hipGraphDestroy(graph);
    LORASCOPE_HIP_CHECK(error);
  }
  return std::make_unique<HipCapturedOps>(deviceIndex_, stream_, graph, exec,
                                          std::move(capture->staging));
}

void HipBackend::abandonCapture() {
  if (capture_ == nullptr) {
    return;
  }
  runtime::launchControl().setCapturing(false);
  allocator_->endGraphCapture();
  capture_.reset();
  hipGraph_t graph = nullptr;
  // Ends the capture however it went (an invalidated capture returns an error and no graph).
  if (hipStreamEndCapture(stream_, &graph) == hipSuccess && graph != nullptr) {
    (void)hipGraphDestroy(graph);
  }
  (void)hipGetLastError();  // the failed capture's error is not the next launch's
}

void HipBackend::releaseCaptureMemory() {
  requireNotCapturing("releaseCaptureMemory");
  LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_));
  allocator_->releaseGraphPool();
}

void HipBackend::drawFromCapturePool(bool on) {
  requireNotCapturing("drawFromCapturePool");
  if (on) {
    poolLiveAtDraw_ = allocator_->graphPoolLiveBytes();
    allocator_->beginGraphCapture();
    return;
  }
  allocator_->endGraphCapture();
  // A block taken now and kept would sit where a captured step's idle block was, which its
  // replays write.
  const std::size_t live = allocator_->graphPoolLiveBytes();
  if (live > poolLiveAtDraw_) {
    throw std::logic_error("drawFromCapturePool: " + std::to_string(live - poolLiveAtDraw_) +
                           " bytes of the graph pool outlived the ops that drew them");
  }
}

}  // namespace lorascope::compute::hip

// hip/HipBackend.cpp — the GPU backend: device memory and transfers. The op launchers are in
// HipBackendOps*.cpp, one file per op family (see HipBackend.h).
#include "compute/hip/HipBackend.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <type_traits>

#include "compute/Bf16.h"
#include "compute/BuildInfo.h"
#include "compute/Errors.h"
#include "compute/Nf4.h"             // defines: nf4::quantize, nf4::dequantize
#include "compute/hip/HipCapture.h"  // defines: HipBackend::Capture, PinnedRanges
#include "compute/hip/HipCheck.h"    // defines: LORASCOPE_HIP_CHECK
#include "runtime/LaunchControl.h"

namespace lorascope::compute {
namespace hip {

bool isBf16Weight(const char* op, const Tensor& weight) {
  if (weight.dtype() == DType::F16) {
    throw ShapeError(std::string(op) + ": f16 weights are not supported on the GPU yet");
  }
  if (weight.dtype() == DType::NF4) {
    throw ShapeError(std::string(op) +
                     ": nf4 weights are read only by matmul (only the "
                     "projections are quantised)");
  }
  return weight.dtype() == DType::BF16;
}

// The copy goes on the backend's stream, so it is ordered before the kernels that read it.
Tensor uploadIndices(HipBackend& backend, std::span<const std::int32_t> values) {
  static_assert(sizeof(std::int32_t) == sizeof(float));
  Tensor t = backend.empty(DType::F32, {static_cast<std::int64_t>(values.size())});
  if (!values.empty()) {
    backend.copyHostToDeviceAsync(t.data(), values.data(), values.size_bytes());
  }
  return t;
}

// Pinned host buffers for downloadAsync, kept for the next download (pinning tens of MB takes
// milliseconds). Shared with the downloads in flight, so that a buffer outlives its backend when
// it must.
class PinnedHostPool {
 public:
  struct Buffer {
    void* data = nullptr;
    std::size_t bytes = 0;
  };
  PinnedHostPool() = default;
  PinnedHostPool(const PinnedHostPool&) = delete;
  PinnedHostPool& operator=(const PinnedHostPool&) = delete;
  ~PinnedHostPool() {
    for (const Buffer& b : free_) {
      (void)hipHostFree(b.data);
    }
  }
  Buffer take(std::size_t bytes) {
    {
      const std::lock_guard lock(mutex_);
      for (auto it = free_.begin(); it != free_.end(); ++it) {
        if (it->bytes >= bytes) {
          const Buffer b = *it;
          free_.erase(it);
          return b;
        }
      }
    }
    Buffer b{nullptr, bytes};
    LORASCOPE_HIP_CHECK(hipHostMalloc(&b.data, bytes, hipHostMallocDefault));
    return b;
  }
  void give(const Buffer& b) {
    const std::lock_guard lock(mutex_);
    if (free_.size() >= kKept) {
      (void)hipHostFree(b.data);
      return;
    }
    free_.push_back(b);
  }

 private:
  static constexpr std::size_t kKept = 2;  // one download in flight, one being read
  std::mutex mutex_;
  std::vector<Buffer> free_;
};

namespace {

struct EventDeleter {
  void operator()(std::remove_pointer_t<hipEvent_t>* event) const { (void)hipEventDestroy(event); }
};
using Event = std::unique_ptr<std::remove_pointer_t<hipEvent_t>, EventDeleter>;

Event createEvent() {
  hipEvent_t event = nullptr;
  LORASCOPE_HIP_CHECK(hipEventCreateWithFlags(&event, hipEventDisableTiming));
  return Event(event);
}

// HipBackend::downloadAsync's answer: the device copies, the pinned buffer their download lands
// in, and the event that says it has landed.
class HipPendingDownload final : public PendingDownload {
 public:
  HipPendingDownload(int device, std::vector<Tensor> copies, std::vector<std::size_t> counts,
                     std::shared_ptr<PinnedHostPool> pool, std::size_t bytes)
      : device_(device),
        copies_(std::move(copies)),
        counts_(std::move(counts)),
        pool_(std::move(pool)),
        buffer_(pool_->take(bytes)),
        landed_(createEvent()) {}
  HipPendingDownload(const HipPendingDownload&) = delete;
  HipPendingDownload& operator=(const HipPendingDownload&) = delete;
  ~HipPendingDownload() override {
    // Neither the device copies nor the buffer may be reused while the download still reads or
    // writes them.
    (void)hipSetDevice(device_);
    (void)hipEventSynchronize(landed_.get());
    copies_.clear();
    pool_->give(buffer_);
  }

  // The copies' download on `stream`, once `copied` (recorded after them) has passed.
  void start(hipStream_t stream, hipEvent_t copied) {
    LORASCOPE_HIP_CHECK(hipStreamWaitEvent(stream, copied, 0));
    std::size_t offset = 0;
    for (const Tensor& copy : copies_) {
      LORASCOPE_HIP_CHECK(hipMemcpyAsync(static_cast<std::byte*>(buffer_.data) + offset,
                                         copy.data(), copy.bytes(), hipMemcpyDeviceToHost, stream));
      offset += copy.bytes();
    }
    LORASCOPE_HIP_CHECK(hipEventRecord(landed_.get(), stream));
  }

  std::vector<std::span<const float>> wait() override {
    LORASCOPE_HIP_CHECK(hipSetDevice(device_));  // the caller may be another thread
    LORASCOPE_HIP_CHECK(hipEventSynchronize(landed_.get()));
    copies_.clear();  // downloaded: the device memory goes back to the allocator now
    std::vector<std::span<const float>> values;
    values.reserve(counts_.size());
    const float* p = static_cast<const float*>(buffer_.data);
    for (const std::size_t count : counts_) {
      values.emplace_back(p, count);
      p += count;
    }
    return values;
  }

 private:
  int device_;
  std::vector<Tensor> copies_;
  std::vector<std::size_t> counts_;
  std::shared_ptr<PinnedHostPool> pool_;
  PinnedHostPool::Buffer buffer_;
  Event landed_;
};

}  // namespace

HipBackend::HipBackend(int deviceIndex) : deviceIndex_(deviceIndex) {
  const GpuInventory inventory = queryGpuInventory();
  if (deviceIndex < 0 || deviceIndex >= static_cast<int>(inventory.devices.size())) {
    throw NoGpuError(inventory.devices.empty()
                         ? "no GPU: " + inventory.unavailableReason
                         : "no GPU with index " + std::to_string(deviceIndex) + " (found " +
                               std::to_string(inventory.devices.size()) + ")");
  }
  const GpuDeviceInfo& info = inventory.devices[static_cast<std::size_t>(deviceIndex)];
  caps_ = {Device::Gpu, DType::BF16, info.name + " (" + info.architecture + ")"};
  LORASCOPE_HIP_CHECK(hipSetDevice(deviceIndex_));
  LORASCOPE_HIP_CHECK(hipStreamCreateWithFlags(&stream_, hipStreamNonBlocking));
  pinned_ = std::make_shared<PinnedHostPool>();
  pinnedRanges_ = std::make_shared<PinnedRanges>();
  // The queue-depth chart's and the hang report's name for it.
  runtime::launchControl().queues().nameStream(reinterpret_cast<std::uintptr_t>(stream_),
                                               "compute");
  // Every tensor's memory comes from the caching allocator; blocks are reused in stream order.
  allocator_ = std::make_shared<memory::DeviceAllocator>(
      memory::createHipDeviceMemory(deviceIndex_), memory::AllocatorPolicy{},
      reinterpret_cast<std::uintptr_t>(stream_));
  if (vendorGemmAvailable()) {
    gemmImplementation_ = GemmImplementation::Vendor;
  }
}

HipBackend::~HipBackend() {
  abandonCapture();
  if (stream_ != nullptr) {
    (void)hipStreamSynchronize(stream_);
    runtime::launchControl().queues().forgetStream(reinterpret_cast<std::uintptr_t>(stream_));
    vendorBlas_.reset();  // the BLAS handle is bound to the stream: release it first
    (void)hipStreamDestroy(stream_);
  }
  if (downloadStream_ != nullptr) {
    (void)hipStreamSynchronize(downloadStream_);
    (void)hipStreamDestroy(downloadStream_);
  }
}

Tensor HipBackend::empty(DType dtype, const Shape& shape) {
  const std::size_t bytes = storageBytes(dtype, numelOf(shape));
  // Throws memory::OutOfMemoryError (recoverable) with the numbers when nothing fits. The owner
  // tag comes from the caller's memory::OwnerScope.
  const memory::Allocation block = allocator_->allocate(bytes, memory::OwnerScope::current());
  // The deleter keeps the allocator alive for tensors that outlive the backend.
  return Tensor(std::shared_ptr<void>(block.pointer(),
                                      [allocator = allocator_](void* q) {
                                        allocator->deallocate(reinterpret_cast<std::uintptr_t>(q));
                                      }),
                dtype, shape, Device::Gpu);
}

// Copies host bytes into a fresh tensor. A cached block may still be read by queued kernels on
// the stream; hipMemcpy runs on the null stream, which a non-blocking stream does not order
// against, so the stream is drained first. While capturing (the tensor is the graph pool's, and
// nothing may wait), a stream-ordered copy of a constant instead.
void HipBackend::copyHostToDevice(Tensor& t, const void* host, std::size_t bytes) {
  if (capturing()) {
    copyHostToDeviceAsync(t.data(), host, bytes);
    return;
  }
  LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_));
  LORASCOPE_HIP_CHECK(hipMemcpy(t.data(), host, bytes, hipMemcpyHostToDevice));
}

Tensor HipBackend::upload(std::span<const float> values, DType dtype, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != numelOf(shape)) {
    throw ShapeError("upload: " + std::to_string(values.size()) + " values for shape " +
                     shapeToString(shape));
  }
  if (dtype == DType::F16) {
    throw ShapeError("upload: f16 tensors are not supported on the GPU yet");
  }
  Tensor t = empty(dtype, shape);
  if (dtype == DType::NF4) {  // quantised on the host, where the load-time quantiser runs
    std::vector<std::byte> packed(t.bytes());
    nf4::quantize(values.data(), DType::F32, t.numel(), packed.data());
    copyHostToDevice(t, packed.data(), packed.size());
    return t;
  }
  if (dtype == DType::F32) {
    copyHostToDevice(t, values.data(), values.size_bytes());
  } else {
    std::vector<std::uint16_t> bits(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      bits[i] = floatToBf16(values[i]);
    }
    copyHostToDevice(t, bits.data(), bits.size() * sizeof(std::uint16_t));
  }
  return t;
}

Tensor HipBackend::uploadRaw(std::span<const std::byte> bytes, DType dtype, const Shape& shape) {
  checkUploadRawArgs(bytes.size(), dtype, shape);
  if (dtype == DType::F16) {
    throw ShapeError("uploadRaw: f16 tensors are not supported on the GPU yet (convert to bf16)");
  }
  Tensor t = empty(dtype, shape);
  copyHostToDevice(t, bytes.data(), bytes.size());
  return t;
}

std::vector<float> HipBackend::download(const Tensor& tensor) {
  requireNotCapturing("download");
  LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_));
  std::vector<float> out(static_cast<std::size_t>(tensor.numel()));
  if (tensor.dtype() == DType::F32) {
    LORASCOPE_HIP_CHECK(
        hipMemcpy(out.data(), tensor.data(), tensor.bytes(), hipMemcpyDeviceToHost));
  } else if (tensor.dtype() == DType::BF16) {
    std::vector<std::uint16_t> bits(out.size());
    LORASCOPE_HIP_CHECK(
        hipMemcpy(bits.data(), tensor.data(), tensor.bytes(), hipMemcpyDeviceToHost));
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = bf16ToFloat(bits[i]);
    }
  } else if (tensor.dtype() == DType::NF4) {  // the host's dequantiser, f32 as on the CPU
    std::vector<std::byte> packed(tensor.bytes());
    LORASCOPE_HIP_CHECK(
        hipMemcpy(packed.data(), tensor.data(), packed.size(), hipMemcpyDeviceToHost));
    nf4::dequantize(packed.data(), 0, tensor.numel(), out.data());
  } else {
    throw ShapeError("download: f16 tensors are not supported on the GPU yet");
  }
  return out;
}

// Two steps, so that the compute stream never waits for the bus: a device-to-device copy of each
// tensor in stream order (it holds the values the ops issued so far leave; later ops may change
// the originals at once), then the copies' download into one pinned buffer on the side stream,
// which waits for the copies through an event.
std::unique_ptr<PendingDownload> HipBackend::downloadAsync(std::span<const Tensor* const> tensors) {
  checkDownloadAsyncArgs(caps_, tensors);
  requireNotCapturing("downloadAsync");
  std::vector<Tensor> copies;
  std::vector<std::size_t> counts;
  std::size_t totalBytes = 0;
  for (const Tensor* t : tensors) {
    Tensor copy = empty(DType::F32, t->shape());
    LORASCOPE_HIP_CHECK(
        hipMemcpyAsync(copy.data(), t->data(), t->bytes(), hipMemcpyDeviceToDevice, stream_));
    counts.push_back(static_cast<std::size_t>(t->numel()));
    totalBytes += t->bytes();
    copies.push_back(std::move(copy));
  }
  if (downloadStream_ == nullptr) {
    LORASCOPE_HIP_CHECK(hipStreamCreateWithFlags(&downloadStream_, hipStreamNonBlocking));
  }
  const Event copied = createEvent();
  LORASCOPE_HIP_CHECK(hipEventRecord(copied.get(), stream_));
  auto pending =
      std::make_unique<HipPendingDownload>(deviceIndex_, std::move(copies), std::move(counts),
                                           pinned_, std::max<std::size_t>(totalBytes, 1));
  pending->start(downloadStream_, copied.get());
  return pending;
}

void HipBackend::synchronize() {
  requireNotCapturing("synchronize");
  LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_));
}

std::optional<DeviceMemoryUse> HipBackend::deviceMemoryUse() const {
  const memory::AllocatorStats stats = allocator_->stats();
  return DeviceMemoryUse{static_cast<std::uint64_t>(stats.allocatedBytes.current),
                         static_cast<std::uint64_t>(stats.reservedBytes.current)};
}

void HipBackend::releaseCachedMemory() {
  requireNotCapturing("releaseCachedMemory");
  // Freed blocks are reused in stream order, so kernels queued before their release may still
  // read them: drain the stream before the segments go back to the driver.
  LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_));
  allocator_->emptyCache();
}

}  // namespace hip

std::unique_ptr<Backend> createGpuBackend(int deviceIndex) {
  return std::make_unique<hip::HipBackend>(deviceIndex);
}

}  // namespace lorascope::compute

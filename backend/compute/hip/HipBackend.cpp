// hip/HipBackend.cpp — the GPU backend: device memory, transfers and the HIP op launchers.
// Activations are bf16 (fp32 accumulation inside kernels); frozen weights may be bf16 or f32.
#include <cstring>

#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/BuildInfo.h"
#include "compute/Errors.h"
#include "compute/hip/HipCheck.h"  // defines: LORASCOPE_HIP_CHECK
#include "compute/hip/rmsnorm.h"   // defines: hip::rmsnormForward, hip::rmsnormBackward

#include "memory/DeviceAllocator.h"  // defines: DeviceAllocator, OwnerScope, createHipDeviceMemory

namespace lorascope::compute {
namespace {

bool isBf16Weight(const char* op, const Tensor& weight) {
  if (weight.dtype() == DType::F16) {
    throw ShapeError(std::string(op) + ": f16 weights are not supported on the GPU yet");
  }
  return weight.dtype() == DType::BF16;
}

// The model-graph ops have CPU implementations only so far; their GPU kernels come with the GPU
// trainer. Every such override throws through here, so the message and type stay uniform.
[[noreturn]] void throwNoGpuKernelYet(const char* op) {
  throw UnsupportedOpError(std::string(op) +
                           " has no GPU kernel yet; run this step on the CPU backend");
}

class HipBackend final : public Backend {
 public:
  explicit HipBackend(int deviceIndex) : deviceIndex_(deviceIndex) {
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
    // Every tensor's memory comes from the caching allocator; blocks are reused in stream order.
    allocator_ = std::make_shared<memory::DeviceAllocator>(
        memory::createHipDeviceMemory(deviceIndex_), memory::AllocatorPolicy{},
        reinterpret_cast<std::uintptr_t>(stream_));
  }

  ~HipBackend() override {
    if (stream_ != nullptr) {
      (void)hipStreamSynchronize(stream_);
      (void)hipStreamDestroy(stream_);
    }
  }

  const BackendCapabilities& capabilities() const override { return caps_; }

  Tensor empty(DType dtype, const Shape& shape) override {
    const std::size_t bytes = static_cast<std::size_t>(numelOf(shape)) * dtypeBytes(dtype);
    // Throws memory::OutOfMemoryError (recoverable) with the numbers when nothing fits. The owner
    // tag comes from the caller's memory::OwnerScope.
    const memory::Allocation block = allocator_->allocate(bytes, memory::OwnerScope::current());
    // The deleter keeps the allocator alive for tensors that outlive the backend.
    return Tensor(
        std::shared_ptr<void>(block.pointer(),
                              [allocator = allocator_](void* q) {
                                allocator->deallocate(reinterpret_cast<std::uintptr_t>(q));
                              }),
        dtype, shape, Device::Gpu);
  }

  Tensor upload(std::span<const float> values, DType dtype, const Shape& shape) override {
    if (static_cast<std::int64_t>(values.size()) != numelOf(shape)) {
      throw ShapeError("upload: " + std::to_string(values.size()) + " values for shape " +
                       shapeToString(shape));
    }
    Tensor t = empty(dtype, shape);
    // A cached block may still be read by queued kernels on stream_; hipMemcpy runs on the null
    // stream, which a non-blocking stream does not order against, so drain stream_ first.
    LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_));
    if (dtype == DType::F32) {
      LORASCOPE_HIP_CHECK(
          hipMemcpy(t.data(), values.data(), values.size_bytes(), hipMemcpyHostToDevice));
    } else if (dtype == DType::BF16) {
      std::vector<std::uint16_t> bits(values.size());
      for (std::size_t i = 0; i < values.size(); ++i) {
        bits[i] = floatToBf16(values[i]);
      }
      LORASCOPE_HIP_CHECK(hipMemcpy(t.data(), bits.data(), bits.size() * sizeof(std::uint16_t),
                                    hipMemcpyHostToDevice));
    } else {
      throw ShapeError("upload: f16 tensors are not supported on the GPU yet");
    }
    return t;
  }

  std::vector<float> download(const Tensor& tensor) override {
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
    } else {
      throw ShapeError("download: f16 tensors are not supported on the GPU yet");
    }
    return out;
  }

  void synchronize() override { LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_)); }

  void rmsnormForward(const Tensor& x, const Tensor& weight, float eps, Tensor& y,
                      Tensor& rstd) override {
    checkRmsnormForwardArgs(caps_, x, weight, y, rstd);
    hip::rmsnormForward(x.as<std::uint16_t>(), weight.data(),
                        isBf16Weight("rmsnorm_forward", weight), eps, x.dim(0), x.dim(1),
                        y.as<std::uint16_t>(), rstd.as<float>(), stream_);
  }

  void rmsnormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                       Tensor& dx) override {
    checkRmsnormBackwardArgs(caps_, dy, x, weight, rstd, dx);
    hip::rmsnormBackward(dy.as<std::uint16_t>(), x.as<std::uint16_t>(), weight.data(),
                         isBf16Weight("rmsnorm_backward", weight), rstd.as<float>(), x.dim(0),
                         x.dim(1), dx.as<std::uint16_t>(), stream_);
  }

  void matmul(const Tensor&, bool, const Tensor&, bool, Tensor&, float, float) override {
    throwNoGpuKernelYet("matmul");
  }
  void embeddingForward(const Tensor&, std::span<const std::int32_t>, Tensor&) override {
    throwNoGpuKernelYet("embedding_forward");
  }
  void rope(Tensor&, std::span<const std::int32_t>, const Tensor&, bool) override {
    throwNoGpuKernelYet("rope");
  }
  void attentionForward(const Tensor&, const Tensor&, const Tensor&, float, Tensor&,
                        Tensor&) override {
    throwNoGpuKernelYet("attention_forward");
  }
  void swigluForward(const Tensor&, const Tensor&, Tensor&) override {
    throwNoGpuKernelYet("swiglu_forward");
  }
  void addInPlace(Tensor&, const Tensor&) override { throwNoGpuKernelYet("add"); }
  void addBias(Tensor&, const Tensor&) override { throwNoGpuKernelYet("add_bias"); }
  void crossEntropyForward(const Tensor&, std::span<const std::int32_t>, Tensor&,
                           Tensor&) override {
    throwNoGpuKernelYet("cross_entropy_forward");
  }
  void attentionBackward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                         const Tensor&, float, Tensor&, Tensor&, Tensor&) override {
    throwNoGpuKernelYet("attention_backward");
  }
  void swigluBackward(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&) override {
    throwNoGpuKernelYet("swiglu_backward");
  }
  void multiplyInPlace(Tensor&, const Tensor&) override { throwNoGpuKernelYet("multiply"); }
  void lmHeadCrossEntropy(const Tensor&, const Tensor&, std::span<const std::int32_t>, float,
                          Tensor&, Tensor&) override {
    throwNoGpuKernelYet("lm_head_cross_entropy");
  }

 private:
  int deviceIndex_;
  hipStream_t stream_ = nullptr;
  std::shared_ptr<memory::DeviceAllocator> allocator_;
  BackendCapabilities caps_;
};

}  // namespace

std::unique_ptr<Backend> createGpuBackend(int deviceIndex) {
  return std::make_unique<HipBackend>(deviceIndex);
}

}  // namespace lorascope::compute

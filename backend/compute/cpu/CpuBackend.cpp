// cpu/CpuBackend.cpp — the fp32 CPU backend: host memory, and each op's fp32 implementation.
#include <cstdlib>
#include <cstring>
#include <new>

#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/Errors.h"
#include "compute/cpu/rmsnorm.h"

namespace lorascope::compute {
namespace {

constexpr std::size_t kHostAlignmentBytes = 64;  // one cache line; what AVX-512 loads prefer

// Frozen weights may be stored in bf16/f16; CPU math is fp32, so such a weight is widened here.
std::vector<float> widenToFloat(const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  if (t.dtype() == DType::F32) {
    std::memcpy(out.data(), t.data(), t.bytes());
  } else if (t.dtype() == DType::BF16) {
    const auto* bits = t.as<std::uint16_t>();
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i] = bf16ToFloat(bits[i]);
    }
  } else {
    throw ShapeError("cpu backend: " + t.describe() + " cannot be widened (f16 not yet supported)");
  }
  return out;
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() { caps_ = {Device::Cpu, DType::F32, "cpu (fp32)"}; }

  const BackendCapabilities& capabilities() const override { return caps_; }

  Tensor empty(DType dtype, const Shape& shape) override {
    const std::size_t bytes = static_cast<std::size_t>(numelOf(shape)) * dtypeBytes(dtype);
    const std::size_t rounded =
        (bytes + kHostAlignmentBytes - 1) / kHostAlignmentBytes * kHostAlignmentBytes;
    void* p = std::aligned_alloc(kHostAlignmentBytes, rounded == 0 ? kHostAlignmentBytes : rounded);
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    return Tensor(std::shared_ptr<void>(p, std::free), dtype, shape, Device::Cpu);
  }

  Tensor upload(std::span<const float> values, DType dtype, const Shape& shape) override {
    if (static_cast<std::int64_t>(values.size()) != numelOf(shape)) {
      throw ShapeError("upload: " + std::to_string(values.size()) + " values for shape " +
                       shapeToString(shape));
    }
    Tensor t = empty(dtype, shape);
    if (dtype == DType::F32) {
      std::memcpy(t.data(), values.data(), values.size_bytes());
    } else if (dtype == DType::BF16) {
      auto* bits = t.as<std::uint16_t>();
      for (std::size_t i = 0; i < values.size(); ++i) {
        bits[i] = floatToBf16(values[i]);
      }
    } else {
      throw ShapeError("upload: f16 tensors are not supported on the cpu backend");
    }
    return t;
  }

  std::vector<float> download(const Tensor& tensor) override { return widenToFloat(tensor); }

  void synchronize() override {}

  void rmsnormForward(const Tensor& x, const Tensor& weight, float eps, Tensor& y,
                      Tensor& rstd) override {
    checkRmsnormForwardArgs(caps_, x, weight, y, rstd);
    const std::vector<float> w = widenToFloat(weight);
    cpu::rmsnormForward(x.as<float>(), w.data(), eps, x.dim(0), x.dim(1), y.as<float>(),
                        rstd.as<float>());
  }

  void rmsnormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                       Tensor& dx) override {
    checkRmsnormBackwardArgs(caps_, dy, x, weight, rstd, dx);
    const std::vector<float> w = widenToFloat(weight);
    cpu::rmsnormBackward(dy.as<float>(), x.as<float>(), w.data(), rstd.as<float>(), x.dim(0),
                         x.dim(1), dx.as<float>());
  }

 private:
  BackendCapabilities caps_;
};

}  // namespace

std::unique_ptr<Backend> createCpuBackend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace lorascope::compute

// Backend.h — the compute interface: one method per op, a CPU and a HIP implementation of each.
//
// The CPU backend (cpu/) is the fp32 reference and the fallback; the HIP backend (hip/) keeps
// activations in bf16 with fp32 accumulation. tests/parity checks every HIP op against its CPU
// twin. Ops check their arguments' shapes and dtypes and throw ShapeError naming the op.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "compute/Tensor.h"

namespace lorascope::compute {

// What a backend is and can do; a plain struct so the UI and the engine can report it.
struct BackendCapabilities {
  Device device = Device::Cpu;
  DType activationDType = DType::F32;  // dtype of activations and their gradients
  std::string name;                    // "cpu (OpenBLAS)", "NVIDIA H100 80GB HBM3 (sm_90)", ...
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual const BackendCapabilities& capabilities() const = 0;

  // Memory. Contents of `empty` are unspecified.
  virtual Tensor empty(DType dtype, const Shape& shape) = 0;
  // Copies host floats to a new tensor of `dtype`, rounding to nearest even for 16-bit types.
  virtual Tensor upload(std::span<const float> values, DType dtype, const Shape& shape) = 0;
  // Returns the tensor's values as floats (waits for pending work on it).
  virtual std::vector<float> download(const Tensor& tensor) = 0;
  // Waits until every op issued so far has finished.
  virtual void synchronize() = 0;

  // RMSNorm over the last axis (Llama/Qwen2): y = x * rstd * weight, rstd = 1/sqrt(mean(x²)+eps).
  //   x      (rows, dim)  activation dtype
  //   weight (dim)        any dtype (frozen model weight)
  //   y      (rows, dim)  activation dtype
  //   rstd   (rows)       f32, saved for the backward pass
  virtual void rmsnormForward(const Tensor& x, const Tensor& weight, float eps, Tensor& y,
                              Tensor& rstd) = 0;
  // Input gradient of RMSNorm; the weight is frozen, so no weight gradient is computed.
  //   dy (rows, dim), x (rows, dim), weight (dim), rstd (rows) f32  ->  dx (rows, dim)
  virtual void rmsnormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                               const Tensor& rstd, Tensor& dx) = 0;
};

std::unique_ptr<Backend> createCpuBackend();
// Throws NoGpuError when this build has no GPU backend or no usable device is present.
std::unique_ptr<Backend> createGpuBackend(int deviceIndex = 0);

// Shared argument checks of the RMSNorm pair, so both backends reject the same inputs.
void checkRmsnormForwardArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& weight,
                             const Tensor& y, const Tensor& rstd);
void checkRmsnormBackwardArgs(const BackendCapabilities& caps, const Tensor& dy, const Tensor& x,
                              const Tensor& weight, const Tensor& rstd, const Tensor& dx);

}  // namespace lorascope::compute

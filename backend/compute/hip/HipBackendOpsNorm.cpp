// hip/HipBackendOpsNorm.cpp — launchers of the normalisation ops (RMSNorm forward/backward).
#include "compute/hip/HipBackend.h"
#include "compute/hip/rmsnorm.h"  // defines: rmsnormForward, rmsnormBackward

namespace lorascope::compute::hip {

void HipBackend::rmsnormForward(const Tensor& x, const Tensor& weight, float eps, Tensor& y,
                                Tensor& rstd) {
  checkRmsnormForwardArgs(caps_, x, weight, y, rstd);
  hip::rmsnormForward(x.as<std::uint16_t>(), weight.data(), isBf16Weight("rmsnorm_forward", weight),
                      eps, x.dim(0), x.dim(1), y.base<std::uint16_t>(), y.ld(), rstd.as<float>(),
                      stream_);
}

void HipBackend::rmsnormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                 const Tensor& rstd, Tensor& dx, bool accumulate) {
  checkRmsnormBackwardArgs(caps_, dy, x, weight, rstd, dx);
  hip::rmsnormBackward(dy.as<std::uint16_t>(), x.as<std::uint16_t>(), weight.data(),
                       isBf16Weight("rmsnorm_backward", weight), rstd.as<float>(), x.dim(0),
                       x.dim(1), dx.as<std::uint16_t>(), accumulate, stream_);
}

}  // namespace lorascope::compute::hip

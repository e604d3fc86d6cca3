// hip/HipBackendOpsAttention.cpp — launchers of causal GQA attention (forward/backward) and the
// fused lm-head + cross-entropy.
#include "compute/Errors.h"
#include "compute/hip/HipBackend.h"

namespace lorascope::compute::hip {
namespace {

[[noreturn]] void throwNoGpuKernelYet(const char* op) {
  throw UnsupportedOpError(std::string(op) +
                           " has no GPU kernel yet; run this step on the CPU backend");
}

}  // namespace

void HipBackend::attentionForward(const Tensor&, const Tensor&, const Tensor&, float, Tensor&,
                                  Tensor&) {
  throwNoGpuKernelYet("attention_forward");
}
void HipBackend::attentionBackward(const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                                   const Tensor&, const Tensor&, float, Tensor&, Tensor&, Tensor&) {
  throwNoGpuKernelYet("attention_backward");
}
void HipBackend::lmHeadCrossEntropy(const Tensor&, const Tensor&, std::span<const std::int32_t>,
                                    float, Tensor&, Tensor&) {
  throwNoGpuKernelYet("lm_head_cross_entropy");
}

}  // namespace lorascope::compute::hip

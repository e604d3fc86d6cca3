// hip/HipBackendOpsElementwise.cpp — launchers of the gather, rotary, activation, add and
// cross-entropy ops.
#include "compute/Errors.h"
#include "compute/hip/HipBackend.h"

namespace lorascope::compute::hip {
namespace {

[[noreturn]] void throwNoGpuKernelYet(const char* op) {
  throw UnsupportedOpError(std::string(op) +
                           " has no GPU kernel yet; run this step on the CPU backend");
}

}  // namespace

void HipBackend::embeddingForward(const Tensor&, std::span<const std::int32_t>, Tensor&) {
  throwNoGpuKernelYet("embedding_forward");
}
void HipBackend::rope(Tensor&, std::span<const std::int32_t>, const Tensor&, bool) {
  throwNoGpuKernelYet("rope");
}
void HipBackend::swigluForward(const Tensor&, const Tensor&, Tensor&) {
  throwNoGpuKernelYet("swiglu_forward");
}
void HipBackend::swigluBackward(const Tensor&, const Tensor&, const Tensor&, Tensor&, Tensor&) {
  throwNoGpuKernelYet("swiglu_backward");
}
void HipBackend::addInPlace(Tensor&, const Tensor&) {
  throwNoGpuKernelYet("add");
}
void HipBackend::addBias(Tensor&, const Tensor&) {
  throwNoGpuKernelYet("add_bias");
}
void HipBackend::multiplyInPlace(Tensor&, const Tensor&) {
  throwNoGpuKernelYet("multiply");
}
void HipBackend::crossEntropyForward(const Tensor&, std::span<const std::int32_t>, Tensor&,
                                     Tensor&) {
  throwNoGpuKernelYet("cross_entropy_forward");
}

}  // namespace lorascope::compute::hip

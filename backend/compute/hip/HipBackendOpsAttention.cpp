// hip/HipBackendOpsAttention.cpp — launchers of causal GQA attention (forward/backward) and the
// fused lm-head + cross-entropy. Scratch comes from the backend's allocator and is returned to it
// when the launcher returns; the allocator reuses blocks in stream order, so the kernels queued
// here still own the memory until they have run.
#include <string>

#include "compute/Errors.h"
#include "compute/hip/HipBackend.h"
#include "compute/hip/attention.h"  // defines: attentionForward, attentionBackward

namespace lorascope::compute::hip {
namespace {

// The kernels hold a row's head dim in registers; larger heads than they are built for are
// rejected here rather than computed wrongly.
AttentionShape attentionShape(const char* op, const Tensor& q, const Tensor& k) {
  const AttentionShape shape{q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3)};
  if (shape.headDim < 1 || shape.headDim > kMaxAttentionHeadDim) {
    throw ShapeError(std::string(op) + ": head_dim " + std::to_string(shape.headDim) +
                     " is not supported by the GPU kernels (1 to " +
                     std::to_string(kMaxAttentionHeadDim) + "); run attention on the CPU backend");
  }
  return shape;
}

}  // namespace

void HipBackend::attentionForward(const Tensor& q, const Tensor& k, const Tensor& v, float scale,
                                  Tensor& out, Tensor& logsumexp) {
  checkAttentionArgs(caps_, q, k, v, out, logsumexp);
  hip::attentionForward(q.as<std::uint16_t>(), k.as<std::uint16_t>(), v.as<std::uint16_t>(),
                        attentionShape("attention_forward", q, k), scale, out.as<std::uint16_t>(),
                        logsumexp.as<float>(), stream_);
}

void HipBackend::attentionBackward(const Tensor& dout, const Tensor& q, const Tensor& k,
                                   const Tensor& v, const Tensor& out, const Tensor& logsumexp,
                                   float scale, Tensor& dq, Tensor& dk, Tensor& dv) {
  checkAttentionBackwardArgs(caps_, dout, q, k, v, out, logsumexp, dq, dk, dv);
  const AttentionShape shape = attentionShape("attention_backward", q, k);
  // Per-query-head dk/dv partials, summed over each KV group by the last kernel (no atomics).
  Tensor rowDot = empty(DType::F32, logsumexp.shape());
  Tensor dkPartial = empty(DType::F32, q.shape());
  Tensor dvPartial = empty(DType::F32, q.shape());
  hip::attentionBackward(
      dout.as<std::uint16_t>(), q.as<std::uint16_t>(), k.as<std::uint16_t>(), v.as<std::uint16_t>(),
      out.as<std::uint16_t>(), logsumexp.as<float>(), shape, scale,
      {rowDot.as<float>(), dkPartial.as<float>(), dvPartial.as<float>()}, dq.as<std::uint16_t>(),
      dk.as<std::uint16_t>(), dv.as<std::uint16_t>(), stream_);
}

void HipBackend::lmHeadCrossEntropy(const Tensor&, const Tensor&, std::span<const std::int32_t>,
                                    float, Tensor&, Tensor&) {
  throw UnsupportedOpError(
      "lm_head_cross_entropy has no GPU kernel yet; run this step on the CPU backend");
}

}  // namespace lorascope::compute::hip

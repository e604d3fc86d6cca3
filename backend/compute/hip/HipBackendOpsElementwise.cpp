// hip/HipBackendOpsElementwise.cpp — launchers of the gather, rotary, activation, add and
// cross-entropy ops (kernels in hip/elementwise.hip).
#include <string>
#include <vector>

#include "compute/Errors.h"
#include "compute/hip/HipBackend.h"
#include "compute/hip/elementwise.h"  // defines: the kernel launchers

namespace lorascope::compute::hip {
namespace {

const std::int32_t* indices(const Tensor& t) {
  return t.as<std::int32_t>();
}

}  // namespace

void HipBackend::embeddingForward(const Tensor& table, std::span<const std::int32_t> ids,
                                  Tensor& out) {
  checkEmbeddingArgs(caps_, table, ids.size(), out);
  const bool tableIsBf16 = isBf16Weight("embedding_forward", table);
  const std::int64_t vocab = table.dim(0);
  for (std::size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= vocab) {
      throw ShapeError("embedding_forward: token id " + std::to_string(ids[t]) + " at position " +
                       std::to_string(t) + " is outside the vocabulary [0, " +
                       std::to_string(vocab) + ")");
    }
  }
  const Tensor deviceIds = uploadIndices(*this, ids);
  hip::embeddingForward(table.data(), tableIsBf16, table.dim(1), indices(deviceIds),
                        static_cast<std::int64_t>(ids.size()), out.as<std::uint16_t>(), stream_);
}

void HipBackend::rope(Tensor& x, std::span<const std::int32_t> positions, const Tensor& invFreq,
                      bool inverse) {
  checkRopeArgs(caps_, x, positions.size(), invFreq);
  const Tensor devicePositions = uploadIndices(*this, positions);
  hip::rope(x.as<std::uint16_t>(), x.dim(0), x.dim(1), x.dim(2), indices(devicePositions),
            invFreq.as<float>(), inverse, stream_);
}

void HipBackend::ropeBackwardStacked(Tensor& dq, Tensor& dk, const Tensor& dv,
                                     std::span<const std::int32_t> positions, const Tensor& invFreq,
                                     Tensor& dqkv) {
  checkRopeBackwardStackedArgs(caps_, dq, dk, dv, positions.size(), invFreq, dqkv);
  const Tensor devicePositions = uploadIndices(*this, positions);
  hip::ropeBackwardStacked(dq.as<std::uint16_t>(), dk.as<std::uint16_t>(), dv.as<std::uint16_t>(),
                           dq.dim(0), dq.dim(1), dk.dim(1), dq.dim(2), indices(devicePositions),
                           invFreq.as<float>(), dqkv.base<std::uint16_t>(), dqkv.ld(), stream_);
}

void HipBackend::swigluForward(const Tensor& gate, const Tensor& up, Tensor& out) {
  checkSwigluArgs(caps_, gate, up, out);
  hip::swigluForward(gate.as<std::uint16_t>(), up.as<std::uint16_t>(), gate.numel(),
                     out.as<std::uint16_t>(), stream_);
}

void HipBackend::swigluBackward(const Tensor& dout, const Tensor& gate, const Tensor& up,
                                Tensor& dgate, Tensor& dup) {
  checkSwigluBackwardArgs(caps_, dout, gate, up, dgate, dup);
  hip::swigluBackward(dout.as<std::uint16_t>(), gate.as<std::uint16_t>(), up.as<std::uint16_t>(),
                      gate.numel(), dgate.as<std::uint16_t>(), dup.as<std::uint16_t>(), stream_);
}

void HipBackend::swigluBackwardStacked(const Tensor& dout, const Tensor& gate, const Tensor& up,
                                       Tensor& dGateUp) {
  checkSwigluBackwardStackedArgs(caps_, dout, gate, up, dGateUp);
  hip::swigluBackwardStacked(dout.as<std::uint16_t>(), gate.as<std::uint16_t>(),
                             up.as<std::uint16_t>(), gate.dim(0), gate.dim(1),
                             dGateUp.base<std::uint16_t>(), dGateUp.ld(), stream_);
}

void HipBackend::gegluForward(const Tensor& gate, const Tensor& up, Tensor& out) {
  checkSwigluArgs(caps_, gate, up, out);
  hip::gegluForward(gate.as<std::uint16_t>(), up.as<std::uint16_t>(), gate.numel(),
                    out.as<std::uint16_t>(), stream_);
}

void HipBackend::gegluBackward(const Tensor& dout, const Tensor& gate, const Tensor& up,
                               Tensor& dgate, Tensor& dup) {
  checkSwigluBackwardArgs(caps_, dout, gate, up, dgate, dup);
  hip::gegluBackward(dout.as<std::uint16_t>(), gate.as<std::uint16_t>(), up.as<std::uint16_t>(),
                     gate.numel(), dgate.as<std::uint16_t>(), dup.as<std::uint16_t>(), stream_);
}

void HipBackend::scaleActivations(Tensor& x, float factor) {
  checkActivationArgs("scale", caps_, x);
  hip::scaleInPlace(x.as<std::uint16_t>(), x.numel(), factor, stream_);
}

void HipBackend::softcapInPlace(Tensor& x, float cap) {
  checkActivationArgs("softcap", caps_, x);
  hip::softcapInPlace(x.as<std::uint16_t>(), x.numel(), cap, stream_);
}

void HipBackend::addInPlace(Tensor& x, const Tensor& y) {
  checkAddArgs(caps_, x, y);
  hip::addInPlace(x.as<std::uint16_t>(), y.as<std::uint16_t>(), x.numel(), stream_);
}

void HipBackend::addBias(Tensor& x, const Tensor& bias) {
  checkAddBiasArgs(caps_, x, bias);
  hip::addBias(x.as<std::uint16_t>(), bias.data(), isBf16Weight("add_bias", bias), x.dim(0),
               x.dim(1), stream_);
}

void HipBackend::multiplyInPlace(Tensor& x, const Tensor& y) {
  checkMultiplyArgs(caps_, x, y);
  hip::multiplyInPlace(x.as<std::uint16_t>(), y.as<std::uint16_t>(), x.numel(), stream_);
}

void HipBackend::stackColumns(std::span<const Tensor* const> parts, Tensor& dst) {
  checkStackColumnsArgs(parts, dst);
  requireDType("stack_columns", "dst", dst, DType::BF16);
  std::int64_t first = 0;
  for (const Tensor* part : parts) {
    hip::copyColumns(part->as<std::uint16_t>(), part->dim(0), part->dim(1), part->dim(1),
                     dst.base<std::uint16_t>() + first, dst.ld(), stream_);
    first += part->dim(1);
  }
}

void HipBackend::copyMatrices(std::span<const MatrixCopy> copies) {
  std::vector<hip::MatrixCopyJob> jobs;
  jobs.reserve(copies.size());
  for (const MatrixCopy& c : copies) {
    checkMatrixCopy(caps_, c);
    requireDType("copy_matrices", "src", *c.src, DType::BF16);
    jobs.push_back({c.src->base<std::uint16_t>(), c.src->ld(), c.dst->base<std::uint16_t>(),
                    c.dst->ld(), c.dst->dim(0), c.dst->dim(1), c.transpose, c.scale});
  }
  hip::copyMatrices(jobs.data(), jobs.size(), stream_);
}

void HipBackend::crossEntropyForward(const Tensor& logits, std::span<const std::int32_t> targets,
                                     Tensor& losses, Tensor& logsumexp) {
  checkCrossEntropyArgs(caps_, logits, targets.size(), losses, logsumexp);
  const std::int64_t vocab = logits.dim(1);
  checkTargetIds("cross_entropy_forward", targets, vocab);
  const Tensor deviceTargets = uploadIndices(*this, targets);
  hip::crossEntropyForward(logits.as<std::uint16_t>(), logits.dim(0), vocab, indices(deviceTargets),
                           kIgnoreTarget, losses.as<float>(), logsumexp.as<float>(), stream_);
}

}  // namespace lorascope::compute::hip

// StepOps.cpp — the graph-mode step ops (Backend.h, "Steps without host reads"): their argument
// checks and the host-memory defaults the CPU backend runs. hip/HipBackendOpsStep.cpp has the
// GPU's.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "compute/Backend.h"
#include "compute/Errors.h"
#include "compute/HostOptimizer.h"  // defines: host::adamw, host::scale, host::dropoutMask

namespace lorascope::compute {
namespace {

void requireF32Words(const char* op, const char* what, const BackendCapabilities& caps,
                     const Tensor& t, std::int64_t words) {
  if (!t.defined() || t.device() != caps.device || t.dtype() != DType::F32 || t.numel() != words) {
    throw ShapeError(std::string(op) + ": " + what + " must be " + std::to_string(words) +
                     " f32 words on " + deviceName(caps.device) + ", got " +
                     (t.defined() ? t.describe() : std::string("nothing")));
  }
}

StepScalars scalarsOf(const Tensor& scalars) {
  StepScalars s;
  std::memcpy(&s, scalars.data(), sizeof s);
  return s;
}

StepSums sumsOf(const Tensor& sums) {
  StepSums s;
  std::memcpy(&s, sums.data(), sizeof s);
  return s;
}

void store(const StepSums& s, Tensor& sums) {
  std::memcpy(sums.data(), &s, sizeof s);
}

}  // namespace

void checkStepScalarsArgs(const char* op, const BackendCapabilities& caps, const Tensor& scalars) {
  requireF32Words(op, "scalars", caps, scalars, kStepScalarsWords);
}

void checkStepSumsArgs(const char* op, const BackendCapabilities& caps, const Tensor& sums) {
  requireF32Words(op, "sums", caps, sums, kStepSumsWords);
}

void checkCopyArgs(const char* op, const BackendCapabilities& caps, const Tensor& tensor,
                   std::size_t bytes) {
  if (!tensor.defined() || tensor.device() != caps.device) {
    throw ShapeError(std::string(op) + ": the tensor must be on " + deviceName(caps.device));
  }
  if (tensor.bytes() != bytes) {
    throw ShapeError(std::string(op) + ": " + std::to_string(bytes) + " host bytes for " +
                     tensor.describe() + " (" + std::to_string(tensor.bytes()) + " bytes)");
  }
}

void Backend::copyIn(std::span<const std::byte> host, Tensor& dst) {
  checkCopyArgs("copy_in", capabilities(), dst, host.size());
  std::memcpy(dst.data(), host.data(), host.size());
}

void checkStackColumnsArgs(std::span<const Tensor* const> parts, const Tensor& dst) {
  std::int64_t columns = 0;
  for (const Tensor* part : parts) {
    if (part->rank() != 2 || dst.rank() != 2 || part->dim(0) != dst.dim(0) ||
        part->dtype() != dst.dtype()) {
      throw ShapeError("stack_columns: part " + part->describe() + " does not stack into " +
                       dst.describe());
    }
    columns += part->dim(1);
  }
  if (columns != dst.dim(1)) {
    throw ShapeError("stack_columns: the parts have " + std::to_string(columns) +
                     " columns but the result " + dst.describe());
  }
}

void Backend::stackColumns(std::span<const Tensor* const> parts, Tensor& dst) {
  checkStackColumnsArgs(parts, dst);
  const std::size_t rowBytes = static_cast<std::size_t>(dst.ld()) * dtypeBytes(dst.dtype());
  std::size_t offset = 0;
  for (const Tensor* part : parts) {
    const std::size_t partRow =
        part->bytes() / static_cast<std::size_t>(std::max<std::int64_t>(part->dim(0), 1));
    for (std::int64_t r = 0; r < part->dim(0); ++r) {
      std::memcpy(
          dst.base<std::byte>() + static_cast<std::size_t>(r) * rowBytes + offset,
          static_cast<const std::byte*>(part->data()) + static_cast<std::size_t>(r) * partRow,
          partRow);
    }
    offset += partRow;
  }
}

void Backend::ropeBackwardStacked(Tensor& dq, Tensor& dk, const Tensor& dv,
                                  std::span<const std::int32_t> positions, const Tensor& invFreq,
                                  Tensor& dqkv) {
  checkRopeBackwardStackedArgs(capabilities(), dq, dk, dv, positions.size(), invFreq, dqkv);
  rope(dq, positions, invFreq, true);
  rope(dk, positions, invFreq, true);
  const std::int64_t tokens = dq.dim(0);
  const Tensor q = dq.viewAs({tokens, dq.dim(1) * dq.dim(2)});
  const Tensor k = dk.viewAs({tokens, dk.dim(1) * dk.dim(2)});
  const Tensor v = dv.viewAs({tokens, dv.dim(1) * dv.dim(2)});
  stackColumns(std::array<const Tensor*, 3>{&q, &k, &v}, dqkv);
}

void Backend::swigluBackwardStacked(const Tensor& dout, const Tensor& gate, const Tensor& up,
                                    Tensor& dGateUp) {
  checkSwigluBackwardStackedArgs(capabilities(), dout, gate, up, dGateUp);
  Tensor dgate = empty(gate.dtype(), gate.shape());
  Tensor dup = empty(gate.dtype(), gate.shape());
  swigluBackward(dout, gate, up, dgate, dup);
  stackColumns(std::array<const Tensor*, 2>{&dgate, &dup}, dGateUp);
}

void Backend::copyOut(const Tensor& src, std::span<std::byte> host) {
  checkCopyArgs("copy_out", capabilities(), src, host.size());
  std::memcpy(host.data(), src.data(), host.size());
}

std::shared_ptr<std::byte[]> Backend::pinnedHost(std::size_t bytes) {
  return std::shared_ptr<std::byte[]>(new std::byte[bytes]());
}

void Backend::accumulateLoss(const Tensor& losses, Tensor& sums) {
  checkStepSumsArgs("accumulate_loss", capabilities(), sums);
  if (losses.device() != capabilities().device || losses.dtype() != DType::F32) {
    throw ShapeError("accumulate_loss: losses is " + losses.describe() + ", expected f32");
  }
  StepSums s = sumsOf(sums);
  const float* values = losses.as<float>();
  for (std::int64_t i = 0; i < losses.numel(); ++i) {
    s.lossSum += values[i];
  }
  store(s, sums);
}

void Backend::clipScaledGradients(std::span<Tensor* const> grads, const Tensor& scalars,
                                  Tensor& sums) {
  checkTensorListArgs("clip_scaled_gradients", capabilities(), grads);
  checkStepScalarsArgs("clip_scaled_gradients", capabilities(), scalars);
  checkStepSumsArgs("clip_scaled_gradients", capabilities(), sums);
  const StepScalars sc = scalarsOf(scalars);
  StepSums s = sumsOf(sums);
  s.gradSquares = 0.0;
  for (const Tensor* g : grads) {
    s.gradSquares = host::addSumOfSquares(g->as<float>(), g->numel(), s.gradSquares);
  }
  const double norm = std::sqrt(s.gradSquares);
  s.finite = std::isfinite(s.lossSum) && std::isfinite(norm) ? 1.0 : 0.0;
  if (sc.maxGradNorm > 0.0) {
    const double coefficient = sc.maxGradNorm / (norm + 1e-6);
    if (coefficient < 1.0) {
      for (Tensor* g : grads) {
        host::scale(g->as<float>(), g->numel(), static_cast<float>(coefficient));
      }
    }
  }
  store(s, sums);
}

void Backend::lmHeadCrossEntropyAt(const Tensor& h, const Tensor& weight,
                                   std::span<const std::int32_t> targets, LmHeadRows passRows,
                                   const Tensor& scalars, Tensor& losses, Tensor& dh,
                                   float logitSoftcap) {
  checkStepScalarsArgs("lm_head_cross_entropy", capabilities(), scalars);
  checkLmHeadRows("lm_head_cross_entropy", passRows, targets);
  lmHeadCrossEntropy(h, weight, targets, scalarsOf(scalars).gradScale, losses, dh, logitSoftcap);
}

void Backend::adamwIfFinite(std::span<const AdamWTensors> tensors, const Tensor& scalars,
                            const Tensor& sums) {
  checkAdamWArgs(capabilities(), tensors);
  checkStepScalarsArgs("adamw_if_finite", capabilities(), scalars);
  checkStepSumsArgs("adamw_if_finite", capabilities(), sums);
  if (sumsOf(sums).finite != 1.0) {
    return;
  }
  const StepScalars sc = scalarsOf(scalars);
  for (const AdamWTensors& t : tensors) {
    host::adamw(t.param->as<float>(), t.grad->as<float>(), t.firstMoment->as<float>(),
                t.secondMoment->as<float>(), t.param->numel(), sc.adamw);
  }
}

void checkDropoutMaskAtArgs(const BackendCapabilities& caps, const Tensor& mask,
                            const Tensor& scalars, std::int64_t seq, const Tensor& rowLengths,
                            std::int64_t micro, double p) {
  constexpr const char* op = "dropout_mask_at";
  checkDropoutMaskArgs(caps, mask, p);
  checkStepScalarsArgs(op, caps, scalars);
  if (mask.rank() != 2 || seq < 1 || mask.dim(0) % seq != 0) {
    throw ShapeError(std::string(op) + ": mask " + mask.describe() + " is not (rows·" +
                     std::to_string(seq) + ", features)");
  }
  if (!rowLengths.defined() || rowLengths.device() != caps.device ||
      rowLengths.dtype() != DType::F32 || micro < 0 || micro >= rowLengths.numel()) {
    throw ShapeError(std::string(op) + ": micro-batch " + std::to_string(micro) +
                     " has no row length in " +
                     (rowLengths.defined() ? rowLengths.describe() : std::string("nothing")));
  }
}

void Backend::dropoutMaskAt(Tensor& mask, std::uint64_t seed, std::uint32_t streamLow,
                            const Tensor& scalars, std::int64_t seq, const Tensor& rowLengths,
                            std::int64_t micro, double p) {
  checkDropoutMaskAtArgs(capabilities(), mask, scalars, seq, rowLengths, micro, p);
  const std::uint64_t stream =
      (std::uint64_t{scalarsOf(scalars).dropoutStreamHigh} << 32) | streamLow;
  const std::int64_t rows = mask.dim(0) / seq;
  const std::int64_t features = mask.dim(1);
  const std::int64_t length = std::min<std::int64_t>(rowLengths.as<std::int32_t>()[micro], seq);
  std::vector<float> eager(static_cast<std::size_t>(rows * length * features));
  host::dropoutMask(eager.data(), static_cast<std::int64_t>(eager.size()), seed, stream, p);
  float* out = mask.as<float>();  // host memory: the activations are f32 here
  for (std::int64_t row = 0; row < rows; ++row) {
    for (std::int64_t t = 0; t < seq; ++t) {
      float* dst = out + (row * seq + t) * features;
      if (t < length) {
        const float* src = eager.data() + (row * length + t) * features;
        std::copy(src, src + features, dst);
      } else {
        std::fill(dst, dst + features, 0.0f);
      }
    }
  }
}

void Backend::beginCapture() {
  throw UnsupportedOpError("graph mode is not applicable on the " +
                           std::string(deviceName(capabilities().device)));
}

std::unique_ptr<CapturedOps> Backend::endCapture() {
  throw UnsupportedOpError("graph mode is not applicable on the " +
                           std::string(deviceName(capabilities().device)));
}

}  // namespace lorascope::compute

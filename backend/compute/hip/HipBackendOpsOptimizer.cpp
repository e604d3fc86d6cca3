// hip/HipBackendOpsOptimizer.cpp — launchers of the optimizer ops: each list op cuts its tensors
// into chunks, uploads the chunk table (a few KiB) on the backend's stream and launches once;
// and convert, the LoRA weights' bf16 copy after each update.
#include <algorithm>
#include <array>
#include <vector>

#include "compute/hip/HipBackend.h"
#include "compute/hip/HipCheck.h"     // defines: LORASCOPE_HIP_CHECK
#include "compute/hip/elementwise.h"  // defines: castF32ToBf16
#include "compute/hip/optimizer.h"    // defines: TensorChunk and the launchers

namespace lorascope::compute::hip {
namespace {

// Appends the chunks of one tensor (or of an AdamW entry: four tensors of the same size).
void appendChunks(std::vector<TensorChunk>& chunks, const TensorChunk& whole) {
  for (std::int64_t first = 0; first < whole.count; first += kChunkElements) {
    const auto at = [first](auto* p) { return p == nullptr ? nullptr : p + first; };
    chunks.push_back({at(whole.x), at(whole.grad), at(whole.firstMoment), at(whole.secondMoment),
                      std::min(kChunkElements, whole.count - first)});
  }
}

template <typename TensorPtr>
std::vector<TensorChunk> chunksOf(std::span<TensorPtr const> tensors) {
  std::vector<TensorChunk> chunks;
  for (const Tensor* t : tensors) {
    // sumOfSquares only reads x; the table type is shared with the ops that write it.
    appendChunks(chunks,
                 {const_cast<float*>(t->as<float>()), nullptr, nullptr, nullptr, t->numel()});
  }
  return chunks;
}

// The chunk table in device memory, ordered on the stream before the launch that reads it; the
// allocator reuses the block only for work queued after that launch.
Tensor uploadChunks(HipBackend& backend, const std::vector<TensorChunk>& chunks) {
  static_assert(sizeof(TensorChunk) % sizeof(float) == 0);
  const auto words = static_cast<std::int64_t>(chunks.size() * sizeof(TensorChunk) / sizeof(float));
  Tensor table = backend.empty(DType::F32, {words});
  backend.copyHostToDeviceAsync(table.data(), chunks.data(), chunks.size() * sizeof(TensorChunk));
  return table;
}

const TensorChunk* tableOf(const Tensor& table) {
  return static_cast<const TensorChunk*>(table.data());
}

}  // namespace

void HipBackend::fillZero(std::span<Tensor* const> tensors) {
  checkTensorListArgs("fill_zero", caps_, tensors);
  const std::vector<TensorChunk> chunks = chunksOf(tensors);
  if (chunks.empty()) {
    return;
  }
  const Tensor table = uploadChunks(*this, chunks);
  hip::fillZero(tableOf(table), static_cast<std::int64_t>(chunks.size()), stream_);
}

double HipBackend::sumOfSquares(std::span<const Tensor* const> tensors) {
  checkTensorListArgs("sum_of_squares", caps_, tensors);
  const std::vector<TensorChunk> chunks = chunksOf(tensors);
  if (chunks.empty()) {
    return 0.0;
  }
  const auto count = static_cast<std::int64_t>(chunks.size());
  const Tensor table = uploadChunks(*this, chunks);
  // Doubles in f32 tensors of twice the length: the Tensor dtypes have no f64.
  Tensor partials = empty(DType::F32, {2 * count});
  Tensor sum = empty(DType::F32, {2});
  hip::sumOfSquares(tableOf(table), count, static_cast<double*>(partials.data()),
                    static_cast<double*>(sum.data()), stream_);
  requireNotCapturing("sum_of_squares");  // the norm is read here: clipScaledGradients instead
  double result = 0.0;
  LORASCOPE_HIP_CHECK(
      hipMemcpyAsync(&result, sum.data(), sizeof(double), hipMemcpyDeviceToHost, stream_));
  LORASCOPE_HIP_CHECK(hipStreamSynchronize(stream_));
  return result;
}

void HipBackend::scaleInPlace(std::span<Tensor* const> tensors, float factor) {
  checkTensorListArgs("scale", caps_, tensors);
  const std::vector<TensorChunk> chunks = chunksOf(tensors);
  if (chunks.empty()) {
    return;
  }
  const Tensor table = uploadChunks(*this, chunks);
  hip::scaleInPlace(tableOf(table), static_cast<std::int64_t>(chunks.size()), factor, stream_);
}

namespace {

std::vector<TensorChunk> adamwChunks(std::span<const AdamWTensors> tensors) {
  std::vector<TensorChunk> chunks;
  for (const AdamWTensors& t : tensors) {
    appendChunks(chunks, {t.param->as<float>(), t.grad->as<float>(), t.firstMoment->as<float>(),
                          t.secondMoment->as<float>(), t.param->numel()});
  }
  return chunks;
}

const StepScalars* scalarsOf(const Tensor& scalars) {
  return static_cast<const StepScalars*>(scalars.data());
}

StepSums* sumsOf(Tensor& sums) {
  return static_cast<StepSums*>(sums.data());
}

}  // namespace

void HipBackend::adamw(std::span<const AdamWTensors> tensors, const AdamWScalars& scalars) {
  checkAdamWArgs(caps_, tensors);
  const std::vector<TensorChunk> chunks = adamwChunks(tensors);
  if (chunks.empty()) {
    return;
  }
  const Tensor table = uploadChunks(*this, chunks);
  hip::adamw(tableOf(table), static_cast<std::int64_t>(chunks.size()), scalars, stream_);
}

void HipBackend::dropoutMask(Tensor& mask, std::uint64_t seed, std::uint64_t philoxStream,
                             double p) {
  checkDropoutMaskArgs(caps_, mask, p);
  hip::dropoutMask(mask.data(), mask.dtype() == DType::BF16, mask.numel(), seed, philoxStream,
                   static_cast<float>(p), static_cast<float>(1.0 / (1.0 - p)), stream_);
}

// --- Graph-mode step ops: the step's scalars and sums stay in device memory ------------------

void HipBackend::accumulateLoss(const Tensor& losses, Tensor& sums) {
  checkStepSumsArgs("accumulate_loss", caps_, sums);
  const std::array<const Tensor*, 1> list{&losses};
  checkTensorListArgs("accumulate_loss", caps_, std::span<const Tensor* const>(list));
  hip::accumulateLoss(losses.as<float>(), losses.numel(), sumsOf(sums), stream_);
}

void HipBackend::clipScaledGradients(std::span<Tensor* const> grads, const Tensor& scalars,
                                     Tensor& sums) {
  checkTensorListArgs("clip_scaled_gradients", caps_, grads);
  checkStepScalarsArgs("clip_scaled_gradients", caps_, scalars);
  checkStepSumsArgs("clip_scaled_gradients", caps_, sums);
  const std::vector<TensorChunk> chunks = chunksOf(grads);
  if (chunks.empty()) {
    return;
  }
  const auto count = static_cast<std::int64_t>(chunks.size());
  const Tensor table = uploadChunks(*this, chunks);
  Tensor partials = empty(DType::F32, {2 * count});  // doubles, as in sumOfSquares
  Tensor factor = empty(DType::F32, {1});
  hip::clipScaled(tableOf(table), count, static_cast<double*>(partials.data()), scalarsOf(scalars),
                  sumsOf(sums), factor.as<float>(), stream_);
}

void HipBackend::adamwIfFinite(std::span<const AdamWTensors> tensors, const Tensor& scalars,
                               const Tensor& sums) {
  checkAdamWArgs(caps_, tensors);
  checkStepScalarsArgs("adamw_if_finite", caps_, scalars);
  checkStepSumsArgs("adamw_if_finite", caps_, sums);
  const std::vector<TensorChunk> chunks = adamwChunks(tensors);
  if (chunks.empty()) {
    return;
  }
  const Tensor table = uploadChunks(*this, chunks);
  hip::adamwIfFinite(tableOf(table), static_cast<std::int64_t>(chunks.size()), scalarsOf(scalars),
                     static_cast<const StepSums*>(sums.data()), stream_);
}

void HipBackend::dropoutMaskAt(Tensor& mask, std::uint64_t seed, std::uint32_t streamLow,
                               const Tensor& scalars, std::int64_t seq, const Tensor& rowLengths,
                               std::int64_t micro, double p) {
  checkDropoutMaskAtArgs(caps_, mask, scalars, seq, rowLengths, micro, p);
  hip::dropoutMaskPadded(mask.data(), mask.dtype() == DType::BF16, mask.dim(0) / seq, seq,
                         mask.dim(1), seed, streamLow, &scalarsOf(scalars)->dropoutStreamHigh,
                         rowLengths.as<std::int32_t>() + micro, static_cast<float>(p),
                         static_cast<float>(1.0 / (1.0 - p)), stream_);
}

// The LoRA weights' bf16 copy: one kernel over the whole (flat) weight buffer.
void HipBackend::convert(const Tensor& src, Tensor& dst) {
  checkConvertArgs(caps_, src, dst);
  if (dst.dtype() == DType::F32) {
    LORASCOPE_HIP_CHECK(
        hipMemcpyAsync(dst.data(), src.data(), src.bytes(), hipMemcpyDeviceToDevice, stream_));
    return;
  }
  castF32ToBf16(src.as<float>(), src.numel(), dst.as<std::uint16_t>(), stream_);
}

}  // namespace lorascope::compute::hip

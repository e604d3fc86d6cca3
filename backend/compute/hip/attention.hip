// hip/attention.hip — causal GQA attention, forward and backward, with an optional sliding window
// and tanh soft-capping of the scores (Mistral, Gemma 2/3); CPU twin: cpu/attention.cpp.
//
// The dispatcher of two families of kernels, chosen per launch by attentionKernels(): the
// matrix-core kernels (hip/attention_mma.hip: tensor cores on NVIDIA sm_80+, MFMA on CDNA 2/3,
// WMMA on RDNA 3/4, through gpu::mma of the portability header) for head dims up to 128, and the
// vector-ALU kernels (hip/attention_vector.hip) for every other case (RDNA 2, head dims 129-256,
// or LORASCOPE_ATTENTION_KERNEL=vector). Both backward families leave per-query-head dk/dv
// partials; the group sum here adds them over each KV group in a fixed order, so the gradients
// are bit-identical from run to run.
#include "compute/hip/attention.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <mutex>
#include <optional>
#include <string_view>

#include "compute/hip/HipCheck.h"           // defines: LORASCOPE_HIP_CHECK
#include "compute/hip/attention_kernels.h"  // defines: the families' launchers, Dims, toDims
#include "compute/hip/launch.h"             // defines: launch

namespace lorascope::compute::hip {

// Asked once per device; a matrix-core block is a whole number of waves of its wave size.
MatrixCores currentMatrixCores() {
  constexpr int kMaxDevices = 64;
  static std::mutex mutex;
  static std::array<std::optional<MatrixCores>, kMaxDevices> known;
  int device = 0;
  LORASCOPE_HIP_CHECK(hipGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  if (device < 0 || device >= kMaxDevices) {
    return {};
  }
  if (!known[static_cast<std::size_t>(device)]) {
    hipDeviceProp_t prop{};
    LORASCOPE_HIP_CHECK(hipGetDeviceProperties(&prop, device));
    known[static_cast<std::size_t>(device)] = MatrixCores{gpu::hasMatrixCores(prop), prop.warpSize};
  }
  return *known[static_cast<std::size_t>(device)];
}

namespace attention {
namespace {

// dk[b, t, kvh, d] = Σ over the group's query heads of dkPartial[b, t, h, d] (same for dv), P
// consecutive d a thread: one 16-byte load a partial and one 8-byte store an output when P = 4
// (head dims of 4k; each element's sum is the same expression for any P).
template <int P>
__global__ void attentionGroupSumKernel(const float* dkPartial, const float* dvPartial, Dims dims,
                                        long long elements, hip_bfloat16* dk, hip_bfloat16* dv) {
  const int group = dims.heads / dims.kvHeads;
  for (long long e = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) * P;
       e < elements; e += static_cast<long long>(gridDim.x) * blockDim.x * P) {
    const long long d = e % dims.headDim;
    const long long kvh = e / dims.headDim % dims.kvHeads;
    const long long bt = e / (static_cast<long long>(dims.headDim) * dims.kvHeads);
    const long long first = (bt * dims.heads + kvh * group) * dims.headDim + d;
    float dkSum[P] = {};
    float dvSum[P] = {};
    for (int g = 0; g < group; ++g) {
      float dkPart[P];
      float dvPart[P];
      gpu::loadPack(dkPartial, first + static_cast<long long>(g) * dims.headDim, dkPart);
      gpu::loadPack(dvPartial, first + static_cast<long long>(g) * dims.headDim, dvPart);
#pragma unroll
      for (int i = 0; i < P; ++i) {
        dkSum[i] += dkPart[i];
        dvSum[i] += dvPart[i];
      }
    }
    gpu::storePack(dk, e, dkSum);
    gpu::storePack(dv, e, dvSum);
  }
}

// LORASCOPE_ATTENTION_KERNEL=vector: the vector-ALU kernels everywhere (a comparison, or a way
// around a matrix-core kernel suspected of a fault); unset or "auto": matrix cores where they
// serve. Read once per process.
bool vectorKernelsForced() {
  static const bool forced = [] {
    const char* value = std::getenv("LORASCOPE_ATTENTION_KERNEL");
    return value != nullptr && std::string_view(value) == "vector";
  }();
  return forced;
}

// The matrix-core kernels copy rows of head dims 8k in 16-byte pieces: such tensors must start on
// 16 bytes (the allocator's blocks do; a view at an odd offset goes to the vector kernels).
bool tilesCopyable(const AttentionShape& shape,
                   std::initializer_list<const std::uint16_t*> tensors) {
  if (shape.headDim % 8 != 0) {
    return true;
  }
  return std::all_of(tensors.begin(), tensors.end(),
                     [](const std::uint16_t* p) { return gpu::alignedTo(p, 16); });
}

}  // namespace
}  // namespace attention

AttentionKernels attentionKernels(const AttentionShape& shape) {
  const MatrixCores device = currentMatrixCores();
  if (shape.headDim <= kMaxMatrixAttentionHeadDim && device.available &&
      !attention::vectorKernelsForced()) {
    return AttentionKernels::MatrixCores;
  }
  return AttentionKernels::Vector;
}

void attentionForward(const std::uint16_t* q, const std::uint16_t* k, const std::uint16_t* v,
                      AttentionShape shape, float scale, std::uint16_t* out, float* logsumexp,
                      hipStream_t stream) {
  if (shape.batch == 0 || shape.seq == 0 || shape.heads == 0) {
    return;
  }
  if (attentionKernels(shape) == AttentionKernels::MatrixCores &&
      attention::tilesCopyable(shape, {q, k, v})) {
    attention::forwardMatrixCores(q, k, v, shape, scale, out, logsumexp, stream);
  } else {
    attention::forwardVector(q, k, v, shape, scale, out, logsumexp, stream);
  }
}

void attentionBackward(const std::uint16_t* dout, const std::uint16_t* q, const std::uint16_t* k,
                       const std::uint16_t* v, const std::uint16_t* out, const float* logsumexp,
                       AttentionShape shape, float scale, AttentionBackwardScratch scratch,
                       std::uint16_t* dq, std::uint16_t* dk, std::uint16_t* dv,
                       hipStream_t stream) {
  if (shape.batch == 0 || shape.seq == 0 || shape.heads == 0) {
    return;
  }
  if (attentionKernels(shape) == AttentionKernels::MatrixCores &&
      attention::tilesCopyable(shape, {dout, q, k, v, out})) {
    attention::backwardMatrixCores(dout, q, k, v, out, logsumexp, shape, scale, scratch, dq,
                                   stream);
  } else {
    attention::backwardVector(dout, q, k, v, out, logsumexp, shape, scale, scratch, dq, stream);
  }
  using attention::asBf16;
  const long long kvElements = shape.batch * shape.seq * shape.kvHeads * shape.headDim;
  constexpr int kGroupSumPack = 4;
  if (shape.headDim % kGroupSumPack == 0 && gpu::alignedTo(dk, 8) && gpu::alignedTo(dv, 8) &&
      gpu::alignedTo(scratch.dkPartial, 16) && gpu::alignedTo(scratch.dvPartial, 16)) {
    launch("attention_backward", attention::attentionGroupSumKernel<kGroupSumPack>,
           attention::elementwiseGrid(kvElements / kGroupSumPack),
           dim3(attention::kElementwiseThreads), 0, stream, scratch.dkPartial, scratch.dvPartial,
           attention::toDims(shape), kvElements, asBf16(dk), asBf16(dv));
    return;
  }
  launch("attention_backward", attention::attentionGroupSumKernel<1>,
         attention::elementwiseGrid(kvElements), dim3(attention::kElementwiseThreads), 0, stream,
         scratch.dkPartial, scratch.dvPartial, attention::toDims(shape), kvElements, asBf16(dk),
         asBf16(dv));
}

}  // namespace lorascope::compute::hip

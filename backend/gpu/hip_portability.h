// hip_portability.h — the one place where vendors differ.
//
// Kernels and host code in backend/compute/hip/ are written once against the HIP API. Under
// hipcc/clang (LORASCOPE_GPU_AMD) this header includes the real HIP headers. Under nvcc
// (LORASCOPE_GPU_NVIDIA) it maps the HIP names the project uses to CUDA, because Debian's HIP 5.2
// headers for the NVIDIA platform do not compile against CUDA 13 (removed cudaDeviceProp fields,
// the new cudaMemPrefetchAsync signature). Only names the project uses are mapped; add a row
// when a new one is needed. No other file may test the vendor.
#pragma once

#include <cstdint>
#include <string>

#if defined(LORASCOPE_GPU_NVIDIA)

#include <cuda_bf16.h>
#include <cuda_runtime.h>

// Runtime, errors
#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorInsufficientDriver cudaErrorInsufficientDriver
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipGetErrorName cudaGetErrorName
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipGetDevice cudaGetDevice
#define hipSetDevice cudaSetDevice
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipDeviceProp_t cudaDeviceProp
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeComputeCapabilityMajor cudaDevAttrComputeCapabilityMajor
#define hipDeviceAttributeComputeCapabilityMinor cudaDevAttrComputeCapabilityMinor
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipDriverGetVersion cudaDriverGetVersion
#define hipMemGetInfo cudaMemGetInfo

// Memory
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemset cudaMemset
#define hipMemsetAsync cudaMemsetAsync
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipHostMalloc cudaHostAlloc
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostFree cudaFreeHost

// Streams and events
#define hipStream_t cudaStream_t
#define hipStreamCreate cudaStreamCreate
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamQuery cudaStreamQuery
#define hipStreamWaitEvent cudaStreamWaitEvent
#define hipEvent_t cudaEvent_t
#define hipEventCreate cudaEventCreate
#define hipEventCreateWithFlags cudaEventCreateWithFlags
#define hipEventDisableTiming cudaEventDisableTiming
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventQuery cudaEventQuery
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipErrorNotReady cudaErrorNotReady

// Graphs (whole-step graph mode: compute/hip/HipBackend.cpp)
#define hipGraph_t cudaGraph_t
#define hipGraphExec_t cudaGraphExec_t
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamEndCapture cudaStreamEndCapture
#define hipStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipGraphDestroy cudaGraphDestroy

// bf16: both vendors' types hold the 16 bits of a bfloat16 and convert to/from float.
using hip_bfloat16 = __nv_bfloat16;

// Vendor BLAS: hipBLAS names for cuBLAS, only in the translation unit that calls the BLAS
// (gemm_vendor.cpp, compiled with LORASCOPE_VENDOR_BLAS), so no other file needs its headers.
#if defined(LORASCOPE_VENDOR_BLAS)
#include <cublas_v2.h>
#define hipblasHandle_t cublasHandle_t
#define hipblasStatus_t cublasStatus_t
#define HIPBLAS_STATUS_SUCCESS CUBLAS_STATUS_SUCCESS
#define hipblasStatusToString cublasGetStatusName
#define hipblasCreate cublasCreate
#define hipblasDestroy cublasDestroy
#define hipblasSetStream cublasSetStream
#define hipblasGemmEx cublasGemmEx
#define HIPBLAS_OP_N CUBLAS_OP_N
#define HIPBLAS_OP_T CUBLAS_OP_T
#define HIPBLAS_COMPUTE_32F CUBLAS_COMPUTE_32F
#define HIPBLAS_GEMM_DEFAULT CUBLAS_GEMM_DEFAULT
#define hipDataType cudaDataType
#define HIP_R_32F CUDA_R_32F
#define HIP_R_16BF CUDA_R_16BF
namespace lorascope::gpu {
// cuBLAS may add the split-k partial sums of a bf16-output GEMM in bf16 ("reduced precision
// reduction"): several bf16 roundings on a long k and a small output, where the trainer wants
// fp32 accumulation throughout. This turns that off for the handle.
inline cublasStatus_t requireFullPrecisionReduction(cublasHandle_t handle) {
  return cublasSetMathMode(
      handle, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH |
                                        CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
}
}  // namespace lorascope::gpu
#endif

// Collectives: NCCL, whose API RCCL repeats name for name, so the calls need no mapping; only in
// the translation unit that loads the library at run time (group/NcclCollective.cpp, compiled
// with LORASCOPE_COLLECTIVES). nccl.h ships with CUDA 13 (and the nvidia-nccl packages).
#if defined(LORASCOPE_COLLECTIVES)
#include <nccl.h>
#define LORASCOPE_HAVE_COLLECTIVES 1
namespace lorascope::gpu {
inline constexpr const char* kCollectiveLibraryName = "NCCL";
inline constexpr const char* kCollectiveLibraryFiles[] = {"libnccl.so.2", "libnccl.so"};
}  // namespace lorascope::gpu
#endif

namespace lorascope::gpu {

inline constexpr const char* kPlatformName = "NVIDIA (CUDA via HIP portability header)";
inline constexpr int kWaveSize = 32;  // every NVIDIA architecture
// Shared-memory buffers a tile loop of the matrix-core kernels cycles through: cp.async fills the
// next tile while the current one is multiplied (gpu::mma::copy16Async).
inline constexpr int kAsyncCopyStages = 2;

// "sm_90": NVIDIA names architectures by compute capability.
inline std::string deviceArchitecture(const hipDeviceProp_t& prop) {
  return "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
}
// Tensor cores with bf16 mma.sync (m16n8k16) and ldmatrix: sm_80 (Ampere) and later. The
// kernels' matrix-core paths (gpu::mma below) exist in code built for those architectures only.
inline bool hasMatrixCores(const hipDeviceProp_t& prop) {
  return prop.major >= 8;
}
// cudaRuntimeGetVersion gives 1000 * major + 10 * minor.
inline std::string runtimeVersionText(int version) {
  return "CUDA " + std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) +
         " via HIP portability header";
}

}  // namespace lorascope::gpu

#if defined(__CUDACC__)  // device helpers exist only where device code is compiled
namespace lorascope::gpu {
__device__ inline float bf16ToFloat(hip_bfloat16 v) {
  return __bfloat162float(v);
}
__device__ inline hip_bfloat16 floatToBf16(float v) {
  return __float2bfloat16_rn(v);
}
__device__ inline float waveShflXor(float v, int laneMask) {
  return __shfl_xor_sync(0xffffffffu, v, laneMask, kWaveSize);
}
// 2^x by the hardware's approximation alone, a result below 2^-126 flushed to zero: exp2f
// wraps the same instruction (ex2.approx) in a rescaling that keeps such results, three more
// instructions an element (Note [softmax's exponentials] in hip/attention_mma.hip).
__device__ inline float exp2Fast(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
}  // namespace lorascope::gpu
#define LORASCOPE_GPU_DEVICE_CODE 1
#endif

// __launch_bounds__ asking for `blocks` resident blocks per SM (CUDA's second argument), so that
// ptxas fits the kernel into 65536 / (blocks × threads) registers a thread.
#define LORASCOPE_LAUNCH_BOUNDS_BLOCKS(threads, blocks) __launch_bounds__(threads, blocks)

#elif defined(LORASCOPE_GPU_AMD)

// HIP's headers define __noinline__ as a macro, and libstdc++ 16 writes [[__gnu__::__noinline__]]
// in <format>, which <chrono> includes: the standard headers are parsed before HIP's.
#include <chrono>

#if defined(__HIPCC__)  // a HIP translation unit: kernels, device helpers
#include <hip/hip_bfloat16.h>
#include <hip/hip_runtime.h>
#else  // plain C++ host code: the runtime API only
#include <hip/hip_runtime_api.h>
#endif

// Vendor BLAS, only in gemm_vendor.cpp (see the NVIDIA branch): hipBLAS ≥ 2 (ROCm 6), whose
// GemmEx takes hipDataType operands and a hipblasComputeType_t once HIPBLAS_V2 is defined.
#if defined(LORASCOPE_VENDOR_BLAS)
#define HIPBLAS_V2
#include <hipblas/hipblas.h>
namespace lorascope::gpu {
// hipBLAS' GemmEx sums in its compute type (fp32 here) throughout: no reduced-precision reduction
// to turn off, unlike cuBLAS (see the NVIDIA branch).
inline hipblasStatus_t requireFullPrecisionReduction(hipblasHandle_t) {
  return HIPBLAS_STATUS_SUCCESS;
}
}  // namespace lorascope::gpu
#endif

// Collectives: RCCL, NCCL's API (see the NVIDIA branch). Debian packages its header as
// librccl-dev (the CI chroot unpacks it, scripts/rocm-chroot.packages); a ROCm without it builds
// a group that says so instead of loading the library.
#if defined(LORASCOPE_COLLECTIVES)
namespace lorascope::gpu {
inline constexpr const char* kCollectiveLibraryName = "RCCL";
}  // namespace lorascope::gpu
#if __has_include(<rccl/rccl.h>)
#include <rccl/rccl.h>
#define LORASCOPE_HAVE_COLLECTIVES 1
namespace lorascope::gpu {
inline constexpr const char* kCollectiveLibraryFiles[] = {"librccl.so.1", "librccl.so"};
}  // namespace lorascope::gpu
#else
namespace lorascope::gpu {
inline constexpr const char* kNoCollectivesReason =
    "this build was compiled without RCCL's header (rccl/rccl.h, Debian's librccl-dev), so it "
    "cannot form a group; rebuild with ROCm's RCCL installed";
}  // namespace lorascope::gpu
#endif
#endif

namespace lorascope::gpu {

inline constexpr const char* kPlatformName = "AMD (ROCm HIP)";
// gpu::mma::copy16Async is a plain copy here: one buffer per tile (and LDS is 64 KiB a block).
inline constexpr int kAsyncCopyStages = 1;

// "gfx1100:sramecc-:xnack-" -> "gfx1100": the target name without feature flags.
inline std::string deviceArchitecture(const hipDeviceProp_t& prop) {
  const std::string full = prop.gcnArchName;
  return full.substr(0, full.find(':'));
}
// Matrix cores that gpu::mma below drives: MFMA with bf16 (CDNA 2/3: gfx90a, gfx94x, gfx950) and
// WMMA (RDNA 3/3.5: gfx11xx; RDNA 4: gfx12xx). RDNA 2 (gfx1030) and older GCN have none.
inline bool hasMatrixCores(const hipDeviceProp_t& prop) {
  const std::string arch = deviceArchitecture(prop);
  return arch == "gfx90a" || arch.rfind("gfx94", 0) == 0 || arch == "gfx950" ||
         arch.rfind("gfx11", 0) == 0 || arch.rfind("gfx12", 0) == 0;
}
// hipRuntimeGetVersion gives 10000000 * major + 100000 * minor + patch.
inline std::string runtimeVersionText(int version) {
  return "HIP " + std::to_string(version / 10000000) + "." +
         std::to_string(version / 100000 % 100) + " (ROCm)";
}
// Per target family (clang defines __GFX9__, __GFX10__, ... in each device pass), not from
// __AMDGCN_WAVEFRONT_SIZE, which clang 21 deprecates. HIP compiles RDNA for wave32 unless told
// -mwavefrontsize64, which this project never passes.
#if defined(__GFX9__)
inline constexpr int kWaveSize = 64;  // GCN5 / CDNA: gfx90a, gfx942
#elif defined(__GFX10__) || defined(__GFX11__) || defined(__GFX12__)
inline constexpr int kWaveSize = 32;  // RDNA 2/3/4: gfx1030, gfx11xx, gfx12xx
#elif defined(__HIP_DEVICE_COMPILE__)
#error "hip_portability.h: unknown AMD GPU family; add its wave size"
#else
// The host pass of a HIP compilation serves every target at once, so it has no single wave size;
// only device code may rely on kWaveSize. Host code sizes things with kMinWaveSize.
inline constexpr int kWaveSize = 64;
#endif
}  // namespace lorascope::gpu

#if defined(__HIPCC__)
namespace lorascope::gpu {
__device__ inline float bf16ToFloat(hip_bfloat16 v) {
  return static_cast<float>(v);
}
__device__ inline hip_bfloat16 floatToBf16(float v) {
  return hip_bfloat16(v);
}  // nearest-even
__device__ inline float waveShflXor(float v, int laneMask) {
  return __shfl_xor(v, laneMask, kWaveSize);
}
// exp2f itself: v_exp_f32 alone (__builtin_amdgcn_exp2f, without exp2f's rescaling for results
// below 2^-126) made the head-dim-128 attention forward spill a VGPR on gfx1150 and gfx1151
// (Note [registers on RDNA] in hip/attention_mma.hip), and no AMD card here measures the gain.
__device__ inline float exp2Fast(float x) {
  return exp2f(x);
}
}  // namespace lorascope::gpu
#define LORASCOPE_GPU_DEVICE_CODE 1
#endif

// HIP's second __launch_bounds__ argument is waves per execution unit, not blocks per SM: AMD
// kernels keep the thread bound alone (their registers are budgeted per target, Note [registers on
// RDNA] in hip/attention_mma.hip).
#define LORASCOPE_LAUNCH_BOUNDS_BLOCKS(threads, blocks) __launch_bounds__(threads)

#else
#error "hip_portability.h is only for the hip-amd and hip-nvidia flavours"
#endif

#if defined(LORASCOPE_GPU_DEVICE_CODE)
static_assert(sizeof(hip_bfloat16) == sizeof(std::uint16_t), "bf16 must be 16 bits on the device");
#endif

// ---------------------------------------------------------------------------------------------
// Matrix cores: gpu::mma, one wave multiplying 16×16 bf16 tiles into a 16×16 f32 accumulator,
//   C += A·B,  A (16 m × 16 k), B (16 k × 16 n).
// Defined (with LORASCOPE_GPU_MMA) only in device passes for targets that have matrix cores:
// NVIDIA sm_80+ (mma.sync m16n8k16, two per tile, operands by ldmatrix), CDNA 2/3 (MFMA
// 16x16x16 bf16, wave64), RDNA 3/3.5 (WMMA gfx11, wave32) and RDNA 4 (WMMA gfx12, wave32); host
// code asks hasMatrixCores(prop) before launching a kernel built on it. Blocks are one-dimensional
// and a whole number of waves; every lane of a wave calls every function (they are wave-wide).
// The fragments are opaque: a kernel loads them from shared memory, multiplies, and reads the
// accumulator element by element through accRow/accCol:
//   FragA, FragB, FragC     operand and accumulator registers (c.v[e], e < kAccElems)
//   zero(c)                 c = 0
//   loadA(a, p, ld)         A[m][k] = p[m·ld + k]   (row-major; shared memory, 16-byte rows)
//   loadBt(b, p, ld)        B[k][n] = p[n·ld + k]   (B's columns as rows, e.g. K for Q·Kᵀ)
//   loadB(b, p, ld)         B[k][n] = p[k·ld + n]   (row-major, e.g. V for P·V)
//   mma(c, a, b)            c += a·b
//   copy16Async(dst, src, valid), copyAsyncCommit(), copyAsyncWait<Pending>()
//                           16-byte global -> shared copies in flight while the wave computes
//                           (NVIDIA cp.async; a plain copy on AMD); kAsyncCopyStages buffers
//   accToA(a, c, scratch)   the accumulator rounded to bf16 as an A operand (P for P·V);
//                           scratch: 256 bf16 of shared memory per wave, 16-byte aligned
//   accToASplit(hi, lo, c, scratch)
//                           the same as two operands, hi = bf16(c) and lo = bf16(c − hi): two
//                           products (hi·B + lo·B) carry c to ~16 significant bits, not 8
//   accSlot(e)              which of the lane's kAccRowSlots rows element e lies in (constexpr)
//   slotRow(s), accCol(e)   the row of slot s and the column of element e for this lane
//   rowMax(x), rowSum(x)    x combined over the lanes that hold the same rows (per slot)
//   kRegisterTight          the target's operands crowd its registers: kernels keep fewer
//                           fragments live (RDNA 3/4)
//   kAccColumnPairs         elements 2m and 2m + 1 of an accumulator are columns c and c + 1
//                           (c even) of one row, so a lane may store them together (NVIDIA)
// The lane's rows (slotRow) are the same in every accumulator of a wave, so per-row state (a
// softmax's running max) is kAccRowSlots floats per lane.
#if defined(LORASCOPE_GPU_DEVICE_CODE)
#if defined(LORASCOPE_GPU_NVIDIA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define LORASCOPE_GPU_MMA 1
namespace lorascope::gpu::mma {
struct FragA {
  std::uint32_t r[4];
};
struct FragB {
  std::uint32_t r[4];  // r[0], r[1]: columns 0-7; r[2], r[3]: columns 8-15
};
struct FragC {
  float v[8];  // v[0..3]: columns 0-7 (an m16n8 accumulator), v[4..7]: columns 8-15
};
inline constexpr int kAccElems = 8;
inline constexpr int kAccRowSlots = 2;
inline constexpr bool kRegisterTight = false;  // see the AMD section
inline constexpr bool kAccColumnPairs = true;
__device__ constexpr int accSlot(int e) {
  return (e >> 1) & 1;
}
__device__ inline int laneId() {
  return static_cast<int>(threadIdx.x) & 31;
}
__device__ inline int slotRow(int slot) {
  return laneId() / 4 + 8 * slot;
}
__device__ inline int accCol(int e) {
  return 2 * (laneId() % 4) + (e & 1) + 8 * (e >> 2);
}
__device__ inline void zero(FragC& c) {
#pragma unroll
  for (int e = 0; e < kAccElems; ++e) {
    c.v[e] = 0.0f;
  }
}
__device__ inline float rowMax(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ inline float rowSum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}
// Four 8×8 b16 matrices; lanes 8j..8j+7 give the row addresses of matrix j, register j gets it.
__device__ inline void ldmatrix4(std::uint32_t (&r)[4], const hip_bfloat16* rowAddress) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(rowAddress));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ inline void ldmatrix4Transposed(std::uint32_t (&r)[4], const hip_bfloat16* rowAddress) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(rowAddress));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
// Matrices: (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15), (rows 8-15, k 8-15).
__device__ inline void loadA(FragA& a, const hip_bfloat16* p, int ld) {
  const int l = laneId();
  const int j = l >> 3;
  ldmatrix4(a.r, p + ((l & 7) + 8 * (j & 1)) * ld + 8 * (j >> 1));
}
// Matrices (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15), rows along n.
__device__ inline void loadBt(FragB& b, const hip_bfloat16* p, int ld) {
  const int l = laneId();
  const int j = l >> 3;
  ldmatrix4(b.r, p + ((l & 7) + 8 * (j >> 1)) * ld + 8 * (j & 1));
}
// The same four matrices stored with rows along k, transposed by ldmatrix.
__device__ inline void loadB(FragB& b, const hip_bfloat16* p, int ld) {
  const int l = laneId();
  const int j = l >> 3;
  ldmatrix4Transposed(b.r, p + ((l & 7) + 8 * (j & 1)) * ld + 8 * (j >> 1));
}
__device__ inline void mma16x8(float* c, const std::uint32_t (&a)[4], std::uint32_t b0,
                               std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ inline void mma(FragC& c, const FragA& a, const FragB& b) {
  mma16x8(c.v, a.r, b.r[0], b.r[1]);
  mma16x8(c.v + 4, a.r, b.r[2], b.r[3]);
}
__device__ inline std::uint32_t packBf16(float lo, float hi) {
  const __nv_bfloat162 pair = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const std::uint32_t*>(&pair);
}
// 16 bytes global -> shared without a register round trip (zeros when !valid; src must still be
// a valid address). Groups of copies are committed, then waited for until at most Pending
// groups are in flight; a block barrier after the wait makes them visible to the other lanes.
__device__ inline void copy16Async(void* sharedDst, const void* globalSrc, bool valid) {
  const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(sharedDst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(globalSrc),
               "r"(valid ? 16 : 0));
}
__device__ inline void copyAsyncCommit() {
  asm volatile("cp.async.commit_group;\n" ::);
}
template <int Pending>
__device__ inline void copyAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}
// The m16n8k16 accumulator of two column halves is already laid out as an A operand.
__device__ inline void accToA(FragA& a, const FragC& c, hip_bfloat16* /*scratch*/) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    a.r[r] = packBf16(c.v[2 * r], c.v[2 * r + 1]);
  }
}
__device__ inline void accToASplit(FragA& hi, FragA& lo, const FragC& c,
                                   hip_bfloat16* /*scratch*/) {
#pragma unroll
  for (int r = 0; r < 4; ++r) {
    const float x0 = c.v[2 * r];
    const float x1 = c.v[2 * r + 1];
    const __nv_bfloat162 high = __floats2bfloat162_rn(x0, x1);
    const float2 highValue = __bfloat1622float2(high);
    hi.r[r] = *reinterpret_cast<const std::uint32_t*>(&high);
    lo.r[r] = packBf16(x0 - highValue.x, x1 - highValue.y);
  }
}
}  // namespace lorascope::gpu::mma

#elif defined(LORASCOPE_GPU_AMD) &&                                                              \
    (defined(__gfx90a__) || defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || \
     defined(__gfx950__) || defined(__GFX11__) || defined(__GFX12__))
#define LORASCOPE_GPU_MMA 1
namespace lorascope::gpu::mma {
// Every AMD layout holds one column per lane (column = lane mod 16) and spreads the rows over
// the accumulator's registers and the lane's group of 16:
//   MFMA 16x16x16 (wave64):  A, B: k = 4·(lane/16) + 0..3;  C: row = 4·(lane/16) + e, e < 4
//   WMMA gfx11 (wave32):     A, B: k = 0..15, lanes 16-31 repeat 0-15;  C: row = 2e + lane/16
//   WMMA gfx12 (wave32):     A, B: k = 8·(lane/16) + 0..7;  C: row = e + 8·(lane/16)
#if defined(__GFX11__)
inline constexpr int kOperandK = 16;  // k values per lane of A and B
inline constexpr int kAccElems = 8;
#elif defined(__GFX12__)
inline constexpr int kOperandK = 8;
inline constexpr int kAccElems = 8;
#else
inline constexpr int kOperandK = 4;
inline constexpr int kAccElems = 4;
#endif
// Register-tight: RDNA's operands are 2-4 times MFMA's per lane (gfx11's lanes 16-31 repeat
// lanes 0-15), and AMDGPU's scheduler, hoisting a pass's operand loads, spilled the attention
// kernels' 64-key passes there (66-440 VGPRs per lane on gfx11, up to 75 on gfx12). Kernels on
// such targets keep fewer operands in registers (attention_mma.hip, Note [registers on RDNA]).
#if defined(__GFX11__) || defined(__GFX12__)
inline constexpr bool kRegisterTight = true;
#else
inline constexpr bool kRegisterTight = false;
#endif
inline constexpr bool kAccColumnPairs = false;  // a lane's elements share its one column
typedef short OperandVector __attribute__((ext_vector_type(kOperandK)));
typedef float AccVector __attribute__((ext_vector_type(kAccElems)));
struct FragA {
  OperandVector v;
};
struct FragB {
  OperandVector v;
};
struct FragC {
  AccVector v;
};
inline constexpr int kAccRowSlots = kAccElems;
__device__ constexpr int accSlot(int e) {
  return e;
}
__device__ inline int laneId() {
  return static_cast<int>(threadIdx.x) % kWaveSize;
}
// The first k of this lane's operand values.
__device__ inline int operandK0() {
  return kOperandK == 16 ? 0 : kOperandK * (laneId() / 16);
}
__device__ inline int slotRow(int slot) {
#if defined(__GFX11__)
  return 2 * slot + laneId() / 16;
#elif defined(__GFX12__)
  return slot + 8 * (laneId() / 16);
#else
  return 4 * (laneId() / 16) + slot;
#endif
}
__device__ inline int accCol(int /*e*/) {
  return laneId() % 16;
}
__device__ inline void zero(FragC& c) {
  c.v = AccVector{};
}
__device__ inline float rowMax(float x) {
#pragma unroll
  for (int mask = 1; mask < 16; mask *= 2) {
    x = fmaxf(x, __shfl_xor(x, mask, kWaveSize));
  }
  return x;
}
__device__ inline float rowSum(float x) {
#pragma unroll
  for (int mask = 1; mask < 16; mask *= 2) {
    x += __shfl_xor(x, mask, kWaveSize);
  }
  return x;
}
// kOperandK contiguous bf16 (8 or 16 bytes aligned) as the operand vector.
__device__ inline OperandVector loadContiguous(const hip_bfloat16* p) {
  OperandVector v;
  __builtin_memcpy(&v, p, sizeof(v));
  return v;
}
__device__ inline void loadA(FragA& a, const hip_bfloat16* p, int ld) {
  a.v = loadContiguous(p + (laneId() % 16) * ld + operandK0());
}
__device__ inline void loadBt(FragB& b, const hip_bfloat16* p, int ld) {
  b.v = loadContiguous(p + (laneId() % 16) * ld + operandK0());
}
__device__ inline void loadB(FragB& b, const hip_bfloat16* p, int ld) {
  const auto* bits = reinterpret_cast<const short*>(p) + laneId() % 16 + operandK0() * ld;
#pragma unroll
  for (int i = 0; i < kOperandK; ++i) {
    b.v[i] = bits[i * ld];
  }
}
__device__ inline void mma(FragC& c, const FragA& a, const FragB& b) {
#if defined(__GFX11__)
  c.v = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32(a.v, b.v, c.v);
#elif defined(__GFX12__)
  c.v = __builtin_amdgcn_wmma_f32_16x16x16_bf16_w32_gfx12(a.v, b.v, c.v);
#else
  c.v = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a.v, b.v, c.v, 0, 0, 0);
#endif
}
// No asynchronous global -> LDS copy in HIP for these targets: a copy through registers, and
// nothing to commit or wait for (kAsyncCopyStages is 1).
__device__ inline void copy16Async(void* sharedDst, const void* globalSrc, bool valid) {
  *static_cast<uint4*>(sharedDst) =
      valid ? *static_cast<const uint4*>(globalSrc) : make_uint4(0, 0, 0, 0);
}
__device__ inline void copyAsyncCommit() {}
template <int Pending>
__device__ inline void copyAsyncWait() {}
// Orders this wave's shared-memory writes before its later reads (the lanes run in lockstep).
__device__ inline void waveSync() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
// The accumulator holds a column per lane, A wants a row per lane: through the wave's scratch.
__device__ inline void accToA(FragA& a, const FragC& c, hip_bfloat16* scratch) {
#pragma unroll
  for (int e = 0; e < kAccElems; ++e) {
    scratch[slotRow(accSlot(e)) * 16 + accCol(e)] = floatToBf16(c.v[e]);
  }
  waveSync();
  loadA(a, scratch, 16);
  waveSync();  // read before the next call writes
}
__device__ inline void accToASplit(FragA& hi, FragA& lo, const FragC& c, hip_bfloat16* scratch) {
  FragC rest;
#pragma unroll
  for (int e = 0; e < kAccElems; ++e) {
    rest.v[e] = c.v[e] - bf16ToFloat(floatToBf16(c.v[e]));
  }
  accToA(hi, c, scratch);
  accToA(lo, rest, scratch);
}
}  // namespace lorascope::gpu::mma
#endif
#endif  // LORASCOPE_GPU_DEVICE_CODE

namespace lorascope::gpu {
// The smallest wave any supported device has: host code sizes per-wave scratch with it.
inline constexpr int kMinWaveSize = 32;
inline constexpr int kMaxBlockThreads = 1024;
}  // namespace lorascope::gpu

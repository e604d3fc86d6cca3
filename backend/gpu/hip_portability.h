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

// Streams and events
#define hipStream_t cudaStream_t
#define hipStreamCreate cudaStreamCreate
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipStreamQuery cudaStreamQuery
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

namespace lorascope::gpu {

inline constexpr const char* kPlatformName = "NVIDIA (CUDA via HIP portability header)";
inline constexpr int kWaveSize = 32;  // every NVIDIA architecture

// "sm_90": NVIDIA names architectures by compute capability.
inline std::string deviceArchitecture(const hipDeviceProp_t& prop) {
  return "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
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
}  // namespace lorascope::gpu
#define LORASCOPE_GPU_DEVICE_CODE 1
#endif

#elif defined(LORASCOPE_GPU_AMD)

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

namespace lorascope::gpu {

inline constexpr const char* kPlatformName = "AMD (ROCm HIP)";

// "gfx1100:sramecc-:xnack-" -> "gfx1100": the target name without feature flags.
inline std::string deviceArchitecture(const hipDeviceProp_t& prop) {
  const std::string full = prop.gcnArchName;
  return full.substr(0, full.find(':'));
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
}  // namespace lorascope::gpu
#define LORASCOPE_GPU_DEVICE_CODE 1
#endif

#else
#error "hip_portability.h is only for the hip-amd and hip-nvidia flavours"
#endif

#if defined(LORASCOPE_GPU_DEVICE_CODE)
static_assert(sizeof(hip_bfloat16) == sizeof(std::uint16_t), "bf16 must be 16 bits on the device");
#endif

namespace lorascope::gpu {
// The smallest wave any supported device has: host code sizes per-wave scratch with it.
inline constexpr int kMinWaveSize = 32;
inline constexpr int kMaxBlockThreads = 1024;
}  // namespace lorascope::gpu

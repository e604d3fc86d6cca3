# cmake/Rocm.cmake — what the hip-amd flavour builds against, found in the ROCm install at
# LORASCOPE_ROCM_PATH (cmake/RocmToolchain.cmake chose it and the compiler). Included after
# project(). Defines:
#   lorascope_hip_runtime        imported target: the HIP runtime (amdhip64) and its headers
#   LORASCOPE_HIP_OFFLOAD_FLAGS  the flags that compile a .hip file for every target kept
#   LORASCOPE_AMD_BUILD_TARGETS  the targets of LORASCOPE_AMD_TARGETS the toolchain can compile
#   lorascope_hipblas            imported target, when hipBLAS ≥ 2 is installed
#   LORASCOPE_HIPBLAS_VERSION    its version text, or "" without it
# Nothing here names a distribution's paths: each file is looked for under the prefix, in the
# places AMD's packages and the distributions' put it, and found by its name.
set(_rocm "${LORASCOPE_ROCM_PATH}")

# --- HIP runtime ---------------------------------------------------------------------------
# hip-config.cmake (AMD's packages and Debian's libamdhip64-dev both ship it) provides hip::host;
# without it the library and the header are found by name.
find_package(hip CONFIG QUIET PATHS "${_rocm}" NO_DEFAULT_PATH)
if(NOT hip_FOUND)
  find_package(hip CONFIG QUIET)
endif()
add_library(lorascope_hip_runtime INTERFACE IMPORTED)
if(TARGET hip::host)
  target_link_libraries(lorascope_hip_runtime INTERFACE hip::host)
  set(_hip_how "hip::host from ${hip_DIR}")
else()
  find_library(LORASCOPE_AMDHIP64_LIBRARY amdhip64 HINTS "${_rocm}/lib" "${_rocm}/lib64" REQUIRED)
  find_path(LORASCOPE_HIP_INCLUDE_DIR hip/hip_runtime_api.h HINTS "${_rocm}/include" REQUIRED)
  target_link_libraries(lorascope_hip_runtime INTERFACE ${LORASCOPE_AMDHIP64_LIBRARY})
  target_include_directories(lorascope_hip_runtime SYSTEM INTERFACE ${LORASCOPE_HIP_INCLUDE_DIR})
  set(_hip_how "${LORASCOPE_AMDHIP64_LIBRARY}")
endif()
target_compile_definitions(lorascope_hip_runtime INTERFACE __HIP_PLATFORM_AMD__)
message(STATUS "hip-amd: ROCm at ${LORASCOPE_ROCM_PATH}; HIP runtime: ${_hip_how}")
# The ROCm chroot of scripts/rocm-chroot.sh lists its pinned packages; a build made in it keeps
# the list (build/hip-amd/rocm-packages.txt), so that every hip-amd build says what it used.
if(EXISTS /etc/lorascope/rocm-packages.txt)
  configure_file(/etc/lorascope/rocm-packages.txt ${CMAKE_BINARY_DIR}/rocm-packages.txt COPYONLY)
  message(STATUS "hip-amd: ROCm chroot packages recorded in ${CMAKE_BINARY_DIR}/rocm-packages.txt")
endif()

# --- device libraries and offload flags ------------------------------------------------------
# The AMDGPU device libraries (ocml.bc, oclc_isa_version_*.bc): AMD's packages put them under
# <prefix>/amdgcn/bitcode, distributions under their clang's resource dir or <prefix>/lib/....
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-resource-dir OUTPUT_VARIABLE _resource_dir
                OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
find_path(LORASCOPE_HIP_DEVICE_LIB_DIR ocml.bc
  HINTS "${_rocm}/amdgcn/bitcode" "${_rocm}/lib/amdgcn/bitcode" "${_resource_dir}/amdgcn/bitcode"
        "${_resource_dir}/lib/amdgcn/bitcode"
        "${_rocm}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/amdgcn/bitcode"
        "${_rocm}/lib/x86_64-linux-gnu/amdgcn/bitcode" "${_rocm}/llvm/lib/clang/amdgcn/bitcode"
  NO_DEFAULT_PATH)
if(NOT LORASCOPE_HIP_DEVICE_LIB_DIR)
  message(FATAL_ERROR "hip-amd: the AMDGPU device libraries (ocml.bc) are not installed under "
                      "${_rocm} nor in ${_resource_dir}; install ROCm's device libraries (AMD: "
                      "rocm-device-libs; Debian: rocm-device-libs-<clang version>)")
endif()
set(_base_flags -x hip --rocm-path=${_rocm} --hip-device-lib-path=${LORASCOPE_HIP_DEVICE_LIB_DIR})

# Each requested target is compiled once, on a kernel that uses the device libraries, the wave
# intrinsics and bf16 as ours do; a target the toolchain cannot compile (too old a clang, no
# device library for it) is dropped with the compiler's reason. Results are cached per compiler
# and target.
set(_probe_dir "${CMAKE_BINARY_DIR}/CMakeFiles/lorascope-amd-targets")
file(MAKE_DIRECTORY "${_probe_dir}")
file(WRITE "${_probe_dir}/probe.hip" [=[
#include <hip/hip_bfloat16.h>
#include <hip/hip_runtime.h>
__global__ void probe(const hip_bfloat16* in, float* out) {
  float v = static_cast<float>(in[threadIdx.x]);
  v = expf(v) + __shfl_xor(v, 1);
  out[threadIdx.x] = v;
}
]=])
get_target_property(_hip_includes lorascope_hip_runtime INTERFACE_INCLUDE_DIRECTORIES)
set(_probe_includes "")
foreach(_dir IN LISTS _hip_includes)
  if(_dir AND NOT _dir MATCHES "\\$<")
    list(APPEND _probe_includes -isystem ${_dir})
  endif()
endforeach()
set(LORASCOPE_AMD_BUILD_TARGETS "")
set(_dropped "")
foreach(_target IN LISTS LORASCOPE_AMD_TARGETS)
  set(_key "LORASCOPE_AMD_PROBE_${_target}")
  string(FIND "${${_key}}" "${CMAKE_CXX_COMPILER}|" _cached_at)
  if(NOT _cached_at EQUAL 0)
    execute_process(
      COMMAND ${CMAKE_CXX_COMPILER} ${_base_flags} -D__HIP_PLATFORM_AMD__ ${_probe_includes}
              --offload-arch=${_target} --offload-device-only -c probe.hip -o probe-${_target}.o
      WORKING_DIRECTORY "${_probe_dir}" RESULT_VARIABLE _rc ERROR_VARIABLE _err OUTPUT_QUIET)
    if(_rc EQUAL 0)
      set(_verdict "ok")
    else()
      string(REGEX MATCH "error:[^\n]*" _verdict "${_err}")
      if(NOT _verdict)
        set(_verdict "error: the compiler exited with ${_rc}")
      endif()
    endif()
    set(${_key} "${CMAKE_CXX_COMPILER}|${_verdict}" CACHE INTERNAL "hip-amd target probe")
  endif()
  string(REGEX REPLACE "^[^|]*\\|" "" _verdict "${${_key}}")
  if(_verdict STREQUAL "ok")
    list(APPEND LORASCOPE_AMD_BUILD_TARGETS ${_target})
  else()
    list(APPEND _dropped ${_target})
    message(WARNING "hip-amd: target ${_target} dropped: ${CMAKE_CXX_COMPILER} cannot compile "
                    "for it (${_verdict}). Its cards will have no kernels in this build; a newer "
                    "ROCm compiles it.")
  endif()
endforeach()
if(NOT LORASCOPE_AMD_BUILD_TARGETS)
  message(FATAL_ERROR "hip-amd: ${CMAKE_CXX_COMPILER} compiles none of LORASCOPE_AMD_TARGETS "
                      "(${LORASCOPE_AMD_TARGETS}); see the warnings above")
endif()
# What was kept, for scripts/check-amd-code-objects.sh and the build info.
set(LORASCOPE_AMD_COMPILED_TARGETS "${LORASCOPE_AMD_BUILD_TARGETS}" CACHE INTERNAL
    "the LORASCOPE_AMD_TARGETS this toolchain compiles")
set(LORASCOPE_AMD_DROPPED_TARGETS "${_dropped}" CACHE INTERNAL "targets the toolchain cannot compile")
string(REPLACE ";" ", " _kept_text "${LORASCOPE_AMD_BUILD_TARGETS}")
message(STATUS "hip-amd: kernels for ${_kept_text}")
set(LORASCOPE_HIP_OFFLOAD_FLAGS ${_base_flags})
foreach(_target IN LISTS LORASCOPE_AMD_BUILD_TARGETS)
  list(APPEND LORASCOPE_HIP_OFFLOAD_FLAGS --offload-arch=${_target})
endforeach()

# --- hipBLAS (the vendor GEMM) ------------------------------------------------------------
# Optional: without hipBLAS ≥ 2 (hipDataType operands, hipblasComputeType_t) the built-in GEMM is
# the only one and selecting the vendor one says why.
set(LORASCOPE_HIPBLAS_VERSION "")
find_package(hipblas CONFIG QUIET PATHS "${_rocm}" NO_DEFAULT_PATH)
if(NOT hipblas_FOUND)
  find_package(hipblas CONFIG QUIET)
endif()
find_path(LORASCOPE_HIPBLAS_INCLUDE_DIR hipblas/hipblas-version.h HINTS "${_rocm}/include")
if(LORASCOPE_HIPBLAS_INCLUDE_DIR)
  file(STRINGS "${LORASCOPE_HIPBLAS_INCLUDE_DIR}/hipblas/hipblas-version.h" _lines
       REGEX "#define hipblasVersion(Major|Minor|Patch) ")
  set(_parts "")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE ".* ([0-9]+).*" "\\1" _number "${_line}")
    list(APPEND _parts ${_number})
  endforeach()
  string(JOIN "." _hipblas_version ${_parts})
  list(GET _parts 0 _hipblas_major)
  if(_hipblas_major GREATER_EQUAL 2)
    add_library(lorascope_hipblas INTERFACE IMPORTED)
    if(TARGET roc::hipblas)
      target_link_libraries(lorascope_hipblas INTERFACE roc::hipblas)
      set(_hipblas_how "roc::hipblas from ${hipblas_DIR}")
    else()
      find_library(LORASCOPE_HIPBLAS_LIBRARY hipblas HINTS "${_rocm}/lib" "${_rocm}/lib64" REQUIRED)
      target_link_libraries(lorascope_hipblas INTERFACE ${LORASCOPE_HIPBLAS_LIBRARY})
      target_include_directories(lorascope_hipblas SYSTEM INTERFACE
                                 ${LORASCOPE_HIPBLAS_INCLUDE_DIR})
      set(_hipblas_how "${LORASCOPE_HIPBLAS_LIBRARY}")
    endif()
    set(LORASCOPE_HIPBLAS_VERSION "${_hipblas_version}")
    message(STATUS "hip-amd: vendor GEMM: hipBLAS ${_hipblas_version} (${_hipblas_how})")
  else()
    message(STATUS "hip-amd: vendor GEMM: none (hipBLAS ${_hipblas_version} found; GemmEx with "
                   "hipDataType needs hipBLAS >= 2, ROCm 6); the built-in GEMM only")
  endif()
else()
  message(STATUS "hip-amd: vendor GEMM: none (no hipBLAS under ${_rocm}); the built-in GEMM only")
endif()

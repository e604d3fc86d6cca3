# cmake/RocmToolchain.cmake — the hip-amd flavour against a standard ROCm install. Included by the
# top-level CMakeLists.txt before project() (it picks the compiler) when LORASCOPE_GPU is amd.
#
# LORASCOPE_ROCM_PATH: the install prefix. Default: what `hipconfig --rocmpath` says, else
# /opt/rocm (AMD's packages), else /usr (a distribution's, e.g. Debian's libamdhip64-dev).
# The C++ compiler is ROCm's clang (the one hipcc drives): `hipconfig --hipclangpath`, else
# <prefix>/llvm/bin, else the newest clang++-N on PATH whose resource dir has the AMDGPU device
# libraries. A CMAKE_CXX_COMPILER given on the command line wins.
set(LORASCOPE_ROCM_PATH "" CACHE PATH
    "ROCm install prefix (default: hipconfig --rocmpath, else /opt/rocm, else /usr)")

if(NOT LORASCOPE_ROCM_PATH)
  find_program(LORASCOPE_HIPCONFIG hipconfig PATHS /opt/rocm/bin NO_CACHE)
  set(_rocm_path "")
  if(LORASCOPE_HIPCONFIG)
    execute_process(COMMAND ${LORASCOPE_HIPCONFIG} --rocmpath OUTPUT_VARIABLE _rocm_path
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(NOT _rc EQUAL 0 OR NOT EXISTS "${_rocm_path}/include/hip/hip_runtime.h")
      set(_rocm_path "")
    endif()
  endif()
  if(NOT _rocm_path)
    foreach(_candidate /opt/rocm /usr)
      if(EXISTS "${_candidate}/include/hip/hip_runtime.h")
        set(_rocm_path "${_candidate}")
        break()
      endif()
    endforeach()
  endif()
  if(NOT _rocm_path)
    message(FATAL_ERROR
      "hip-amd: no ROCm install found (no hipconfig on PATH, no hip/hip_runtime.h under /opt/rocm "
      "or /usr). Install ROCm (AMD's packages, or your distribution's HIP development package, "
      "e.g. Debian's libamdhip64-dev and hipcc) or pass -DLORASCOPE_ROCM_PATH=<prefix>.")
  endif()
  set(LORASCOPE_ROCM_PATH "${_rocm_path}" CACHE PATH
      "ROCm install prefix (default: hipconfig --rocmpath, else /opt/rocm, else /usr)" FORCE)
endif()
list(APPEND CMAKE_PREFIX_PATH "${LORASCOPE_ROCM_PATH}")

if(NOT CMAKE_CXX_COMPILER)
  set(_clang_dirs "")
  if(LORASCOPE_HIPCONFIG)
    execute_process(COMMAND ${LORASCOPE_HIPCONFIG} --hipclangpath OUTPUT_VARIABLE _clang_dir
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(APPEND _clang_dirs "${_clang_dir}")
  endif()
  list(APPEND _clang_dirs "${LORASCOPE_ROCM_PATH}/llvm/bin" "${LORASCOPE_ROCM_PATH}/lib/llvm/bin")
  foreach(_dir IN LISTS _clang_dirs)
    if(_dir AND EXISTS "${_dir}/clang++")
      set(CMAKE_CXX_COMPILER "${_dir}/clang++" CACHE FILEPATH "ROCm's clang" FORCE)
      break()
    endif()
  endforeach()
  if(NOT CMAKE_CXX_COMPILER)
    # A distribution's hipcc drives a versioned clang (Debian: clang++-21 for hipcc 7.0).
    foreach(_version RANGE 30 17 -1)
      find_program(_clang clang++-${_version} NO_CACHE)
      if(_clang)
        set(CMAKE_CXX_COMPILER "${_clang}" CACHE FILEPATH "ROCm's clang" FORCE)
        break()
      endif()
    endforeach()
  endif()
  if(NOT CMAKE_CXX_COMPILER)
    message(FATAL_ERROR "hip-amd: no clang for HIP found (hipconfig --hipclangpath, "
                        "${LORASCOPE_ROCM_PATH}/llvm/bin, clang++-N on PATH); pass "
                        "-DCMAKE_CXX_COMPILER=<ROCm's clang++>")
  endif()
endif()

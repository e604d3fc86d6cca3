// GpuOrSkip.h — the one way a GPU test or benchmark gets its device, or skips: without a GPU
// (cpu flavour, no device, driver missing) it prints "SKIP: <program> needs a GPU: <reason>" and
// the program exits with kSkipExitCode (77), which CTest reports as skipped (SKIP_RETURN_CODE in
// tests/CMakeLists.txt). Qt-free: the GPU programs build on the device machine, which has no Qt.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "compute/Backend.h"
#include "compute/Errors.h"

namespace lorascope::test {

inline constexpr int kSkipExitCode = 77;

// Thrown by requireGpu; the program's main catches it, prints skipMessage and returns 77.
struct NoGpu {
  std::string reason;
};

// The GPU backend of device 0; throws NoGpu (with the backend's reason) where there is none.
inline std::unique_ptr<compute::Backend> requireGpu() {
  try {
    return compute::createGpuBackend(0);
  } catch (const compute::NoGpuError& e) {
    throw NoGpu{e.what()};
  }
}

// Prints why `program` is skipped; returns kSkipExitCode for main to return.
inline int skipWithoutGpu(const std::string& program, const std::string& reason) {
  std::printf("SKIP: %s needs a GPU: %s\n", program.c_str(), reason.c_str());
  std::fflush(stdout);
  return kSkipExitCode;
}

// The GPU backend of device 0, or nullptr after printing why `program` is skipped (main then
// returns kSkipExitCode).
inline std::unique_ptr<compute::Backend> gpuOrSkip(const std::string& program) {
  try {
    return requireGpu();
  } catch (const NoGpu& none) {
    skipWithoutGpu(program, none.reason);
    return nullptr;
  }
}

}  // namespace lorascope::test

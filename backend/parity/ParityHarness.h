// parity/ParityHarness.h — compares a HIP op with its CPU twin at a per-op tolerance.
//
// Adding an op (say `foo`, forward and backward), every file it touches, bottom to top:
//   backend/compute/Backend.h          the virtual fooForward/fooBackward on Backend
//   backend/compute/Backend.cpp        checkFooArgs: shapes and dtypes, errors named "foo_forward"
//   backend/compute/cpu/foo.{h,cpp}    the CPU twin: plain loops, every GPU kernel's reference
//   backend/compute/cpu/CpuBackend.cpp the override (checkFooArgs, then cpu::foo…, timed under a
//                                      CpuOp of cpu/op_times.{h,cpp} for `bench --profile`)
//   backend/compute/hip/foo.{h,hip}    the kernels and their launchers; launch("foo_forward", …)
//                                      (hip/launch.h) names the op for fault injection
//                                      (LORASCOPE_FAULTS) and per-op timing (runtime/OpTiming)
//                                      (or add them to an existing family: elementwise, …)
//   backend/compute/hip/HipBackend.h   the override's declaration
//   backend/compute/hip/HipBackendOps<Family>.cpp  the override: checkFooArgs, then hip::foo…
//   backend/compute/CMakeLists.txt     cpu/foo.cpp in lorascope_compute, hip/foo.hip in the kernels
//   tests/compute/test_op_foo.cpp      the CPU op against a naive loop / finite differences
//   tests/compute/CMakeLists.txt       `foo` in the foreach of ops
//   backend/parity/cases_foo.cpp       fooCases(): shapes (odd sizes, one tile, several) and the
//                                      Tolerance, each case built with compareBackends
//   backend/parity/ParityHarness.h     declare fooCases() below
//   backend/parity/ParitySuite.cpp     add fooCases to allCases (parity_ops and doctor run them)
//   backend/parity/CMakeLists.txt      cases_foo.cpp in lorascope_parity
// Then the caller: backend/model/Forward.cpp (inference) or backend/train/TrainGraph.cpp
// (training), and, if it holds new activations or scratch, the memory model in
// backend/model/MemoryEstimate.cpp. Check on the device machine: scripts/gpu-check.sh run parity.
//
// A case uploads the same inputs to both backends (rounded to the GPU's dtype first, so both see
// identical values), runs the op on each, and compares every output element:
//   |gpu − cpu| ≤ atol + rtol·|cpu|,  atol = atolOfRms · rms(cpu output) + absoluteFloor
// Scaling atol by the output's RMS keeps the check meaningful for outputs of any magnitude. The
// floor is for outputs that are zero in exact arithmetic (attention gradients at S = 1), where
// the RMS is itself rounding noise.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "compute/Backend.h"

namespace lorascope::parity {

struct Tolerance {
  double atolOfRms = 0.0;
  double rtol = 0.0;
  double absoluteFloor = 0.0;
};

struct Comparison {
  std::string output;        // which output of the op, e.g. "y"
  double maxAbsError = 0.0;  // max |gpu − cpu|
  double worstRatio = 0.0;   // max |gpu − cpu| / allowed; ≤ 1 passes
  std::int64_t worstIndex = -1;
  std::int64_t failures = 0;  // elements over tolerance
  bool pass() const { return failures == 0; }
};

Comparison compareOutputs(const std::string& output, std::span<const float> reference,
                          std::span<const float> candidate, Tolerance tolerance);

struct ParityCase {
  std::string op;     // "rmsnorm_forward"
  std::string shape;  // "rows=7 dim=896 weight=bf16"
  Tolerance tolerance;
  std::function<std::vector<Comparison>(compute::Backend& cpu, compute::Backend& gpu,
                                        std::mt19937& rng)>
      run;
};

// Random values the way activations look: normal(mean, stddev).
std::vector<float> randomNormal(std::mt19937& rng, std::size_t count, float mean, float stddev);
// What a value becomes once stored in `dtype` (identity for f32).
std::vector<float> roundTo(compute::DType dtype, std::vector<float> values);

// The outputs of one op run, each downloaded as floats.
using OpOutputs = std::vector<std::vector<float>>;
// Runs `body` on the CPU backend, then on the GPU backend, and compares output i of the two
// under names[i], all at `tolerance`.
std::vector<Comparison> compareBackends(compute::Backend& cpu, compute::Backend& gpu,
                                        const std::vector<std::string>& names, Tolerance tolerance,
                                        const std::function<OpOutputs(compute::Backend&)>& body);
// For bad input: passes (one comparison named "error") when `body` throws ShapeError on both
// backends with `expected` in both messages; maxAbsError stays 0, worstRatio is 1 on a miss.
Comparison compareShapeErrors(compute::Backend& cpu, compute::Backend& gpu,
                              const std::string& expected,
                              const std::function<void(compute::Backend&)>& body);

// Selects `impl` on `gpu` for one case and puts the previous selection back after it, so cases of
// other ops see the default.
class GemmSelection {
 public:
  GemmSelection(compute::Backend& gpu, compute::GemmImplementation impl)
      : gpu_(gpu), previous_(gpu.gemmImplementation()) {
    gpu_.setGemmImplementation(impl);
  }
  ~GemmSelection() { gpu_.setGemmImplementation(previous_); }
  GemmSelection(const GemmSelection&) = delete;
  GemmSelection& operator=(const GemmSelection&) = delete;

 private:
  compute::Backend& gpu_;
  compute::GemmImplementation previous_;
};

// One list per op family; parity_main.cpp and `lorascope-train doctor` run them all.
std::vector<ParityCase> rmsnormCases();
std::vector<ParityCase> attentionCases();
std::vector<ParityCase> lmHeadCases();
std::vector<ParityCase> optimizerCases();
std::vector<ParityCase> gemmCases(bool vendorGemm);  // vendorGemm: the build has a vendor BLAS
std::vector<ParityCase> elementwiseCases();
std::vector<ParityCase> nf4Cases(bool vendorGemm);  // dequantize, and matmul with an NF4 b

// --- the whole suite (ParitySuite.cpp), shared by parity_ops and `lorascope-train doctor` ---

// Selects the vendor GEMM on `gpu` when the build has one; otherwise returns false and says why
// in `note` (an AMD build without hipBLAS).
bool selectVendorGemm(compute::Backend& gpu, std::string& note);
// Every case of every family, the vendor GEMM's only when `vendorGemm`.
std::vector<ParityCase> allCases(bool vendorGemm);

struct CaseOutcome {
  std::vector<Comparison> results;
  std::string error;  // what the case threw, "" when it ran
  bool pass() const;
};
CaseOutcome runCase(const ParityCase& c, compute::Backend& cpu, compute::Backend& gpu,
                    std::mt19937& rng);
// The seed parity_ops and doctor draw inputs from.
inline constexpr std::uint32_t kParitySeed = 20261126;

}  // namespace lorascope::parity

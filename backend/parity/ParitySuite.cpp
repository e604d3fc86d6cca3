// parity/ParitySuite.cpp — the whole parity suite: every family's cases, the vendor GEMM's where
// the build has one, and one case run with its error caught. parity_ops and `lorascope-train
// doctor` (which links this library, lorascope_parity) both run it.
#include <exception>

#include "ParityHarness.h"
#include "compute/Errors.h"

namespace lorascope::parity {

bool selectVendorGemm(compute::Backend& gpu, std::string& note) {
  try {
    gpu.setGemmImplementation(compute::GemmImplementation::Vendor);
    return true;
  } catch (const compute::UnsupportedOpError& e) {
    note = e.what();
    return false;
  }
}

std::vector<ParityCase> allCases(bool vendorGemm) {
  std::vector<ParityCase> cases;
  for (auto family : {rmsnormCases, attentionCases, lmHeadCases, elementwiseCases}) {
    std::vector<ParityCase> more = family();
    cases.insert(cases.end(), more.begin(), more.end());
  }
  std::vector<ParityCase> gemm = gemmCases(vendorGemm);
  cases.insert(cases.end(), gemm.begin(), gemm.end());
  std::vector<ParityCase> nf4 = nf4Cases(vendorGemm);
  cases.insert(cases.end(), nf4.begin(), nf4.end());
  std::vector<ParityCase> optimizer = optimizerCases();
  cases.insert(cases.end(), optimizer.begin(), optimizer.end());
  return cases;
}

bool CaseOutcome::pass() const {
  if (!error.empty()) {
    return false;
  }
  for (const Comparison& r : results) {
    if (!r.pass()) {
      return false;
    }
  }
  return true;
}

CaseOutcome runCase(const ParityCase& c, compute::Backend& cpu, compute::Backend& gpu,
                    std::mt19937& rng) {
  CaseOutcome outcome;
  try {
    outcome.results = c.run(cpu, gpu, rng);
  } catch (const std::exception& e) {
    outcome.error = e.what();
  }
  return outcome;
}

}  // namespace lorascope::parity

// parity/parity_main.cpp — runs every parity case and prints one line per output compared.
//   parity_ops [--json FILE] [--filter OP]
// Exit: 0 all pass, 1 a case failed, 77 no GPU (skipped, with the reason printed).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "GpuOrSkip.h"
#include "compute/Errors.h"
#include "parity/ParityHarness.h"

using namespace lorascope;

int main(int argc, char** argv) {
  const char* jsonPath = nullptr;
  const char* filter = nullptr;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--json") == 0) {
      jsonPath = argv[i + 1];
    } else if (std::strcmp(argv[i], "--filter") == 0) {
      filter = argv[i + 1];
    }
  }
  const std::unique_ptr<compute::Backend> gpu = test::gpuOrSkip("parity_ops");
  if (!gpu) {
    return test::kSkipExitCode;
  }
  const std::unique_ptr<compute::Backend> cpu = compute::createCpuBackend();
  std::cout << "parity: " << gpu->capabilities().name << " vs " << cpu->capabilities().name << "\n";

  // The vendor GEMM's cases run where the build has one (an AMD build may lack hipBLAS).
  std::string note;
  const bool vendorGemm = parity::selectVendorGemm(*gpu, note);
  if (!vendorGemm) {
    std::cout << "note: vendor GEMM cases skipped: " << note << "\n";
  }
  const std::vector<parity::ParityCase> cases = parity::allCases(vendorGemm);
  nlohmann::json report = nlohmann::json::array();
  int failed = 0;
  int run = 0;
  std::mt19937 rng(parity::kParitySeed);
  for (const parity::ParityCase& c : cases) {
    if (filter != nullptr && c.op.find(filter) == std::string::npos) {
      continue;
    }
    ++run;
    const parity::CaseOutcome outcome = parity::runCase(c, *cpu, *gpu, rng);
    const std::vector<parity::Comparison>& results = outcome.results;
    const std::string& error = outcome.error;
    const bool ok = outcome.pass();
    for (const parity::Comparison& r : results) {
      std::printf("%-4s %-18s %-32s %-5s max_abs_err=%.3g worst/allowed=%.3f\n",
                  r.pass() ? "ok" : "FAIL", c.op.c_str(), c.shape.c_str(), r.output.c_str(),
                  r.maxAbsError, r.worstRatio);
      report.push_back({{"op", c.op},
                        {"shape", c.shape},
                        {"output", r.output},
                        {"max_abs_error", r.maxAbsError},
                        {"worst_ratio", r.worstRatio},
                        {"failures", r.failures}});
    }
    if (!error.empty()) {
      std::printf("FAIL %-18s %-32s error: %s\n", c.op.c_str(), c.shape.c_str(), error.c_str());
      report.push_back({{"op", c.op}, {"shape", c.shape}, {"error", error}});
    }
    failed += ok ? 0 : 1;
  }
  if (jsonPath != nullptr) {
    std::ofstream(jsonPath) << report.dump(2) << "\n";
  }
  std::cout << run - failed << "/" << run << " cases passed\n";
  return failed == 0 ? 0 : 1;
}

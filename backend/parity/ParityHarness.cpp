// parity/ParityHarness.cpp — element-wise comparison and input generation for parity cases.
#include "ParityHarness.h"

#include <cmath>

#include "compute/Bf16.h"
#include "compute/Errors.h"

namespace lorascope::parity {

Comparison compareOutputs(const std::string& output, std::span<const float> reference,
                          std::span<const float> candidate, Tolerance tolerance) {
  Comparison result;
  result.output = output;
  if (reference.size() != candidate.size()) {
    result.failures = static_cast<std::int64_t>(std::max(reference.size(), candidate.size()));
    return result;
  }
  double sumSquares = 0.0;
  for (float v : reference) {
    sumSquares += static_cast<double>(v) * v;
  }
  const double rms = reference.empty() ? 0.0 : std::sqrt(sumSquares / reference.size());
  const double atol = tolerance.atolOfRms * rms + tolerance.absoluteFloor + 1e-30;
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double error = std::fabs(static_cast<double>(candidate[i]) - reference[i]);
    const double allowed = atol + tolerance.rtol * std::fabs(static_cast<double>(reference[i]));
    const double ratio = std::isnan(error) ? INFINITY : error / allowed;
    if (ratio > result.worstRatio) {
      result.worstRatio = ratio;
      result.worstIndex = static_cast<std::int64_t>(i);
    }
    result.maxAbsError = std::max(result.maxAbsError, error);
    if (!(ratio <= 1.0)) {
      ++result.failures;
    }
  }
  return result;
}

std::vector<float> randomNormal(std::mt19937& rng, std::size_t count, float mean, float stddev) {
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<float> out(count);
  for (float& v : out) {
    v = dist(rng);
  }
  return out;
}

std::vector<float> roundTo(compute::DType dtype, std::vector<float> values) {
  if (dtype == compute::DType::BF16) {
    for (float& v : values) {
      v = compute::roundToBf16(v);
    }
  }
  return values;
}

std::vector<Comparison> compareBackends(compute::Backend& cpu, compute::Backend& gpu,
                                        const std::vector<std::string>& names, Tolerance tolerance,
                                        const std::function<OpOutputs(compute::Backend&)>& body) {
  const OpOutputs reference = body(cpu);
  const OpOutputs candidate = body(gpu);
  std::vector<Comparison> results;
  for (std::size_t i = 0; i < names.size(); ++i) {
    results.push_back(compareOutputs(names[i], reference.at(i), candidate.at(i), tolerance));
  }
  return results;
}

Comparison compareShapeErrors(compute::Backend& cpu, compute::Backend& gpu,
                              const std::string& expected,
                              const std::function<void(compute::Backend&)>& body) {
  Comparison result;
  result.output = "error";
  for (compute::Backend* backend : {&cpu, &gpu}) {
    bool matched = false;
    try {
      body(*backend);
    } catch (const compute::ShapeError& e) {
      matched = std::string(e.what()).find(expected) != std::string::npos;
    }
    if (!matched) {
      ++result.failures;
      result.worstRatio = 1.0;
    }
  }
  return result;
}

}  // namespace lorascope::parity

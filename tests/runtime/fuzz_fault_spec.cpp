// fuzz_fault_spec.cpp — libFuzzer: LORASCOPE_FAULTS specs either parse or throw FaultSpecError;
// a parsed spec drives an injector through launches and steps without crashing.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "runtime/FaultInjection.h"

using namespace lorascope::runtime;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view spec(reinterpret_cast<const char*>(data), size);
  FaultConfig config;
  try {
    config = parseFaultSpec(spec);
  } catch (const FaultSpecError&) {
    return 0;
  }
  for (FaultRule& rule : config.rules) {
    if (rule.kind == FaultKind::Hang) {
      rule.kind = FaultKind::OutOfMemory;  // a hang would block the fuzzer
    }
  }
  std::erase(config.randomKinds, FaultKind::Hang);
  if (config.randomKinds.empty()) {
    config.randomRate = 0.0;
  }
  FaultInjector injector(config);
  for (int i = 0; i < 64; ++i) {
    try {
      injector.atStep(i);
      injector.atLaunch(i % 2 ? "matmul" : "rope");
    } catch (const InjectedFault&) {
    }
  }
  return 0;
}

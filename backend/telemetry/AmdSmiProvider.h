// AmdSmiProvider.h — AMD GPUs through AMD SMI (libamd_smi.so, the successor of rocm-smi in ROCm
// 6 and 7), opened at run time like rocm-smi and NVML: no build-time dependency on amdsmi.h (the
// declarations in AmdSmiAbi.h are checked against ROCm 6.4's header at compile time in CI).
//
// Per device: VRAM, CPU-visible VRAM and GTT total/used, graphics and memory-controller busy %,
// edge temperature, socket power, graphics and memory clocks. Per process: PID, VRAM, GTT, SDMA
// time, CU occupancy.
//
// Tested here against a fixture library (tests/telemetry/fake_amd_smi.cpp) that answers with
// recorded values, and with the library absent or wrong. Live values are UNTESTED: no AMD GPU
// is available to this project's machines.
#pragma once

#include <string>
#include <vector>

#include "telemetry/AmdSmiAbi.h"    // defines: amdsmi::Api
#include "telemetry/SmiProvider.h"  // defines: SmiProvider

namespace lorascope::telemetry {

class AmdSmiProvider : public SmiProvider<amdsmi::Api> {
 public:
  // `libraryNames`: the file names tried in order; `kfdNode`: the device node whose absence
  // means no AMD compute device (no driver, or not passed into a container).
  explicit AmdSmiProvider(std::vector<std::string> libraryNames = defaultLibraryNames(),
                          std::string kfdNode = "/dev/kfd");

  static std::vector<std::string> defaultLibraryNames();

  bool init() override;
  bool refresh(Snapshot& out) override;

 private:
  std::vector<SymbolSpec> symbolTable();
  // Empty when the library's major version is the one whose structs were checked.
  std::string versionProblem() const;
  DeviceReading readDevice(std::size_t index) const;
  void readProcesses(std::size_t index, Snapshot& out) const;

  std::vector<amdsmi::Handle> processors_;  // AMD GPUs, in the library's order
};

}  // namespace lorascope::telemetry

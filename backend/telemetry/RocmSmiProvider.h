// RocmSmiProvider.h — AMD GPUs through librocm_smi64, opened at run time (no build-time
// dependency on rocm_smi.h: the few types and constants used are declared in RocmSmiAbi.h, checked
// at compile time against rocm_smi.h of ROCm 6.4).
//
// Per device: VRAM, CPU-visible VRAM and GTT total/used, busy %, memory busy %, edge
// temperature, power, system and memory clocks. Per process (KFD compute processes): PID, VRAM,
// SDMA time, CU occupancy.
//
// Tested here: loading with the library absent, the symbol table against a real librocm_smi64
// where one is installed, init on a machine without an AMD GPU, the decoding of the clock struct,
// and (CI, ROCm 6.4 chroot) the declarations against rocm_smi.h. Live values are UNTESTED: no AMD
// GPU is available to this project's machines.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/RocmSmiAbi.h"   // defines: rsmi::Api
#include "telemetry/SmiProvider.h"  // defines: SmiProvider

namespace lorascope::telemetry {

// rsmi_frequencies_t changed layout in ROCm 6 (a leading `bool has_deep_sleep`). Given the raw
// bytes the library filled, returns the current frequency in Hz under whichever layout is
// self-consistent (1 <= num_supported <= 32, current < num_supported), or nullopt.
std::optional<std::uint64_t> decodeRsmiCurrentFrequencyHz(const unsigned char* bytes,
                                                          std::size_t size);

class RocmSmiProvider : public SmiProvider<rsmi::Api> {
 public:
  // `libraryNames`: the file names tried in order; the default is the versioned names of ROCm
  // 7 down to 5, then the unversioned one and /opt/rocm/lib.
  explicit RocmSmiProvider(std::vector<std::string> libraryNames = defaultLibraryNames());

  static std::vector<std::string> defaultLibraryNames();

  bool init() override;
  bool refresh(Snapshot& out) override;

 private:
  using ProcessInfo = rsmi::ProcessInfo;
  std::vector<SymbolSpec> symbolTable();
  DeviceReading readDevice(std::uint32_t index) const;
  void readProcesses(Snapshot& out) const;
  std::vector<std::uint32_t> processDevices(std::uint32_t pid) const;
};

}  // namespace lorascope::telemetry

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

#include "telemetry/DynamicLibrary.h"
#include "telemetry/Provider.h"
#include "telemetry/RocmSmiAbi.h"

namespace lorascope::telemetry {

// rsmi_frequencies_t changed layout in ROCm 6 (a leading `bool has_deep_sleep`). Given the raw
// bytes the library filled, returns the current frequency in Hz under whichever layout is
// self-consistent (1 <= num_supported <= 32, current < num_supported), or nullopt.
std::optional<std::uint64_t> decodeRsmiCurrentFrequencyHz(const unsigned char* bytes,
                                                          std::size_t size);

class RocmSmiProvider : public Provider {
 public:
  // `libraryNames`: the file names tried in order; the default is the versioned names of ROCm
  // 7 down to 5, then the unversioned one and /opt/rocm/lib.
  explicit RocmSmiProvider(std::vector<std::string> libraryNames = defaultLibraryNames());
  ~RocmSmiProvider() override;

  static std::vector<std::string> defaultLibraryNames();

  std::string name() const override { return "rocm-smi"; }
  bool init() override;
  std::vector<DeviceInfo> devices() const override { return devices_; }
  bool refresh(Snapshot& out) override;
  std::string lastError() const override { return lastError_; }

  // After init(): the library that opened and the optional symbols it lacks (for `devices`).
  const LoadResult& loadResult() const { return load_; }

 private:
  using ProcessInfo = rsmi::ProcessInfo;
  std::vector<SymbolSpec> symbolTable();
  std::string statusText(int status) const;
  DeviceReading readDevice(std::uint32_t index) const;
  void readProcesses(Snapshot& out) const;
  std::vector<std::uint32_t> processDevices(std::uint32_t pid) const;

  std::vector<std::string> libraryNames_;
  DynamicLibrary library_;
  LoadResult load_;
  rsmi::Api api_;
  std::vector<DeviceInfo> devices_;
  std::string lastError_;
  bool initialised_ = false;
};

}  // namespace lorascope::telemetry

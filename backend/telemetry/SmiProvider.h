// SmiProvider.h — the skeleton the two AMD SMI providers share (RocmSmiProvider: librocm_smi64;
// AmdSmiProvider: libamd_smi, its successor): the library opened at run time from a symbol table
// (DynamicLibrary.h), a check of the library itself, the KFD device node looked for before the
// library's init (without it init can only fail, and ROCm 5 prints its exception to the terminal
// on the way), init and shut-down, status codes in words, the device list, and the six memory
// readings both libraries take as (device, memory type).
//
// `Api` is the library's table of entry points (rsmi::Api, amdsmi::Api): both have init(flags),
// shutDown(), statusString(status, &text), memoryTotal and memoryUsage(device, type, &bytes).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/DynamicLibrary.h"  // defines: DynamicLibrary, LoadResult, SymbolSpec
#include "telemetry/Provider.h"

namespace lorascope::telemetry {

template <typename Api>
class SmiProvider : public Provider {
 public:
  ~SmiProvider() override;

  std::string name() const override { return names_.provider; }
  std::vector<DeviceInfo> devices() const override { return devices_; }
  std::string lastError() const override { return lastError_; }

  // After init(): the library that opened and the optional symbols it lacks (for `devices`).
  const LoadResult& loadResult() const { return load_; }

 protected:
  struct Names {
    const char* provider;      // "rocm-smi": the provider's name and its messages' subject
    const char* initFunction;  // "rsmi_init": named when init fails
    const char* statusPrefix;  // "rsmi status": a status code the library cannot put in words
  };
  // The library's memory types (rocm_smi.h and amdsmi.h number them alike; each ABI header says).
  struct MemoryTypes {
    int vram;
    int visibleVram;
    int gtt;
  };
  SmiProvider(Names names, std::vector<std::string> libraryNames, std::string kfdNode);

  // Opens the first of the library names that resolves `symbols`, asks `checkLibrary` (empty
  // when the library is usable, else why not), looks for the KFD node and calls the library's
  // init(initFlags). False with lastError_ saying why; after true, the derived class lists the
  // devices into devices_.
  bool openLibrary(const std::vector<SymbolSpec>& symbols, std::uint64_t initFlags,
                   const std::function<std::string()>& checkLibrary = {});
  std::string statusText(int status) const;
  // devices_ as `count` devices "AMD GPU <i>", each then given its name and bus id by
  // `describe` where the library knows them; clears lastError_.
  void listDevices(std::size_t count,
                   const std::function<void(std::size_t index, DeviceInfo& info)>& describe);
  // "0000:03:00.0", the bus id both libraries encode (each in its own bit layout).
  static std::string pciBusId(std::uint64_t domain, std::uint64_t bus, std::uint64_t device,
                              std::uint64_t function);
  // Empties `out`; false with lastError_ set when init() has not succeeded.
  bool beginRefresh(Snapshot& out);
  // The reading of device `index` (`device`: the library's index or handle for it) with its
  // VRAM, CPU-visible VRAM and GTT, total and used.
  template <typename Device>
  DeviceReading readMemory(std::size_t index, Device device, const MemoryTypes& types) const;

  Api api_;
  std::vector<DeviceInfo> devices_;
  std::string lastError_;

 private:
  Names names_;
  std::vector<std::string> libraryNames_;
  std::string kfdNode_;
  DynamicLibrary library_;
  LoadResult load_;
  bool initialised_ = false;
};

template <typename Api>
template <typename Device>
DeviceReading SmiProvider<Api>::readMemory(std::size_t index, Device device,
                                           const MemoryTypes& types) const {
  DeviceReading r;
  r.index = static_cast<int>(index);
  const auto read = [&](auto fn, int type) -> std::optional<std::uint64_t> {
    std::uint64_t bytes = 0;
    return fn(device, type, &bytes) == 0 ? std::optional(bytes) : std::nullopt;  // 0: success
  };
  r.vramTotalBytes = read(api_.memoryTotal, types.vram);
  r.vramUsedBytes = read(api_.memoryUsage, types.vram);
  r.visibleVramTotalBytes = read(api_.memoryTotal, types.visibleVram);
  r.visibleVramUsedBytes = read(api_.memoryUsage, types.visibleVram);
  r.gttTotalBytes = read(api_.memoryTotal, types.gtt);
  r.gttUsedBytes = read(api_.memoryUsage, types.gtt);
  return r;
}

}  // namespace lorascope::telemetry

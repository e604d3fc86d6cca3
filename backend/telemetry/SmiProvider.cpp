// SmiProvider.cpp — the AMD SMI providers' shared skeleton, instantiated for both libraries.
#include "telemetry/SmiProvider.h"

#include <cstdio>
#include <filesystem>

#include "telemetry/AmdSmiAbi.h"   // defines: amdsmi::Api
#include "telemetry/RocmSmiAbi.h"  // defines: rsmi::Api

namespace lorascope::telemetry {
namespace {

constexpr int kSuccess = 0;  // RSMI_STATUS_SUCCESS and AMDSMI_STATUS_SUCCESS
static_assert(rsmi::kSuccess == kSuccess && amdsmi::kSuccess == kSuccess);

}  // namespace

template <typename Api>
SmiProvider<Api>::SmiProvider(Names names, std::vector<std::string> libraryNames,
                              std::string kfdNode)
    : names_(names), libraryNames_(std::move(libraryNames)), kfdNode_(std::move(kfdNode)) {}

template <typename Api>
SmiProvider<Api>::~SmiProvider() {
  if (initialised_ && api_.shutDown != nullptr) {
    api_.shutDown();
  }
}

template <typename Api>
bool SmiProvider<Api>::openLibrary(const std::vector<SymbolSpec>& symbols, std::uint64_t initFlags,
                                   const std::function<std::string()>& checkLibrary) {
  load_ = library_.open(libraryNames_, symbols);
  if (!load_.loaded) {
    lastError_ = std::string(names_.provider) + " unavailable: " + load_.error;
    return false;
  }
  if (checkLibrary) {
    if (const std::string why = checkLibrary(); !why.empty()) {
      lastError_ = std::string(names_.provider) + " unavailable: " + why;
      return false;
    }
  }
  if (!std::filesystem::exists(kfdNode_)) {
    lastError_ = "no AMD compute device: " + kfdNode_ +
                 " is absent (amdgpu driver not loaded, or not passed into this container)";
    return false;
  }
  const int status = api_.init(initFlags);
  if (status != kSuccess) {
    lastError_ = std::string(names_.initFunction) + " failed: " + statusText(status) +
                 " (is the amdgpu driver loaded and /dev/kfd readable?)";
    return false;
  }
  initialised_ = true;
  return true;
}

template <typename Api>
std::string SmiProvider<Api>::statusText(int status) const {
  const char* text = nullptr;
  if (api_.statusString != nullptr && api_.statusString(status, &text) == kSuccess &&
      text != nullptr) {
    return text;
  }
  return std::string(names_.statusPrefix) + " " + std::to_string(status);
}

template <typename Api>
void SmiProvider<Api>::listDevices(
    std::size_t count, const std::function<void(std::size_t index, DeviceInfo& info)>& describe) {
  devices_.clear();
  for (std::size_t i = 0; i < count; ++i) {
    DeviceInfo info{static_cast<int>(i), "AMD GPU " + std::to_string(i), "", name()};
    describe(i, info);
    devices_.push_back(std::move(info));
  }
  lastError_.clear();
}

template <typename Api>
std::string SmiProvider<Api>::pciBusId(std::uint64_t domain, std::uint64_t bus,
                                       std::uint64_t device, std::uint64_t function) {
  char text[32];
  std::snprintf(text, sizeof(text), "%04x:%02x:%02x.%x",
                static_cast<unsigned>(domain & 0xffffffffu), static_cast<unsigned>(bus & 0xffu),
                static_cast<unsigned>(device & 0x1fu), static_cast<unsigned>(function & 0x7u));
  return text;
}

template <typename Api>
bool SmiProvider<Api>::beginRefresh(Snapshot& out) {
  out.devices.clear();
  out.processes.clear();
  if (!initialised_ || devices_.empty()) {
    lastError_ = std::string(names_.provider) + " is not initialised";
    return false;
  }
  return true;
}

template class SmiProvider<rsmi::Api>;
template class SmiProvider<amdsmi::Api>;

}  // namespace lorascope::telemetry

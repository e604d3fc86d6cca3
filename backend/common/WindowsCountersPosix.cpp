// common/WindowsCountersPosix.cpp — WindowsCounters.h where there is no Windows: every answer
// says that these counters exist on Windows only (the Linux providers read /proc and the vendor
// libraries instead). Nothing here includes an OS header: there is nothing to ask.
#include <stdexcept>

#include "common/WindowsCounters.h"

namespace lorascope::common {
namespace {
constexpr const char* kWindowsOnly = "DXGI and PDH exist on Windows only";
}  // namespace

std::vector<DxgiAdapterInfo> listDxgiAdapters(std::string* error) {
  *error = kWindowsOnly;
  return {};
}

struct PdhCounterQuery::Impl {};

PdhCounterQuery::PdhCounterQuery(const std::vector<std::string>& /*counterPaths*/) {
  throw std::runtime_error(kWindowsOnly);
}

PdhCounterQuery::~PdhCounterQuery() = default;

bool PdhCounterQuery::read(std::vector<std::vector<CounterSample>>* /*values*/,
                           std::string* error) {
  *error = kWindowsOnly;
  return false;
}

std::optional<MemoryStatus> globalMemoryStatus(std::string* error) {
  *error = "GlobalMemoryStatusEx exists on Windows only";
  return std::nullopt;
}

std::optional<std::uint64_t> currentWorkingSetBytes() {
  return std::nullopt;
}

std::string processImageName(std::uint32_t /*pid*/) {
  return "";
}

}  // namespace lorascope::common

// common/WindowsCountersWin32.cpp — WindowsCounters.h on Windows: dxgi.dll's CreateDXGIFactory1
// (loaded at run time: a system without DXGI is an answer, not a failed start), EnumAdapters1 and
// IDXGIAdapter3::QueryVideoMemoryInfo; PDH with English counter names (the same on every display
// language); GlobalMemoryStatusEx; GetProcessMemoryInfo; QueryFullProcessImageNameW.
#include <windows.h>
// windows.h first: the headers below need its types.
#include <dxgi1_4.h>
#include <pdh.h>
#include <pdhmsg.h>
#include <psapi.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "common/Win32Text.h"
#include "common/WindowsCounters.h"

namespace lorascope::common {
namespace {

std::string systemMessage(DWORD code) {
  return std::system_category().message(static_cast<int>(code));
}

// Releases a COM interface on every path out.
template <typename T>
struct ComRef {
  T* p = nullptr;
  ~ComRef() {
    if (p != nullptr) {
      p->Release();
    }
  }
};

std::optional<VideoMemoryInfo> queryVideoMemory(IDXGIAdapter3* adapter,
                                                DXGI_MEMORY_SEGMENT_GROUP group) {
  DXGI_QUERY_VIDEO_MEMORY_INFO info{};
  if (FAILED(adapter->QueryVideoMemoryInfo(0, group, &info))) {
    return std::nullopt;
  }
  return VideoMemoryInfo{info.Budget, info.CurrentUsage, info.AvailableForReservation,
                         info.CurrentReservation};
}

}  // namespace

std::vector<DxgiAdapterInfo> listDxgiAdapters(std::string* error) {
  const HMODULE dxgi = ::LoadLibraryW(L"dxgi.dll");
  if (dxgi == nullptr) {
    *error = "dxgi.dll: " + systemMessage(::GetLastError());
    return {};
  }
  using CreateFactoryFn = HRESULT(WINAPI*)(REFIID, void**);
  CreateFactoryFn createFactory = nullptr;
  const FARPROC address = ::GetProcAddress(dxgi, "CreateDXGIFactory1");
  static_assert(sizeof createFactory == sizeof address);
  std::memcpy(&createFactory, &address, sizeof address);
  std::vector<DxgiAdapterInfo> adapters;
  ComRef<IDXGIFactory1> factory;
  if (createFactory == nullptr ||
      FAILED(createFactory(__uuidof(IDXGIFactory1), reinterpret_cast<void**>(&factory.p)))) {
    *error = "DXGI: CreateDXGIFactory1 failed";
    ::FreeLibrary(dxgi);
    return {};
  }
  for (UINT i = 0;; ++i) {
    ComRef<IDXGIAdapter1> adapter;
    if (factory.p->EnumAdapters1(i, &adapter.p) == DXGI_ERROR_NOT_FOUND) {
      break;
    }
    DXGI_ADAPTER_DESC1 desc{};
    if (FAILED(adapter.p->GetDesc1(&desc))) {
      continue;
    }
    DxgiAdapterInfo info;
    info.description = utf8FromWide(desc.Description);
    info.vendorId = desc.VendorId;
    info.deviceId = desc.DeviceId;
    info.luid =
        (static_cast<std::uint64_t>(static_cast<std::uint32_t>(desc.AdapterLuid.HighPart)) << 32) |
        desc.AdapterLuid.LowPart;
    info.dedicatedVideoMemoryBytes = desc.DedicatedVideoMemory;
    info.dedicatedSystemMemoryBytes = desc.DedicatedSystemMemory;
    info.sharedSystemMemoryBytes = desc.SharedSystemMemory;
    info.software = (desc.Flags & DXGI_ADAPTER_FLAG_SOFTWARE) != 0;
    ComRef<IDXGIAdapter3> adapter3;  // Windows 10 and later
    if (SUCCEEDED(adapter.p->QueryInterface(__uuidof(IDXGIAdapter3),
                                            reinterpret_cast<void**>(&adapter3.p)))) {
      info.local = queryVideoMemory(adapter3.p, DXGI_MEMORY_SEGMENT_GROUP_LOCAL);
      info.nonLocal = queryVideoMemory(adapter3.p, DXGI_MEMORY_SEGMENT_GROUP_NON_LOCAL);
    }
    adapters.push_back(std::move(info));
  }
  return adapters;  // dxgi.dll stays loaded: the factory's code lives there until released
}

struct PdhCounterQuery::Impl {
  PDH_HQUERY query = nullptr;
  std::vector<PDH_HCOUNTER> counters;
  ~Impl() {
    if (query != nullptr) {
      ::PdhCloseQuery(query);
    }
  }
};

PdhCounterQuery::PdhCounterQuery(const std::vector<std::string>& counterPaths)
    : impl_(std::make_unique<Impl>()) {
  if (const PDH_STATUS status = ::PdhOpenQueryW(nullptr, 0, &impl_->query);
      status != ERROR_SUCCESS) {
    throw std::runtime_error("PDH: cannot open a query: " + systemMessage(status));
  }
  for (const std::string& path : counterPaths) {
    PDH_HCOUNTER counter = nullptr;
    const PDH_STATUS status =
        ::PdhAddEnglishCounterW(impl_->query, wideFromUtf8(path).c_str(), 0, &counter);
    if (status != ERROR_SUCCESS) {
      throw std::runtime_error("PDH: no counter " + path + " (status 0x" + [&] {
        char hex[16];
        std::snprintf(hex, sizeof hex, "%08lX", static_cast<unsigned long>(status));
        return std::string(hex);
      }() + ")");
    }
    impl_->counters.push_back(counter);
  }
  ::PdhCollectQueryData(impl_->query);  // the first sample: rates start from here
}

PdhCounterQuery::~PdhCounterQuery() = default;

bool PdhCounterQuery::read(std::vector<std::vector<CounterSample>>* values, std::string* error) {
  if (const PDH_STATUS status = ::PdhCollectQueryData(impl_->query); status != ERROR_SUCCESS) {
    *error = "PDH: cannot collect a sample: " + systemMessage(status);
    return false;
  }
  values->assign(impl_->counters.size(), {});
  for (std::size_t c = 0; c < impl_->counters.size(); ++c) {
    DWORD bytes = 0;
    DWORD count = 0;
    PDH_STATUS status =
        ::PdhGetFormattedCounterArrayW(impl_->counters[c], PDH_FMT_DOUBLE, &bytes, &count, nullptr);
    if (status != static_cast<PDH_STATUS>(PDH_MORE_DATA)) {
      continue;  // no instance now (no process uses the GPU): an empty list
    }
    std::vector<std::byte> buffer(bytes);
    auto* items = reinterpret_cast<PDH_FMT_COUNTERVALUE_ITEM_W*>(buffer.data());
    status =
        ::PdhGetFormattedCounterArrayW(impl_->counters[c], PDH_FMT_DOUBLE, &bytes, &count, items);
    if (status != ERROR_SUCCESS) {
      continue;
    }
    for (DWORD i = 0; i < count; ++i) {
      if (items[i].FmtValue.CStatus == ERROR_SUCCESS) {
        (*values)[c].push_back({utf8FromWide(items[i].szName), items[i].FmtValue.doubleValue});
      }
    }
  }
  return true;
}

std::optional<MemoryStatus> globalMemoryStatus(std::string* error) {
  MEMORYSTATUSEX status{};
  status.dwLength = sizeof status;
  if (!::GlobalMemoryStatusEx(&status)) {
    *error = "GlobalMemoryStatusEx: " + systemMessage(::GetLastError());
    return std::nullopt;
  }
  return MemoryStatus{status.ullTotalPhys, status.ullAvailPhys, status.ullTotalPageFile,
                      status.ullAvailPageFile};
}

std::optional<std::uint64_t> currentWorkingSetBytes() {
  PROCESS_MEMORY_COUNTERS counters{};
  counters.cb = sizeof counters;
  if (!::GetProcessMemoryInfo(::GetCurrentProcess(), &counters, sizeof counters)) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(counters.WorkingSetSize);
}

std::string processImageName(std::uint32_t pid) {
  const HANDLE process = ::OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
  if (process == nullptr) {
    return "";
  }
  wchar_t path[MAX_PATH * 2] = {};
  DWORD size = MAX_PATH * 2;
  const BOOL ok = ::QueryFullProcessImageNameW(process, 0, path, &size);
  ::CloseHandle(process);
  return ok ? pathText(std::filesystem::path(std::wstring(path, size)).filename()) : "";
}

}  // namespace lorascope::common

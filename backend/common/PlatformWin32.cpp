// common/PlatformWin32.cpp — Platform.h on Windows: GetCurrentProcessId/OpenProcess, the
// parent's id from a process snapshot (CreateToolhelp32Snapshot), GetConsoleMode,
// GetProcessMemoryInfo (the peak working set), SetConsoleCtrlHandler, GetUserNameW, the
// USERPROFILE and APPDATA variables read as UTF-16, RtlGetVersion; the command line as UTF-16
// (CommandLineToArgvW).
#include <windows.h>
// windows.h first: psapi.h and shellapi.h need its types.
#include <psapi.h>
#include <shellapi.h>
#include <tlhelp32.h>

#include <atomic>
#include <cstring>
#include <map>

#include "common/Platform.h"
#include "common/Win32Text.h"

namespace lorascope::common {
namespace {

std::atomic<int> gInterrupts{0};

BOOL WINAPI countInterrupt(DWORD event) {
  switch (event) {
    case CTRL_C_EVENT:
    case CTRL_BREAK_EVENT:
    case CTRL_CLOSE_EVENT:  // Windows ends the process soon after this returns
      gInterrupts.fetch_add(1);
      return TRUE;
    default:
      return FALSE;
  }
}

// An environment variable as UTF-16 → path; empty when unset.
std::filesystem::path environmentPath(const wchar_t* name) {
  const DWORD size = ::GetEnvironmentVariableW(name, nullptr, 0);
  if (size == 0) {
    return {};
  }
  std::wstring value(size, L'\0');
  const DWORD length = ::GetEnvironmentVariableW(name, value.data(), size);
  value.resize(length < size ? length : 0);
  return std::filesystem::path(value);
}

}  // namespace

std::vector<std::string> commandLineArguments(int argc, char** argv) {
  std::vector<std::string> arguments;
  int count = 0;
  wchar_t** wide = ::CommandLineToArgvW(::GetCommandLineW(), &count);
  if (wide != nullptr && count == argc) {
    for (int i = 1; i < count; ++i) {
      arguments.push_back(utf8FromWide(wide[i]));
    }
  } else {  // the C runtime split the line otherwise: its (ANSI) split is the one to keep
    for (int i = 1; i < argc; ++i) {
      arguments.emplace_back(argv[i]);
    }
  }
  if (wide != nullptr) {
    ::LocalFree(wide);
  }
  return arguments;
}

std::optional<std::string> environmentVariable(const char* name) {
  const std::filesystem::path value = environmentPath(wideFromUtf8(name).c_str());
  if (value.empty()) {
    return std::nullopt;
  }
  return pathText(value);
}

std::uint32_t currentProcessId() {
  return static_cast<std::uint32_t>(::GetCurrentProcessId());
}

std::uint32_t parentProcessId() {
  const HANDLE snapshot = ::CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (snapshot == INVALID_HANDLE_VALUE) {
    return 0;
  }
  const DWORD self = ::GetCurrentProcessId();
  PROCESSENTRY32W entry{};
  entry.dwSize = sizeof entry;
  std::uint32_t parent = 0;
  for (BOOL more = ::Process32FirstW(snapshot, &entry); more;
       more = ::Process32NextW(snapshot, &entry)) {
    if (entry.th32ProcessID == self) {
      parent = static_cast<std::uint32_t>(entry.th32ParentProcessID);
      break;
    }
  }
  ::CloseHandle(snapshot);
  return parent;
}

std::vector<std::uint32_t> processTree(std::uint32_t root) {
  std::vector<std::uint32_t> tree{root};
  const HANDLE snapshot = ::CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (snapshot == INVALID_HANDLE_VALUE) {
    return tree;
  }
  std::multimap<std::uint32_t, std::uint32_t> children;
  PROCESSENTRY32W entry{};
  entry.dwSize = sizeof entry;
  for (BOOL more = ::Process32FirstW(snapshot, &entry); more;
       more = ::Process32NextW(snapshot, &entry)) {
    // As the snapshot says: Windows keeps a dead parent's id, which a newer process may reuse.
    if (entry.th32ProcessID != entry.th32ParentProcessID)
      children.emplace(static_cast<std::uint32_t>(entry.th32ParentProcessID),
                       static_cast<std::uint32_t>(entry.th32ProcessID));
  }
  ::CloseHandle(snapshot);
  for (std::size_t i = 0; i < tree.size(); ++i) {
    const auto [first, last] = children.equal_range(tree[i]);
    for (auto it = first; it != last; ++it)
      tree.push_back(it->second);
  }
  return tree;
}

bool parentRuns(std::uint32_t parent) {
  return processExists(parent);
}

bool processExists(std::uint32_t pid) {
  const HANDLE process = ::OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
  if (process == nullptr) {
    return ::GetLastError() == ERROR_ACCESS_DENIED;  // someone else's: it exists
  }
  const bool running = ::WaitForSingleObject(process, 0) == WAIT_TIMEOUT;
  ::CloseHandle(process);
  return running;
}

bool isTerminal(StandardStream stream) {
  const DWORD which = stream == StandardStream::Input    ? STD_INPUT_HANDLE
                      : stream == StandardStream::Output ? STD_OUTPUT_HANDLE
                                                         : STD_ERROR_HANDLE;
  DWORD mode = 0;
  return ::GetConsoleMode(::GetStdHandle(which), &mode) != 0;
}

std::optional<std::uint64_t> peakResidentBytes() {
  PROCESS_MEMORY_COUNTERS counters{};
  counters.cb = sizeof counters;
  if (!::GetProcessMemoryInfo(::GetCurrentProcess(), &counters, sizeof counters)) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(counters.PeakWorkingSetSize);
}

InterruptCounter::InterruptCounter() {
  gInterrupts = 0;
  ::SetConsoleCtrlHandler(countInterrupt, TRUE);
}

InterruptCounter::~InterruptCounter() {
  ::SetConsoleCtrlHandler(countInterrupt, FALSE);
}

int InterruptCounter::count() const {
  return gInterrupts.load();
}

std::string currentUserName() {
  wchar_t name[257] = {};
  DWORD size = 257;
  return ::GetUserNameW(name, &size) ? utf8FromWide(name) : std::string();
}

std::filesystem::path homeDirectory() {
  return environmentPath(L"USERPROFILE");
}

std::filesystem::path userConfigDirectory() {
  std::filesystem::path appData = environmentPath(L"APPDATA");
  if (appData.empty()) {
    const std::filesystem::path home = homeDirectory();
    appData = (home.empty() ? std::filesystem::path(".") : home) / "AppData" / "Roaming";
  }
  return appData / "LoRAscope";
}

std::vector<std::string> currentUserGroups() {
  return {};  // Windows grants GPU access through the driver, not device-file groups
}

DeviceFileAccess deviceFileAccess(const std::filesystem::path& path) {
  DeviceFileAccess access;
  std::error_code ec;
  access.exists = std::filesystem::exists(path, ec);
  return access;
}

std::string kernelRelease() {
  // RtlGetVersion tells the true version (GetVersionEx answers as the manifest says).
  using RtlGetVersionFn = LONG(WINAPI*)(OSVERSIONINFOW*);
  const HMODULE ntdll = ::GetModuleHandleW(L"ntdll.dll");
  if (ntdll == nullptr) {
    return "";
  }
  RtlGetVersionFn rtlGetVersion = nullptr;
  const FARPROC address = ::GetProcAddress(ntdll, "RtlGetVersion");
  static_assert(sizeof rtlGetVersion == sizeof address);
  std::memcpy(&rtlGetVersion, &address, sizeof address);
  OSVERSIONINFOW info{};
  info.dwOSVersionInfoSize = sizeof info;
  if (rtlGetVersion == nullptr || rtlGetVersion(&info) != 0) {
    return "";
  }
  return std::to_string(info.dwMajorVersion) + "." + std::to_string(info.dwMinorVersion) + "." +
         std::to_string(info.dwBuildNumber);
}

}  // namespace lorascope::common

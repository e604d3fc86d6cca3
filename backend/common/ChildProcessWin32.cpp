// common/ChildProcessWin32.cpp — ChildProcess on Windows: CreateProcessW with anonymous pipes for
// the standard streams, in a job object that kills everything the child started when kill() is
// called or this process goes away (the analogue of the POSIX process group), and in a console
// process group of its own (CREATE_NEW_PROCESS_GROUP: a Ctrl-C on the console reaches only this
// process, which decides what the child is told). A parent without a console (the window) starts
// it with CREATE_NO_WINDOW: a console program such as lorascope-train.exe or a user's python.exe
// would otherwise open a console window of its own beside the window for the run's length.
// Windows has no signals: a child ended by kill() reads as "SIGKILL", one that crashed as its
// NTSTATUS ("access violation", "exception 0xC0000409").
#include <windows.h>
// windows.h first: tlhelp32.h needs its types.
#include <tlhelp32.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cwchar>
#include <cwctype>
#include <filesystem>
#include <mutex>
#include <sstream>

#include "common/ChildProcess.h"
#include "common/ChildProcessParts.h"
#include "common/Win32Text.h"

namespace lorascope::common {
namespace {

constexpr int kKilledSignal = 9;  // what wait() reports for a child ended by kill()

std::string lastErrorText() {
  return std::system_category().message(static_cast<int>(::GetLastError()));
}

void closeHandle(HANDLE& handle) {
  if (handle != nullptr && handle != INVALID_HANDLE_VALUE) {
    ::CloseHandle(handle);
  }
  handle = nullptr;
}

// One argument quoted the way the C runtime's parser reads it back (backslashes double only
// before a quote).
void appendQuoted(std::wstring& line, const std::wstring& argument) {
  if (!line.empty()) {
    line += L' ';
  }
  if (!argument.empty() && argument.find_first_of(L" \t\n\v\"") == std::wstring::npos) {
    line += argument;
    return;
  }
  line += L'"';
  std::size_t backslashes = 0;
  for (const wchar_t c : argument) {
    if (c == L'\\') {
      ++backslashes;
      continue;
    }
    line.append(c == L'"' ? backslashes * 2 + 1 : backslashes, L'\\');
    backslashes = 0;
    line += c;
  }
  line.append(backslashes * 2, L'\\');
  line += L'"';
}

bool sameName(std::wstring_view a, std::wstring_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](wchar_t x, wchar_t y) { return std::towupper(x) == std::towupper(y); });
}

// This process's environment with `overrides` set on top, as a sorted UTF-16 block.
std::wstring environmentBlock(const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::pair<std::wstring, std::wstring>> wideOverrides;
  for (const auto& [key, value] : overrides) {
    wideOverrides.emplace_back(wideFromUtf8(key), wideFromUtf8(value));
  }
  std::vector<std::wstring_view> current;
  wchar_t* own = ::GetEnvironmentStringsW();
  for (const wchar_t* e = own; e != nullptr && *e != L'\0'; e += std::wcslen(e) + 1) {
    current.emplace_back(e);
  }
  std::vector<std::wstring> entries = child::environmentWith(current, wideOverrides, sameName);
  if (own != nullptr) {
    ::FreeEnvironmentStringsW(own);  // after environmentWith copied what `current` views
  }
  std::sort(entries.begin(), entries.end(), [](const std::wstring& a, const std::wstring& b) {
    return std::lexicographical_compare(
        a.begin(), a.end(), b.begin(), b.end(),
        [](wchar_t x, wchar_t y) { return std::towupper(x) < std::towupper(y); });
  });
  std::wstring block;
  for (const std::wstring& entry : entries) {
    block += entry;
    block += L'\0';
  }
  block += L'\0';
  return block;
}

}  // namespace

struct ChildProcess::Impl {
  HANDLE process = nullptr;
  HANDLE job = nullptr;
  HANDLE input = nullptr;  // our end of the child's stdin
  HANDLE output = nullptr;
  HANDLE errorOutput = nullptr;
  DWORD pid = 0;
  std::mutex mutex;     // input, reaped, killed
  bool reaped = false;  // after this, the handles are closed
  bool killed = false;
  std::atomic<bool> abandoned{false};  // abandonOutput(): reads end
};

ChildProcess::ChildProcess(const ChildOptions& options) : impl_(std::make_unique<Impl>()) {
  SECURITY_ATTRIBUTES inherit{sizeof(SECURITY_ATTRIBUTES), nullptr, TRUE};
  HANDLE childInput = nullptr, childOutput = nullptr, childError = nullptr;
  auto fail = [&](const std::string& why) {
    for (HANDLE* h : {&childInput, &childOutput, &childError, &impl_->input, &impl_->output,
                      &impl_->errorOutput, &impl_->job}) {
      closeHandle(*h);
    }
    throw ChildProcessError("cannot start " + options.program + ": " + why);
  };
  if (!::CreatePipe(&childInput, &impl_->input, &inherit, 0) ||
      !::CreatePipe(&impl_->output, &childOutput, &inherit, 0) ||
      !::CreatePipe(&impl_->errorOutput, &childError, &inherit, 0)) {
    fail(lastErrorText());
  }
  // Our ends stay here: only the child's ends are inherited.
  for (HANDLE ours : {impl_->input, impl_->output, impl_->errorOutput}) {
    ::SetHandleInformation(ours, HANDLE_FLAG_INHERIT, 0);
  }
  impl_->job = ::CreateJobObjectW(nullptr, nullptr);
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (impl_->job == nullptr ||
      !::SetInformationJobObject(impl_->job, JobObjectExtendedLimitInformation, &limits,
                                 sizeof limits)) {
    fail(lastErrorText());
  }

  std::wstring commandLine;
  appendQuoted(commandLine, wideFromUtf8(options.program));
  for (const std::string& argument : options.arguments) {
    appendQuoted(commandLine, wideFromUtf8(argument));
  }
  std::wstring environment = environmentBlock(options.environment);
  const std::wstring program = wideFromUtf8(options.program);
  const std::wstring directory = wideFromUtf8(options.workingDirectory);

  STARTUPINFOW startup{};
  startup.cb = sizeof startup;
  startup.dwFlags = STARTF_USESTDHANDLES;
  startup.hStdInput = childInput;
  startup.hStdOutput = childOutput;
  startup.hStdError = childError;
  PROCESS_INFORMATION info{};
  // Suspended until it is in the job, so nothing it starts escapes the job.
  // With a console (the CLI, or an engine the window started), the child shares it, hidden or not,
  // and terminate() reaches it with Ctrl-Break. Without one, the child's console is hidden; its
  // own console children share that console rather than each opening a window.
  DWORD consoleProcess = 0;
  const bool haveConsole = ::GetConsoleProcessList(&consoleProcess, 1) != 0;
  const DWORD flags = CREATE_UNICODE_ENVIRONMENT | CREATE_NEW_PROCESS_GROUP | CREATE_SUSPENDED |
                      (haveConsole ? 0 : CREATE_NO_WINDOW);
  if (!::CreateProcessW(program.c_str(), commandLine.data(), nullptr, nullptr, TRUE, flags,
                        environment.data(), directory.empty() ? nullptr : directory.c_str(),
                        &startup, &info)) {
    fail(lastErrorText());
  }
  if (!::AssignProcessToJobObject(impl_->job, info.hProcess)) {
    const std::string why = lastErrorText();
    ::TerminateProcess(info.hProcess, 1);
    ::CloseHandle(info.hThread);
    ::CloseHandle(info.hProcess);
    fail("cannot place it in a job object: " + why);
  }
  ::ResumeThread(info.hThread);
  ::CloseHandle(info.hThread);
  impl_->process = info.hProcess;
  impl_->pid = info.dwProcessId;
  closeHandle(childInput);
  closeHandle(childOutput);
  closeHandle(childError);
}

ChildProcess::~ChildProcess() {
  // wait() closes the process handle: one still open is a child not yet reaped.
  if (impl_->process != nullptr) {
    kill();
    wait();
  }
  for (HANDLE* handle : {&impl_->input, &impl_->output, &impl_->errorOutput, &impl_->job}) {
    closeHandle(*handle);
  }
}

std::int64_t ChildProcess::id() const {
  return impl_->pid;
}

bool ChildProcess::write(std::string_view bytes) {
  const std::lock_guard lock(impl_->mutex);
  std::size_t written = 0;
  while (written < bytes.size()) {
    if (impl_->input == nullptr) {
      return false;
    }
    const DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(bytes.size() - written, 1 << 20));
    DWORD n = 0;
    if (!::WriteFile(impl_->input, bytes.data() + written, chunk, &n, nullptr)) {
      return false;  // ERROR_BROKEN_PIPE / ERROR_NO_DATA: the child no longer reads
    }
    written += n;
  }
  return true;
}

void ChildProcess::closeInput() {
  const std::lock_guard lock(impl_->mutex);
  closeHandle(impl_->input);
}

namespace {
// Waits for bytes by peeking every 10 ms rather than in a blocking ReadFile, so that
// abandonOutput() can end a wait on a pipe that a process outside the job still holds.
constexpr DWORD kPeekIntervalMs = 10;

std::size_t readSome(HANDLE handle, const std::atomic<bool>& abandoned, std::span<char> buffer) {
  if (handle == nullptr) {
    return 0;
  }
  for (;;) {
    if (abandoned.load()) {
      return 0;
    }
    DWORD available = 0;
    if (!::PeekNamedPipe(handle, nullptr, 0, nullptr, &available, nullptr)) {
      return 0;  // ERROR_BROKEN_PIPE: the child closed it (or ended)
    }
    if (available > 0) {
      break;
    }
    ::Sleep(kPeekIntervalMs);
  }
  DWORD n = 0;
  const DWORD capacity =
      static_cast<DWORD>(std::min<std::size_t>(buffer.size(), std::size_t{1} << 30));
  if (!::ReadFile(handle, buffer.data(), capacity, &n, nullptr)) {
    return 0;
  }
  return n;
}
}  // namespace

std::size_t ChildProcess::readOutput(std::span<char> buffer) {
  return readSome(impl_->output, impl_->abandoned, buffer);
}

std::size_t ChildProcess::readErrorOutput(std::span<char> buffer) {
  return readSome(impl_->errorOutput, impl_->abandoned, buffer);
}

// Reads see the flag within one peek interval.
void ChildProcess::abandonOutput() {
  impl_->abandoned = true;
}

void ChildProcess::waitForExit() {
  HANDLE process = nullptr;
  {
    const std::lock_guard lock(impl_->mutex);
    process = impl_->process;
  }
  if (process != nullptr)
    ::WaitForSingleObject(process, INFINITE);
}

namespace {

// A child that has already ended on its own: only what it left running in its job is ended, and
// its exit stays its own exit code (wait() reports it), as on POSIX, where a signal to the process
// group of an exited child reaches only what is left of the group.
bool endedOnItsOwn(HANDLE process, HANDLE job) {
  if (::WaitForSingleObject(process, 0) != WAIT_OBJECT_0)
    return false;
  ::TerminateJobObject(job, 1);
  return true;
}

}  // namespace

void ChildProcess::kill() {
  const std::lock_guard lock(impl_->mutex);
  if (impl_->reaped || impl_->process == nullptr || endedOnItsOwn(impl_->process, impl_->job))
    return;
  impl_->killed = true;
  ::TerminateJobObject(impl_->job, 1);  // the child and anything it started
}

void ChildProcess::terminate() {
  const std::lock_guard lock(impl_->mutex);
  if (impl_->reaped || impl_->process == nullptr || endedOnItsOwn(impl_->process, impl_->job))
    return;
  // A console child in its own process group is asked to stop with Ctrl-Break; a child without a
  // console has no gentler way than its job's end.
  if (!::GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, impl_->pid)) {
    impl_->killed = true;
    ::TerminateJobObject(impl_->job, 1);
  }
}

std::vector<std::int64_t> ChildProcess::processTree() const {
  const std::lock_guard lock(impl_->mutex);
  if (impl_->reaped || impl_->process == nullptr)
    return {};
  std::vector<std::int64_t> tree{impl_->pid};
  // Everything the child started is in its job object.
  std::vector<char> buffer(sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST) + 1024 * sizeof(ULONG_PTR));
  auto* list = reinterpret_cast<JOBOBJECT_BASIC_PROCESS_ID_LIST*>(buffer.data());
  if (::QueryInformationJobObject(impl_->job, JobObjectBasicProcessIdList, list,
                                  static_cast<DWORD>(buffer.size()), nullptr)) {
    for (DWORD i = 0; i < list->NumberOfProcessIdsInList; ++i) {
      const auto pid = static_cast<std::int64_t>(list->ProcessIdList[i]);
      if (pid != impl_->pid)
        tree.push_back(pid);
    }
  }
  return tree;
}

ChildExit ChildProcess::wait() {
  ::WaitForSingleObject(impl_->process, INFINITE);
  const std::lock_guard lock(impl_->mutex);
  DWORD code = 0;
  ::GetExitCodeProcess(impl_->process, &code);
  closeHandle(impl_->process);
  impl_->reaped = true;
  ChildExit exit;
  if (impl_->killed) {
    exit.signaled = true;
    exit.signal = kKilledSignal;
  } else if ((code & 0xF0000000u) == 0xC0000000u) {  // an NTSTATUS error: the child crashed
    exit.signaled = true;
    exit.signal = static_cast<int>(code);
  } else {
    exit.exitCode = static_cast<int>(code);
  }
  return exit;
}

std::string ChildProcess::signalName(int signal) {
  static constexpr std::array<std::pair<std::uint32_t, const char*>, 8> kNames{{
      {kKilledSignal, "SIGKILL"},
      {0xC0000005u, "access violation"},
      {0xC00000FDu, "stack overflow"},
      {0xC0000409u, "stack buffer overrun (abort)"},
      {0xC000001Du, "illegal instruction"},
      {0xC0000094u, "integer division by zero"},
      {0xC0000374u, "heap corruption"},
      {0xC000013Au, "Ctrl-C"},
  }};
  const auto code = static_cast<std::uint32_t>(signal);
  for (const auto& [number, name] : kNames) {
    if (number == code)
      return name;
  }
  char text[32];
  std::snprintf(text, sizeof text, "exception 0x%08X", static_cast<unsigned>(code));
  return text;
}

namespace child {

const char kPathListSeparator = ';';

std::string searchPath() {
  const wchar_t* path = ::_wgetenv(L"PATH");
  return path != nullptr ? utf8FromWide(path) : "";
}

bool namesFolder(const std::string& name) {
  return name.find_first_of("/\\:") != std::string::npos;
}

std::string executableAt(const std::filesystem::path& candidate) {
  // A name without an extension is tried with each of PATHEXT's, as cmd.exe does.
  std::vector<std::wstring> extensions{L""};
  if (!candidate.has_extension()) {
    const wchar_t* pathext = ::_wgetenv(L"PATHEXT");
    std::wistringstream list(pathext != nullptr ? pathext : L".COM;.EXE;.BAT;.CMD");
    for (std::wstring ext; std::getline(list, ext, L';');) {
      if (!ext.empty())
        extensions.push_back(ext);
    }
  }
  for (const std::wstring& ext : extensions) {
    std::filesystem::path file = candidate;
    file += ext;
    std::error_code error;
    if (std::filesystem::is_regular_file(file, error))
      return utf8FromWide(file.native());
  }
  return "";
}

}  // namespace child

std::string currentExecutablePath() {
  std::wstring path(MAX_PATH, L'\0');
  for (;;) {
    const DWORD n = ::GetModuleFileNameW(nullptr, path.data(), static_cast<DWORD>(path.size()));
    if (n == 0) {
      return "";
    }
    if (n < path.size()) {
      path.resize(n);
      return utf8FromWide(path);
    }
    path.resize(path.size() * 2);
  }
}

}  // namespace lorascope::common

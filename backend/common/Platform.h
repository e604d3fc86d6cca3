// common/Platform.h — the small questions only the operating system answers: this process's id
// and whether another one still runs, whether a standard stream is a terminal, the peak resident
// set, console interrupts (Ctrl-C), the user, the user's folders, GPU device files. Plain C++ with
// no OS header: PlatformPosix.cpp and PlatformWin32.cpp answer them. The rest of the platform
// layer: OsFile.h (synced writes), MappedFile.h, SharedLibrary.h, ChildProcess.h. Nothing outside
// backend/common/*Posix.cpp and *Win32.cpp includes an OS header (scripts/check-os-headers.sh).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lorascope::common {

// The system this build is for, for choices that are data, not code (library file names).
enum class OsFamily { Posix, Windows };
#ifdef _WIN32
inline constexpr OsFamily kOsFamily = OsFamily::Windows;
#else
inline constexpr OsFamily kOsFamily = OsFamily::Posix;
#endif

std::uint32_t currentProcessId();
// The process that started this one (its parent), 0 when the system does not tell. After the
// parent ends, POSIX names whoever adopted the orphan; Windows keeps the dead parent's id.
std::uint32_t parentProcessId();
// Whether `parent`, the process that started this one, still runs. POSIX: this process has not
// been handed to another parent, which happens as the parent ends (before anyone reaps it);
// Windows: `parent` has not ended.
bool parentRuns(std::uint32_t parent);
// False only when no process with `pid` exists (one owned by another user still counts).
bool processExists(std::uint32_t pid);
// `root` and every process below it (its children, theirs, ...) that still runs, root first:
// Linux reads each /proc/<pid>/stat, Windows a process snapshot. Where the system lists no
// processes: root alone.
std::vector<std::uint32_t> processTree(std::uint32_t root);

enum class StandardStream { Input, Output, Error };
// Whether the stream is an interactive terminal (a console on Windows), not a file or a pipe.
bool isTerminal(StandardStream stream);

// The largest resident set (working set on Windows) this process has had, in bytes; nullopt
// where the system does not tell.
std::optional<std::uint64_t> peakResidentBytes();

// Counts console interrupts while it lives: Ctrl-C (SIGINT) and a polite termination (SIGTERM on
// POSIX; Ctrl-Break and the console closing on Windows). The process is not ended by them: the
// owner polls count() and decides (the CLI's `train` checkpoints, `devices --watch` stops). One
// at a time; its destruction restores the default handling.
class InterruptCounter {
 public:
  InterruptCounter();
  ~InterruptCounter();
  InterruptCounter(const InterruptCounter&) = delete;
  InterruptCounter& operator=(const InterruptCounter&) = delete;

  int count() const;
};

// The program's arguments after its name (argv[1..]) as UTF-8, the text every path and option
// of LoRAscope is kept in. On Windows main()'s argv is in the ANSI code page, which turns every
// character outside it into '?' (a folder named 日本 under a Western code page): the arguments are
// read again as UTF-16 from the process's command line. POSIX: argv as given.
std::vector<std::string> commandLineArguments(int argc, char** argv);

// An environment variable's value as UTF-8 (read as UTF-16 on Windows, so no code page is
// involved); nullopt when it is unset or empty.
std::optional<std::string> environmentVariable(const char* name);

// The user's login name; "" when the system does not tell.
std::string currentUserName();
// The user's home folder (HOME; the profile folder on Windows); empty when unknown.
std::filesystem::path homeDirectory();
// Where LoRAscope keeps the user's settings: $XDG_CONFIG_HOME/LoRAscope, ~/.config/LoRAscope,
// %APPDATA%\LoRAscope. Non-ASCII user names work: nothing here goes through a code page.
std::filesystem::path userConfigDirectory();
// The names of the groups this user is in (POSIX; empty on Windows, which has no device groups).
std::vector<std::string> currentUserGroups();

// A GPU device file (/dev/kfd, /dev/dri/renderD128, /dev/nvidia0) as the user sees it.
struct DeviceFileAccess {
  bool exists = false;
  std::string group;       // its owning group's name (or number)
  std::string mode;        // its permission bits in octal ("660")
  bool readWrite = false;  // whether this user may open it for reading and writing
};
DeviceFileAccess deviceFileAccess(const std::filesystem::path& path);

// The kernel's release ("6.1.0-18-amd64"; on Windows its version "10.0.22631"); "" when unknown.
std::string kernelRelease();

}  // namespace lorascope::common

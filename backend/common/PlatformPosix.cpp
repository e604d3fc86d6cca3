// common/PlatformPosix.cpp — Platform.h on POSIX: getpid/getppid/kill(0), isatty, getrusage,
// sigaction, getpwuid, getgroups/getgrgid, stat/access, uname.
#include <grp.h>
#include <pwd.h>
#include <signal.h>  // kill
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/BoundedFile.h"  // defines: readSystemFile
#include "common/Platform.h"

namespace lorascope::common {
namespace {

std::atomic<int> gInterrupts{0};

extern "C" void countInterrupt(int) {
  gInterrupts.fetch_add(1);
}

std::string groupName(gid_t gid) {
  const group* g = ::getgrgid(gid);
  return g != nullptr ? g->gr_name : std::to_string(gid);
}

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

}  // namespace

std::vector<std::string> commandLineArguments(int argc, char** argv) {
  return argc > 1 ? std::vector<std::string>(argv + 1, argv + argc) : std::vector<std::string>();
}

std::optional<std::string> environmentVariable(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') {
    return std::nullopt;
  }
  return std::string(value);
}

std::uint32_t currentProcessId() {
  return static_cast<std::uint32_t>(::getpid());
}

std::uint32_t parentProcessId() {
  return static_cast<std::uint32_t>(::getppid());
}

std::vector<std::uint32_t> processTree(std::uint32_t root) {
  // Each /proc/<pid>/stat names the parent: the field after the parenthesised command, which may
  // itself hold spaces and parentheses, so it is read from the last ')'.
  std::multimap<std::uint32_t, std::uint32_t> children;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.size() > 9 ||
        name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    // Nothing when the process ended since the listing (its read fails with ESRCH).
    const std::string text = readSystemFile(entry.path() / "stat").value_or("");
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos)
      continue;
    std::istringstream fields(text.substr(close + 1));
    std::string state;
    std::uint32_t parent = 0;
    if (fields >> state >> parent)
      children.emplace(parent, static_cast<std::uint32_t>(std::stoul(name)));
  }
  std::vector<std::uint32_t> tree{root};
  for (std::size_t i = 0; i < tree.size(); ++i) {
    const auto [first, last] = children.equal_range(tree[i]);
    for (auto it = first; it != last; ++it)
      tree.push_back(it->second);
  }
  return tree;
}

bool parentRuns(std::uint32_t parent) {
  return parentProcessId() == parent;
}

bool processExists(std::uint32_t pid) {
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

bool isTerminal(StandardStream stream) {
  const int fd = stream == StandardStream::Input    ? STDIN_FILENO
                 : stream == StandardStream::Output ? STDOUT_FILENO
                                                    : STDERR_FILENO;
  return ::isatty(fd) == 1;
}

std::optional<std::uint64_t> peakResidentBytes() {
  rusage usage{};
  if (::getrusage(RUSAGE_SELF, &usage) != 0) {
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is KiB on Linux
}

InterruptCounter::InterruptCounter() {
  gInterrupts = 0;
  std::signal(SIGINT, countInterrupt);
  std::signal(SIGTERM, countInterrupt);
}

InterruptCounter::~InterruptCounter() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

int InterruptCounter::count() const {
  return gInterrupts.load();
}

std::string currentUserName() {
  if (std::string user = environment("USER"); !user.empty()) {
    return user;
  }
  const passwd* pw = ::getpwuid(::getuid());
  return pw != nullptr ? pw->pw_name : "";
}

std::filesystem::path homeDirectory() {
  if (std::string home = environment("HOME"); !home.empty()) {
    return home;
  }
  const passwd* pw = ::getpwuid(::getuid());
  return pw != nullptr ? std::filesystem::path(pw->pw_dir) : std::filesystem::path();
}

std::filesystem::path userConfigDirectory() {
  if (std::string xdg = environment("XDG_CONFIG_HOME"); !xdg.empty()) {
    return std::filesystem::path(xdg) / "LoRAscope";
  }
  const std::filesystem::path home = homeDirectory();
  return (home.empty() ? std::filesystem::path(".") : home) / ".config" / "LoRAscope";
}

std::vector<std::string> currentUserGroups() {
  std::vector<gid_t> gids(static_cast<std::size_t>(std::max(::getgroups(0, nullptr), 0)) + 1);
  const int count = ::getgroups(static_cast<int>(gids.size()), gids.data());
  gids.resize(static_cast<std::size_t>(std::max(count, 0)));
  gids.push_back(::getegid());
  std::vector<std::string> names;
  for (gid_t gid : gids) {
    const std::string name = groupName(gid);
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  return names;
}

DeviceFileAccess deviceFileAccess(const std::filesystem::path& path) {
  DeviceFileAccess access;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return access;
  }
  access.exists = true;
  access.group = groupName(st.st_gid);
  char mode[8];
  std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
  access.mode = mode;
  access.readWrite = ::access(path.c_str(), R_OK | W_OK) == 0;
  return access;
}

std::string kernelRelease() {
  utsname u{};
  return ::uname(&u) == 0 ? u.release : "";
}

}  // namespace lorascope::common

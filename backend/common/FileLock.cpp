// common/FileLock.cpp — the parts of FileLock.h that are the same on every system: the holder
// record ("pid=1234\nstarted=2026-11-28T23:50:00Z\n") and the refusal's message.
#include "common/FileLock.h"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <thread>

#include "common/OsError.h"
#include "common/Platform.h"

namespace lorascope::common {

std::string LockHolder::describe() const {
  if (pid == 0) {
    return "a process whose id is not recorded yet";
  }
  return "pid " + std::to_string(pid) + (started.empty() ? "" : ", since " + started);
}

LockBusy::LockBusy(const std::filesystem::path& path, LockHolder holder)
    : std::runtime_error(pathText(path) + ": held by " + holder.describe()),
      holder_(std::move(holder)) {}

bool FileLock::removeFile() const {
  std::error_code error;
  return std::filesystem::remove(path_, error) && !error;
}

std::string lockHolderText(std::uint32_t pid) {
  using namespace std::chrono;
  const auto now = floor<seconds>(system_clock::now());
  const auto day = floor<days>(now);
  const year_month_day date(day);
  const hh_mm_ss time(now - day);
  char started[32];
  std::snprintf(started, sizeof started, "%04d-%02u-%02uT%02d:%02d:%02dZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(time.hours().count()),
                static_cast<int>(time.minutes().count()), static_cast<int>(time.seconds().count()));
  return "pid=" + std::to_string(pid) + "\nstarted=" + started + "\n";
}

LockHolder currentLockHolder(const std::function<std::string()>& readRecord) {
  LockHolder holder = parseLockHolder(readRecord());
  for (int attempt = 0; attempt < 20 && (holder.pid == 0 || !processExists(holder.pid));
       ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    holder = parseLockHolder(readRecord());
  }
  return holder;
}

LockHolder parseLockHolder(const std::string& text) {
  LockHolder holder;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      end = text.size();  // a record cut short: what is there still counts
    }
    const std::string_view line(text.data() + start, end - start);
    if (line.starts_with("pid=")) {
      const std::string_view digits = line.substr(4);
      std::uint32_t pid = 0;
      const auto [last, error] = std::from_chars(digits.data(), digits.data() + digits.size(), pid);
      if (error == std::errc() && last == digits.data() + digits.size()) {
        holder.pid = pid;
      }
    } else if (line.starts_with("started=") && line.size() <= 8 + 20) {
      const std::string_view value = line.substr(8);
      // Only the characters of a time stamp: the record is shown in messages.
      if (value.find_first_not_of("0123456789-:TZ") == std::string_view::npos) {
        holder.started = std::string(value);
      }
    }
    start = end + 1;
  }
  return holder;
}

}  // namespace lorascope::common

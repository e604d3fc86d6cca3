// common/OsFile.cpp — the parts of OsFile.h that are the same on every system: the sync hook of
// the tests and the path conversions of OsError.h.
#include "common/OsFile.h"

#include <atomic>

#include "common/OsError.h"

namespace lorascope::common {

std::string pathText(const std::filesystem::path& path) {
  const std::u8string text = path.u8string();
  return std::string(text.begin(), text.end());
}

std::filesystem::path pathFromUtf8(std::string_view utf8) {
  return std::filesystem::path(std::u8string(utf8.begin(), utf8.end()));
}

namespace testing {
namespace {
std::atomic<SyncHook> gSyncHook{nullptr};
}  // namespace

SyncHook setSyncForTesting(SyncHook hook) {
  return gSyncHook.exchange(hook);
}

bool injectedSync(bool isDirectory, std::error_code* error) {
  const SyncHook hook = gSyncHook.load(std::memory_order_relaxed);
  if (hook == nullptr) {
    return false;
  }
  *error = hook(isDirectory);
  return true;
}

}  // namespace testing
}  // namespace lorascope::common

// common/AtomicFile.h — crash-safe file writes: temp file in the same directory, fsync, rename,
// fsync of the directory. A crash leaves either the old file or the new one, never a torn one.
#pragma once

#include <filesystem>
#include <span>
#include <string_view>

namespace lorascope::common {

// Throws std::runtime_error naming the path and the failing step (with errno's text).
void writeFileAtomically(const std::filesystem::path& path, std::string_view contents);
void writeFileAtomically(const std::filesystem::path& path, std::span<const std::byte> contents);

}  // namespace lorascope::common

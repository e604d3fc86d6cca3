// TextFiles.h — strict readers for the small text files of sysfs and procfs. A missing,
// unreadable or malformed file gives std::nullopt, never a guessed value.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace lorascope::telemetry {

// The whole file (sysfs and procfs files are small; reading stops at `maxBytes`).
std::optional<std::string> readTextFile(const std::filesystem::path& path,
                                        std::size_t maxBytes = 1 << 20);

// "  12345\n" -> 12345. Rejects signs, fractions, trailing words and values beyond 64 bits.
std::optional<std::uint64_t> parseUnsigned(std::string_view text);

// A size as the kernel prints it: "1048576 KiB", "12 MiB", "4096" (bytes), "2048 kB"
// (/proc/meminfo's kB is 1024 bytes). Gives bytes; nullopt on unknown units or overflow.
std::optional<std::uint64_t> parseSizeBytes(std::string_view text);

// readTextFile + parseUnsigned.
std::optional<std::uint64_t> readUnsignedFile(const std::filesystem::path& path);

std::string_view trimmed(std::string_view text);

// <procRoot>/<pid>/comm without its newline, or "" when the process is gone or not visible
// (another PID namespace, e.g. NVML's host PIDs seen from a container).
std::string readProcessName(const std::filesystem::path& procRoot, std::uint32_t pid);

}  // namespace lorascope::telemetry

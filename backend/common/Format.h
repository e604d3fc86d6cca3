// common/Format.h — the one byte-count formatter of every message, report and widget, in the
// form of PyTorch's out-of-memory message (which users compare ours with): binary units, two
// decimals ("80 B", "512.00 MiB", "1.50 GiB"). Independent of the C locale (a GUI process runs
// under the user's locale; "1,50 GiB" would break logs and messages). Also the blank-trimming of
// a list entry a user typed (fault specs, GPU lists).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace lorascope::common {

// Below 1024: "<n> B". Above: KiB, MiB, GiB, TiB or PiB with two decimals; a value that would
// read 1024.00 moves up a unit (1023.999 KiB reads "1.00 MiB").
std::string formatBytes(std::uint64_t bytes);

// `text` without the spaces and tabs at its ends (an entry of a comma-separated list a user typed).
std::string_view trimBlanks(std::string_view text);

}  // namespace lorascope::common

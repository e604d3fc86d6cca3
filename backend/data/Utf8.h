// Utf8.h — strict UTF-8 validation (RFC 3629: no overlongs, no surrogates, nothing past
// U+10FFFF; backend/text's validator) with a reason a user can act on, so the report names the
// first bad byte of a line instead of failing later.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lorascope::data {

struct Utf8Fault {
  std::size_t offset = 0;  // of the first byte of the bad sequence, from the start of the text
  std::string reason;      // e.g. "byte 0xff is never valid in UTF-8"
};

// None when `text` is valid UTF-8.
std::optional<Utf8Fault> findInvalidUtf8(std::string_view text);

}  // namespace lorascope::data

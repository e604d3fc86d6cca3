// ByteLevel.h — GPT-2's reversible byte <-> printable-character map used by byte-level BPE:
// bytes that are printable Latin-1 map to themselves, the other 68 map to U+0100.. in order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lorascope::text::bytelevel {

// Appends the UTF-8 of the character that stands for each byte of `bytes`.
void encode(std::string_view bytes, std::string& out);
// The byte a character stands for, or nullopt when it is not one of the 256.
std::optional<std::uint8_t> byteOf(char32_t c);

}  // namespace lorascope::text::bytelevel

// ByteLevel.cpp — the byte <-> character tables, built once.
#include "text/ByteLevel.h"

#include <array>

#include "common/Utf8.h"

namespace lorascope::text::bytelevel {

namespace {

struct Tables {
  std::array<std::string, 256> charOfByte;   // UTF-8 of the stand-in character
  std::array<std::int16_t, 512> byteOfChar;  // by code point (all stand-ins are < U+0200); -1: none

  Tables() {
    byteOfChar.fill(-1);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      const char32_t c = printable ? static_cast<char32_t>(b) : next++;
      common::utf8::append(charOfByte[b], c);
      byteOfChar[c] = static_cast<std::int16_t>(b);
    }
  }
};

const Tables& tables() {
  static const Tables instance;
  return instance;
}

}  // namespace

void encode(std::string_view bytes, std::string& out) {
  const Tables& t = tables();
  for (const char byte : bytes)
    out += t.charOfByte[static_cast<std::uint8_t>(byte)];
}

std::optional<std::uint8_t> byteOf(char32_t c) {
  if (c >= 512)
    return std::nullopt;
  const std::int16_t b = tables().byteOfChar[c];
  if (b < 0)
    return std::nullopt;
  return static_cast<std::uint8_t>(b);
}

}  // namespace lorascope::text::bytelevel

// Utf8.cpp — the UTF-8 validator: a table-free decoder of one sequence at a time.
#include "data/Utf8.h"

#include <cstdint>
#include <cstdio>

namespace lorascope::data {

namespace {

std::string hexByte(unsigned char byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", static_cast<unsigned>(byte));
  return text;
}

}  // namespace

std::optional<Utf8Fault> findInvalidUtf8(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t size = text.size();
  std::size_t i = 0;
  while (i < size) {
    const unsigned char lead = bytes[i];
    if (lead < 0x80) {
      ++i;
      continue;
    }
    std::size_t length = 0;
    std::uint32_t minimum = 0;
    std::uint32_t code = 0;
    if (lead >= 0xc2 && lead <= 0xdf) {
      length = 2, minimum = 0x80, code = lead & 0x1fu;
    } else if (lead >= 0xe0 && lead <= 0xef) {
      length = 3, minimum = 0x800, code = lead & 0x0fu;
    } else if (lead >= 0xf0 && lead <= 0xf4) {
      length = 4, minimum = 0x10000, code = lead & 0x07u;
    } else {
      return Utf8Fault{i, "byte " + hexByte(lead) + " cannot start a UTF-8 sequence"};
    }
    if (i + length > size) {
      return Utf8Fault{i, "UTF-8 sequence starting with " + hexByte(lead) + " is cut short"};
    }
    for (std::size_t k = 1; k < length; ++k) {
      const unsigned char next = bytes[i + k];
      if ((next & 0xc0u) != 0x80u) {
        return Utf8Fault{i, "byte " + hexByte(lead) +
                                " is not followed by a UTF-8 continuation "
                                "byte (next is " +
                                hexByte(next) + "); is the file Latin-1 or Windows-1252?"};
      }
      code = (code << 6) | (next & 0x3fu);
    }
    if (code < minimum) {
      return Utf8Fault{i, "overlong UTF-8 encoding starting with " + hexByte(lead)};
    }
    if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
      return Utf8Fault{i, "UTF-8 sequence starting with " + hexByte(lead) +
                              " encodes an invalid code point (surrogate or past U+10FFFF)"};
    }
    i += length;
  }
  return std::nullopt;
}

}  // namespace lorascope::data

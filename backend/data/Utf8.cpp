// Utf8.cpp — finds the first bad byte with backend/text's strict validator and explains it.
#include "data/Utf8.h"

#include <cstdio>

#include "text/Utf8.h"  // defines: utf8::firstInvalidByte

namespace lorascope::data {

namespace {

std::string hexByte(unsigned char byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", static_cast<unsigned>(byte));
  return text;
}

// Bytes a sequence starting with `lead` should have; 0 when `lead` cannot start one.
std::size_t expectedLength(unsigned char lead) {
  if (lead >= 0xc2 && lead <= 0xdf) {
    return 2;
  }
  if (lead >= 0xe0 && lead <= 0xef) {
    return 3;
  }
  if (lead >= 0xf0 && lead <= 0xf4) {
    return 4;
  }
  return 0;
}

}  // namespace

std::optional<Utf8Fault> findInvalidUtf8(std::string_view text) {
  const auto offset = text::utf8::firstInvalidByte(text);
  if (!offset) {
    return std::nullopt;
  }
  const auto lead = static_cast<unsigned char>(text[*offset]);
  const std::size_t length = expectedLength(lead);
  if (length == 0) {
    return Utf8Fault{*offset, "byte " + hexByte(lead) + " cannot start a UTF-8 sequence"};
  }
  if (*offset + length > text.size()) {
    return Utf8Fault{*offset, "the UTF-8 sequence starting with " + hexByte(lead) +
                                  " is cut short by the end of the record"};
  }
  for (std::size_t k = 1; k < length; ++k) {
    const auto next = static_cast<unsigned char>(text[*offset + k]);
    if ((next & 0xc0u) != 0x80u) {
      return Utf8Fault{*offset, "byte " + hexByte(lead) +
                                    " is not followed by a UTF-8 continuation byte (next is " +
                                    hexByte(next) + "); is the file Latin-1 or Windows-1252?"};
    }
  }
  return Utf8Fault{*offset, "the UTF-8 sequence starting with " + hexByte(lead) +
                                " is overlong or encodes a surrogate or a code point past "
                                "U+10FFFF"};
}

}  // namespace lorascope::data

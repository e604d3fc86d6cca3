// Utf8.cpp — UTF-8 walking, validation (with the reason), lossy repair and White_Space.
#include "common/Utf8.h"

#include <cstdio>

namespace lorascope::common::utf8 {

namespace {

bool isContinuation(unsigned char byte) {
  return (byte & 0xC0) == 0x80;
}

// Valid range of the second byte after a given lead byte (Unicode table 3-7); the other
// continuation bytes are always 0x80..0xBF.
struct LeadInfo {
  std::size_t length;
  unsigned char secondMin;
  unsigned char secondMax;
};

std::optional<LeadInfo> leadInfo(unsigned char lead) {
  if (lead < 0x80)
    return LeadInfo{1, 0, 0};
  if (lead >= 0xC2 && lead <= 0xDF)
    return LeadInfo{2, 0x80, 0xBF};
  if (lead == 0xE0)
    return LeadInfo{3, 0xA0, 0xBF};
  if (lead == 0xED)
    return LeadInfo{3, 0x80, 0x9F};  // no surrogates
  if (lead >= 0xE1 && lead <= 0xEF)
    return LeadInfo{3, 0x80, 0xBF};
  if (lead == 0xF0)
    return LeadInfo{4, 0x90, 0xBF};
  if (lead >= 0xF1 && lead <= 0xF3)
    return LeadInfo{4, 0x80, 0xBF};
  if (lead == 0xF4)
    return LeadInfo{4, 0x80, 0x8F};  // nothing above U+10FFFF
  return std::nullopt;
}

// Bytes of the valid prefix of a sequence at pos (1 when the lead itself is invalid): the
// "maximal subpart" that one U+FFFD replaces.
std::size_t maximalSubpart(std::string_view text, std::size_t pos) {
  const auto info = leadInfo(static_cast<unsigned char>(text[pos]));
  if (!info || pos + 1 >= text.size())
    return 1;
  const auto second = static_cast<unsigned char>(text[pos + 1]);
  if (second < info->secondMin || second > info->secondMax)
    return 1;
  std::size_t n = 2;
  while (n < info->length && pos + n < text.size() &&
         isContinuation(static_cast<unsigned char>(text[pos + n]))) {
    ++n;
  }
  return n;
}

std::string hexByte(unsigned char byte) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", static_cast<unsigned>(byte));
  return text;
}

}  // namespace

std::size_t sequenceLength(std::string_view text, std::size_t pos) {
  const auto info = leadInfo(static_cast<unsigned char>(text[pos]));
  if (!info)
    return 0;
  if (info->length == 1)
    return 1;
  if (pos + info->length > text.size())
    return 0;
  const auto second = static_cast<unsigned char>(text[pos + 1]);
  if (second < info->secondMin || second > info->secondMax)
    return 0;
  for (std::size_t i = 2; i < info->length; ++i) {
    if (!isContinuation(static_cast<unsigned char>(text[pos + i])))
      return 0;
  }
  return info->length;
}

char32_t decodeAt(std::string_view text, std::size_t pos, std::size_t length) {
  const auto lead = static_cast<unsigned char>(text[pos]);
  if (length == 1)
    return lead;
  static constexpr unsigned char kLeadMask[5] = {0, 0, 0x1F, 0x0F, 0x07};
  char32_t cp = lead & kLeadMask[length];
  for (std::size_t i = 1; i < length; ++i) {
    cp = (cp << 6) | (static_cast<unsigned char>(text[pos + i]) & 0x3F);
  }
  return cp;
}

std::optional<std::size_t> firstInvalidByte(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<unsigned char>(text[pos]) < 0x80) {
      ++pos;
      continue;
    }
    const std::size_t n = sequenceLength(text, pos);
    if (n == 0)
      return pos;
    pos += n;
  }
  return std::nullopt;
}

std::optional<Fault> findFault(std::string_view text) {
  const auto offset = firstInvalidByte(text);
  if (!offset)
    return std::nullopt;
  const auto lead = static_cast<unsigned char>(text[*offset]);
  const auto info = leadInfo(lead);
  if (!info)
    return Fault{*offset, "byte " + hexByte(lead) + " cannot start a UTF-8 sequence"};
  if (*offset + info->length > text.size()) {
    return Fault{*offset, "the UTF-8 sequence starting with " + hexByte(lead) +
                              " is cut short by the end of the text"};
  }
  for (std::size_t k = 1; k < info->length; ++k) {
    const auto next = static_cast<unsigned char>(text[*offset + k]);
    if (!isContinuation(next)) {
      return Fault{*offset, "byte " + hexByte(lead) +
                                " is not followed by a UTF-8 continuation byte (next is " +
                                hexByte(next) + "); is the file Latin-1 or Windows-1252?"};
    }
  }
  return Fault{*offset, "the UTF-8 sequence starting with " + hexByte(lead) +
                            " is overlong or encodes a surrogate or a code point past U+10FFFF"};
}

void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t pos = 0;
  while (pos < bytes.size()) {
    const std::size_t n = sequenceLength(bytes, pos);
    if (n != 0) {
      out.append(bytes.substr(pos, n));
      pos += n;
    } else {
      out.append("\xEF\xBF\xBD");  // U+FFFD
      pos += maximalSubpart(bytes, pos);
    }
  }
  return out;
}

bool isWhiteSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::size_t leadingWhiteSpaceBytes(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t n = sequenceLength(text, pos);
    if (n == 0 || !isWhiteSpace(decodeAt(text, pos, n))) {
      break;
    }
    pos += n;
  }
  return pos;
}

std::size_t trailingWhiteSpaceStart(std::string_view text) {
  std::size_t end = text.size();
  while (const auto last = lastCodePoint(text.substr(0, end))) {
    if (!isWhiteSpace(last->first)) {
      break;
    }
    end -= last->second;
  }
  return end;
}

std::string_view trimWhiteSpace(std::string_view text) {
  const std::size_t begin = leadingWhiteSpaceBytes(text);
  return text.substr(begin, trailingWhiteSpaceStart(text.substr(begin)));
}

std::optional<std::pair<char32_t, std::size_t>> lastCodePoint(std::string_view text) {
  if (text.empty())
    return std::nullopt;
  std::size_t start = text.size() - 1;
  while (start > 0 && isContinuation(static_cast<unsigned char>(text[start])))
    --start;
  const std::size_t n = text.size() - start;
  return std::make_pair(decodeAt(text, start, n), n);
}

}  // namespace lorascope::common::utf8

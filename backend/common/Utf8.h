// Utf8.h — UTF-8 for every box: walking code points, strict validation (RFC 3629: no
// overlongs, no surrogates, nothing past U+10FFFF) with a reason a user can act on, encoding,
// Rust's from_utf8_lossy replacement (what `tokenizers` applies when decoding bytes) and
// Unicode White_Space (Rust's char::is_whitespace, regex \s, Python's str.strip). The classes
// that need Unicode's tables (\w, is_numeric) are backend/text's (text/UnicodeClasses.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace lorascope::common::utf8 {

// Byte length of the valid UTF-8 sequence starting at text[pos], or 0 when it is invalid
// (overlong, surrogate, above U+10FFFF, truncated, stray continuation byte).
std::size_t sequenceLength(std::string_view text, std::size_t pos);
// Code point of the valid sequence at text[pos] of `length` bytes (from sequenceLength).
char32_t decodeAt(std::string_view text, std::size_t pos, std::size_t length);
// Offset of the first invalid byte, or nullopt when the whole text is valid UTF-8.
std::optional<std::size_t> firstInvalidByte(std::string_view text);

struct Fault {
  std::size_t offset = 0;  // of the first byte of the bad sequence, from the start of the text
  std::string reason;      // e.g. "byte 0xff cannot start a UTF-8 sequence"
};
// The first invalid byte and why it is invalid, so a report names it instead of failing later;
// nullopt when `text` is valid UTF-8.
std::optional<Fault> findFault(std::string_view text);
void append(std::string& out, char32_t codePoint);
// Valid UTF-8 from arbitrary bytes: each maximal invalid subpart becomes U+FFFD (the Unicode
// "substitution of maximal subparts" practice, as Rust's String::from_utf8_lossy does).
std::string lossy(std::string_view bytes);

// Unicode White_Space (Rust's char::is_whitespace and regex \s).
bool isWhiteSpace(char32_t c);

// Bytes of the White_Space run that starts `text`.
std::size_t leadingWhiteSpaceBytes(std::string_view text);
// Offset where the White_Space run that ends `text` begins (text.size() when there is none).
std::size_t trailingWhiteSpaceStart(std::string_view text);
// `text` without White_Space at either end (Python's str.strip, Jinja's trim).
std::string_view trimWhiteSpace(std::string_view text);

// The last code point of `text` (valid UTF-8) and its byte length; nullopt when empty.
std::optional<std::pair<char32_t, std::size_t>> lastCodePoint(std::string_view text);

}  // namespace lorascope::common::utf8

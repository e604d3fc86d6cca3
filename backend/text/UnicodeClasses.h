// UnicodeClasses.h — the Unicode classes of `tokenizers` that need Unicode's category tables
// (utf8proc): Rust regex's \w and char::is_numeric. The table-free UTF-8 helpers (walking,
// validation, White_Space) are common/Utf8.h.
#pragma once

namespace lorascope::text::unicode {

// Rust regex's Unicode \w: letters, marks, decimal digits, connector punctuation, letter
// numbers and the joiners ZWNJ/ZWJ.
bool isWordChar(char32_t c);
// Rust's char::is_numeric: general categories Nd, Nl, No.
bool isNumeric(char32_t c);

}  // namespace lorascope::text::unicode

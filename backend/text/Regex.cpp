// Regex.cpp — PCRE2 (8-bit) compile/match for the Split pre-tokenizer and Replace steps.
#include "text/Regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>  // defines: pcre2_compile, pcre2_match, pcre2_jit_compile

#include "text/TextError.h"

namespace lorascope::text {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

namespace {

struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};

std::string pcre2Message(int errorCode) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(errorCode, buffer, sizeof buffer);
  return n < 0 ? "unknown PCRE2 error " + std::to_string(errorCode)
               : std::string(reinterpret_cast<const char*>(buffer));
}

}  // namespace

std::string translateOnigurumaPattern(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '\\' && i + 1 < pattern.size()) {
      const char next = pattern[i + 1];
      if (next == 's') {
        out += "\\p{White_Space}";
      } else if (next == 'S') {
        out += "\\P{White_Space}";
      } else {
        out += pattern[i];
        out += next;
      }
      ++i;
      continue;
    }
    out += pattern[i];
  }
  return out;
}

Regex::Regex(std::string_view pattern, const std::string& context) : pattern_(pattern) {
  const std::string translated = translateOnigurumaPattern(pattern);
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  pcre2_code* code =
      pcre2_compile(reinterpret_cast<PCRE2_SPTR>(translated.data()), translated.size(),
                    PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
  if (code == nullptr) {
    throw TextError(context + ": invalid regex '" + std::string(pattern) + "' at offset " +
                    std::to_string(errorOffset) + ": " + pcre2Message(errorCode));
  }
  auto owned = std::make_shared<Code>();
  owned->code = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = std::move(owned);
}

std::vector<std::pair<std::size_t, std::size_t>> Regex::findAll(std::string_view subject) const {
  std::vector<std::pair<std::size_t, std::size_t>> matches;
  const std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr));
  const auto* text = reinterpret_cast<PCRE2_SPTR>(subject.data());
  std::size_t offset = 0;
  while (offset <= subject.size()) {
    // The subject was validated as UTF-8 by the caller, so PCRE2 need not check it again.
    const int rc = jit_ ? pcre2_jit_match(code_->code, text, subject.size(), offset,
                                          PCRE2_NO_UTF_CHECK, data.get(), nullptr)
                        : pcre2_match(code_->code, text, subject.size(), offset, PCRE2_NO_UTF_CHECK,
                                      data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0) {
      throw TextError("regex '" + pattern_ + "' failed to match: " + pcre2Message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const std::size_t start = ovector[0];
    const std::size_t end = ovector[1];
    if (end > start) {
      matches.emplace_back(start, end);
      offset = end;
    } else {
      // An empty match is no split point; step over one whole code point.
      offset = end + 1;
      while (offset < subject.size() &&
             (static_cast<unsigned char>(subject[offset]) & 0xC0) == 0x80) {
        ++offset;
      }
    }
  }
  return matches;
}

}  // namespace lorascope::text

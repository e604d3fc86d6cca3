// Regex.cpp — PCRE2 (8-bit) compile/match for the Split pre-tokenizer and Replace steps.
#include "text/Regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>  // defines: pcre2_compile, pcre2_match, pcre2_jit_compile

#include <algorithm>

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

std::vector<std::string> Regex::groupNames() const {
  uint32_t count = 0;
  uint32_t entrySize = 0;
  PCRE2_SPTR table = nullptr;
  pcre2_pattern_info(code_->code, PCRE2_INFO_NAMECOUNT, &count);
  pcre2_pattern_info(code_->code, PCRE2_INFO_NAMEENTRYSIZE, &entrySize);
  pcre2_pattern_info(code_->code, PCRE2_INFO_NAMETABLE, &table);
  // Each entry: the group's number (two bytes, big-endian), then its name, NUL-terminated.
  std::vector<std::pair<int, std::string>> numbered;
  for (uint32_t i = 0; i < count; ++i) {
    const PCRE2_SPTR entry = table + i * entrySize;
    numbered.emplace_back((entry[0] << 8) | entry[1],
                          std::string(reinterpret_cast<const char*>(entry + 2)));
  }
  std::sort(numbered.begin(), numbered.end());
  std::vector<std::string> names;
  for (auto& [number, name] : numbered) {
    names.push_back(std::move(name));
  }
  return names;
}

std::optional<std::vector<std::pair<std::string, std::string>>> Regex::matchNamed(
    std::string_view subject) const {
  const std::unique_ptr<pcre2_match_data, MatchDataDeleter> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr));
  // Checked as UTF-8 here (no PCRE2_NO_UTF_CHECK): a bad byte is an error code, not a match.
  const int rc = pcre2_match(code_->code, reinterpret_cast<PCRE2_SPTR>(subject.data()),
                             subject.size(), 0, 0, data.get(), nullptr);
  if (rc < 0) {
    return std::nullopt;
  }
  std::vector<std::pair<std::string, std::string>> groups;
  for (const std::string& name : groupNames()) {
    const int number =
        pcre2_substring_number_from_name(code_->code, reinterpret_cast<PCRE2_SPTR>(name.c_str()));
    PCRE2_SIZE length = 0;
    if (number < 0 ||
        pcre2_substring_length_bynumber(data.get(), static_cast<uint32_t>(number), &length) != 0) {
      continue;  // the group did not take part in the match
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    groups.emplace_back(name, std::string(subject.substr(ovector[2 * number], length)));
  }
  return groups;
}

}  // namespace lorascope::text

// Regex.h — a compiled PCRE2 pattern (UTF + Unicode properties, JIT when available) standing in
// for the Oniguruma regexes of `tokenizers`. Patterns are rewritten so that \s and \S mean
// Unicode White_Space as in Oniguruma (PCRE2's \s with UCP misses U+0085).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lorascope::text {

class Regex {
 public:
  // Throws TextError "<context>: invalid regex ... at offset N: <PCRE2 message>".
  Regex(std::string_view pattern, const std::string& context);

  // [start, end) byte ranges of the non-empty, non-overlapping matches in `subject` (valid
  // UTF-8), left to right.
  std::vector<std::pair<std::size_t, std::size_t>> findAll(std::string_view subject) const;

  // The named groups of the pattern ((?<name>...)), in the order of their numbers.
  std::vector<std::string> groupNames() const;
  // The first match in `subject` (any bytes; text that is not valid UTF-8 never matches): each
  // named group that took part, with its text; nullopt when there is no match.
  std::optional<std::vector<std::pair<std::string, std::string>>> matchNamed(
      std::string_view subject) const;

  const std::string& pattern() const { return pattern_; }
  bool jit() const { return jit_; }

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
  std::string pattern_;
  bool jit_ = false;
};

// An Oniguruma pattern with \s / \S replaced by \p{White_Space} / \P{White_Space}.
std::string translateOnigurumaPattern(std::string_view pattern);

}  // namespace lorascope::text

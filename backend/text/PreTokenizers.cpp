// PreTokenizers.cpp — tokenizer.json pre-tokenizers: Split (regex or string, all five
// behaviours, invert), ByteLevel, Metaspace, Digits, Whitespace, WhitespaceSplit, Sequence.
#include <algorithm>
#include <memory>

#include "common/Utf8.h"
#include "text/ByteLevel.h"
#include "text/Components.h"
#include "text/Regex.h"
#include "text/TextError.h"
#include "text/UnicodeClasses.h"  // defines: unicode::isNumeric

namespace lorascope::text {

namespace {

using Ranges = std::vector<std::pair<std::size_t, std::size_t>>;

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parseBehavior(const std::string& name, const std::string& where) {
  if (name == "Removed")
    return Behavior::Removed;
  if (name == "Isolated")
    return Behavior::Isolated;
  if (name == "MergedWithPrevious")
    return Behavior::MergedWithPrevious;
  if (name == "MergedWithNext")
    return Behavior::MergedWithNext;
  if (name == "Contiguous")
    return Behavior::Contiguous;
  throw TextError(where + ": unknown split behavior '" + name + "'");
}

struct Segment {
  std::size_t start;
  std::size_t end;
  bool isMatch;
};

// The pieces of `piece` around `matches` (sorted, non-overlapping), arranged by `behavior`
// the way `tokenizers` does; empty pieces are dropped.
void splitPiece(const Piece& piece, const Ranges& matches, Behavior behavior, bool invert,
                std::vector<Piece>& out) {
  std::vector<Segment> segments;
  std::size_t prev = 0;
  for (const auto& [start, end] : matches) {
    if (prev != start)
      segments.push_back({prev, start, invert});
    segments.push_back({start, end, !invert});
    prev = end;
  }
  if (prev != piece.text.size())
    segments.push_back({prev, piece.text.size(), invert});

  std::vector<Segment> merged;
  switch (behavior) {
    case Behavior::Isolated:
      merged = segments;
      break;
    case Behavior::Removed:
      for (const Segment& s : segments) {
        if (!s.isMatch)
          merged.push_back(s);
      }
      break;
    case Behavior::MergedWithPrevious: {
      bool previousMatch = false;
      for (const Segment& s : segments) {
        if (s.isMatch && !previousMatch && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previousMatch = s.isMatch;
      }
      break;
    }
    case Behavior::MergedWithNext: {
      bool nextMatch = false;
      for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
        if (it->isMatch && !nextMatch && !merged.empty()) {
          merged.back().start = it->start;
        } else {
          merged.push_back(*it);
        }
        nextMatch = it->isMatch;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
    case Behavior::Contiguous: {
      bool previousMatch = false;
      for (const Segment& s : segments) {
        if (s.isMatch == previousMatch && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previousMatch = s.isMatch;
      }
      break;
    }
  }
  for (const Segment& s : merged) {
    if (s.end > s.start) {
      out.push_back({piece.text.substr(s.start, s.end - s.start), piece.atStart && s.start == 0});
    }
  }
}

using Matcher = std::function<Ranges(const std::string&)>;

PreTokenizeFn splitWith(Matcher matcher, Behavior behavior, bool invert) {
  return [matcher = std::move(matcher), behavior, invert](std::vector<Piece>& pieces) {
    std::vector<Piece> out;
    out.reserve(pieces.size() * 2);
    for (const Piece& piece : pieces)
      splitPiece(piece, matcher(piece.text), behavior, invert, out);
    pieces = std::move(out);
  };
}

Matcher literalMatcher(std::string literal) {
  return [literal = std::move(literal)](const std::string& text) {
    Ranges ranges;
    if (literal.empty())
      return ranges;
    for (std::size_t pos = text.find(literal); pos != std::string::npos;
         pos = text.find(literal, pos + literal.size())) {
      ranges.emplace_back(pos, pos + literal.size());
    }
    return ranges;
  };
}

Matcher regexMatcher(const Regex& regex) {
  return [regex](const std::string& text) { return regex.findAll(text); };
}

// Ranges of single code points for which `predicate` holds.
template <typename Predicate>
Matcher charMatcher(Predicate predicate) {
  return [predicate](const std::string& text) {
    Ranges ranges;
    std::size_t pos = 0;
    while (pos < text.size()) {
      const std::size_t n = common::utf8::sequenceLength(text, pos);
      if (predicate(common::utf8::decodeAt(text, pos, n)))
        ranges.emplace_back(pos, pos + n);
      pos += n;
    }
    return ranges;
  };
}

// GPT-2's pattern, used by ByteLevel when use_regex is true.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

PreTokenizeFn makeByteLevel(const Json& spec, const std::string& where) {
  const bool addPrefixSpace = boolField(spec, "add_prefix_space", true, where);
  const bool useRegex = boolField(spec, "use_regex", true, where);
  PreTokenizeFn split;
  if (useRegex) {
    split = splitWith(regexMatcher(Regex(kGpt2Pattern, where)), Behavior::Isolated, false);
  }
  return [addPrefixSpace, split](std::vector<Piece>& pieces) {
    if (addPrefixSpace) {
      for (Piece& piece : pieces) {
        if (piece.text.empty() || piece.text.front() != ' ')
          piece.text.insert(0, " ");
      }
    }
    if (split)
      split(pieces);
    for (Piece& piece : pieces) {
      std::string mapped;
      mapped.reserve(piece.text.size() * 2);
      bytelevel::encode(piece.text, mapped);
      piece.text = std::move(mapped);
    }
  };
}

PreTokenizeFn makeMetaspace(const Json& spec, const std::string& where) {
  const std::string replacement = stringField(spec, "replacement", where);
  if (replacement.empty() || common::utf8::sequenceLength(replacement, 0) != replacement.size()) {
    throw TextError(where + ": Metaspace replacement must be one character");
  }
  std::string scheme;
  if (spec.contains("prepend_scheme") && spec.at("prepend_scheme").is_string()) {
    scheme = spec.at("prepend_scheme").get<std::string>();
  } else {
    scheme = boolField(spec, "add_prefix_space", true, where) ? "always" : "never";
  }
  if (scheme != "always" && scheme != "first" && scheme != "never") {
    throw TextError(where + ": unknown Metaspace prepend_scheme '" + scheme + "'");
  }
  const bool split = boolField(spec, "split", true, where);
  const PreTokenizeFn splitter =
      split ? splitWith(literalMatcher(replacement), Behavior::MergedWithNext, false)
            : PreTokenizeFn{};
  return [replacement, scheme, splitter](std::vector<Piece>& pieces) {
    for (Piece& piece : pieces) {
      std::string replaced;
      replaced.reserve(piece.text.size() + replacement.size());
      for (const char c : piece.text) {
        if (c == ' ') {
          replaced += replacement;
        } else {
          replaced += c;
        }
      }
      const bool startsWithReplacement = replaced.rfind(replacement, 0) == 0;
      if (!startsWithReplacement && (scheme == "always" || (scheme == "first" && piece.atStart))) {
        replaced.insert(0, replacement);
      }
      piece.text = std::move(replaced);
    }
    if (splitter)
      splitter(pieces);
  };
}

}  // namespace

PreTokenizeFn makePreTokenizer(const Json& spec, const std::string& source, std::string& describe,
                               int depth) {
  if (spec.is_null())
    return {};
  const std::string where = source + ": pre_tokenizer";
  checkSequenceDepth(depth, where);
  const std::string type = stringField(spec, "type", where);
  describe = type;
  if (type == "Split") {
    const Json& pattern = requireField(spec, "pattern", where);
    const Behavior behavior = parseBehavior(stringField(spec, "behavior", where), where);
    const bool invert = boolField(spec, "invert", false, where);
    if (pattern.is_object() && pattern.contains("Regex") && pattern.at("Regex").is_string()) {
      return splitWith(
          regexMatcher(Regex(pattern.at("Regex").get<std::string>(), where + " Split")), behavior,
          invert);
    }
    if (pattern.is_object() && pattern.contains("String") && pattern.at("String").is_string()) {
      return splitWith(literalMatcher(pattern.at("String").get<std::string>()), behavior, invert);
    }
    throw TextError(where + ": Split pattern must be {\"Regex\": ...} or {\"String\": ...}");
  }
  if (type == "ByteLevel")
    return makeByteLevel(spec, where + " ByteLevel");
  if (type == "Metaspace")
    return makeMetaspace(spec, where + " Metaspace");
  if (type == "Digits") {
    const bool individual = boolField(spec, "individual_digits", false, where);
    return splitWith(charMatcher(unicode::isNumeric),
                     individual ? Behavior::Isolated : Behavior::Contiguous, false);
  }
  if (type == "Whitespace") {
    // Rust regex's \w+|[^\w\s]+, kept; everything else (white space) removed.
    constexpr const char* kWord = R"(\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D})";
    const std::string pattern = std::string("[") + kWord + "]+|[^" + kWord + R"(\s]+)";
    return splitWith(regexMatcher(Regex(pattern, where)), Behavior::Removed, true);
  }
  if (type == "WhitespaceSplit") {
    return splitWith(charMatcher(common::utf8::isWhiteSpace), Behavior::Removed, false);
  }
  if (type == "Sequence") {
    auto fns = sequenceSteps<PreTokenizeFn>(
        spec, "pretokenizers", where, describe, [&](const Json& step, std::string& name) {
          return makePreTokenizer(step, source, name, depth + 1);
        });
    return [fns](std::vector<Piece>& pieces) {
      for (const auto& fn : fns) {
        fn(pieces);
      }
    };
  }
  throw TextError(where + ": pre-tokenizer type '" + type +
                  "' is not supported (supported: Split, ByteLevel, Metaspace, Digits, "
                  "Whitespace, WhitespaceSplit, Sequence)");
}

}  // namespace lorascope::text

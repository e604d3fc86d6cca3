// AddedVocabulary.cpp — added-token matching as `tokenizers` does it: a leftmost-longest scan;
// a single_word token must not touch word characters (\w) on either side; lstrip/rstrip widen
// the match over neighbouring white space, which is then dropped with the token.
#include "text/AddedVocabulary.h"

#include <algorithm>

#include "common/Utf8.h"
#include "text/TextError.h"
#include "text/UnicodeClasses.h"  // defines: unicode::isWordChar

namespace lorascope::text {

namespace {

bool endsWithWordChar(std::string_view text) {
  const auto last = common::utf8::lastCodePoint(text);
  return last && unicode::isWordChar(last->first);
}

bool startsWithWordChar(std::string_view text) {
  if (text.empty())
    return false;
  const std::size_t n = common::utf8::sequenceLength(text, 0);
  return n != 0 && unicode::isWordChar(common::utf8::decodeAt(text, 0, n));
}

}  // namespace

void AddedVocabulary::MatchSet::build() {
  for (auto& list : byFirstByte)
    list.clear();
  for (std::size_t i = 0; i < patterns.size(); ++i) {
    if (!patterns[i].empty()) {
      byFirstByte[static_cast<unsigned char>(patterns[i][0])].push_back(i);
    }
  }
  for (auto& list : byFirstByte) {
    std::stable_sort(list.begin(), list.end(), [this](std::size_t a, std::size_t b) {
      return patterns[a].size() > patterns[b].size();
    });
  }
}

AddedVocabulary::AddedVocabulary(const nlohmann::json& addedTokens, const NormalizeFn& normalizer,
                                 const std::string& source) {
  const std::string where = source + ": added_tokens";
  if (addedTokens.is_null())
    return;
  if (!addedTokens.is_array())
    throw TextError(where + " must be an array");
  for (const auto& entry : addedTokens) {
    AddedToken token;
    token.content = stringField(entry, "content", where);
    const auto& id = requireField(entry, "id", where);
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() > 0x7FFFFFFF) {
      throw TextError(where + ": token '" + token.content + "' has no valid id");
    }
    token.id = id.get<std::int32_t>();
    token.singleWord = boolField(entry, "single_word", false, where);
    token.lstrip = boolField(entry, "lstrip", false, where);
    token.rstrip = boolField(entry, "rstrip", false, where);
    token.special = boolField(entry, "special", false, where);
    token.normalized = boolField(entry, "normalized", !token.special, where);
    if (token.content.empty())
      continue;  // `tokenizers` ignores empty tokens
    if (common::utf8::firstInvalidByte(token.content)) {
      throw TextError(where + ": token with id " + std::to_string(token.id) +
                      " is not valid UTF-8");
    }
    if (const auto it = byContent_.find(token.content); it != byContent_.end()) {
      tokens_[it->second] = token;  // a later entry for the same text wins
      continue;
    }
    byContent_.emplace(token.content, tokens_.size());
    tokens_.push_back(std::move(token));
  }
  // Special tokens are tried before the others in `tokenizers`; both sets are then matched
  // leftmost-longest, so the order only matters for identical patterns.
  std::vector<std::size_t> order(tokens_.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_partition(order.begin(), order.end(),
                        [this](std::size_t i) { return tokens_[i].special; });
  for (const std::size_t i : order) {
    const AddedToken& token = tokens_[i];
    byId_[token.id] = i;
    MatchSet& set = token.normalized ? normalized_ : raw_;
    std::string pattern = token.content;
    if (token.normalized && normalizer)
      normalizer(pattern);
    set.patterns.push_back(std::move(pattern));
    set.tokenIndex.push_back(i);
  }
  raw_.build();
  normalized_.build();
}

const AddedToken* AddedVocabulary::byId(std::int32_t id) const {
  const auto it = byId_.find(id);
  return it == byId_.end() ? nullptr : &tokens_[it->second];
}

std::optional<std::int32_t> AddedVocabulary::idOf(std::string_view content) const {
  const auto it = byContent_.find(std::string(content));
  if (it == byContent_.end())
    return std::nullopt;
  return tokens_[it->second].id;
}

std::int32_t AddedVocabulary::maxId() const {
  std::int32_t best = -1;
  for (const auto& token : tokens_)
    best = std::max(best, token.id);
  return best;
}

void AddedVocabulary::split(const TextSplit& input, const MatchSet& set,
                            std::vector<TextSplit>& out) const {
  const std::string_view text = input.text;
  if (set.patterns.empty() || text.empty()) {
    out.push_back(input);
    return;
  }
  std::size_t emitted = 0;  // end of what has been emitted so far
  std::size_t scan = 0;     // where the search for the next match starts
  while (scan < text.size()) {
    // Leftmost start with any pattern; the longest pattern there.
    std::size_t matchStart = text.size();
    std::size_t matchPattern = 0;
    for (std::size_t pos = scan; pos < text.size() && matchStart == text.size(); ++pos) {
      for (const std::size_t p : set.byFirstByte[static_cast<unsigned char>(text[pos])]) {
        const std::string& pattern = set.patterns[p];
        if (text.compare(pos, pattern.size(), pattern) == 0) {
          matchStart = pos;
          matchPattern = p;
          break;  // lists are longest first
        }
      }
    }
    if (matchStart == text.size())
      break;
    const std::size_t matchEnd = matchStart + set.patterns[matchPattern].size();
    scan = matchEnd;
    const AddedToken& token = tokens_[set.tokenIndex[matchPattern]];
    if (token.singleWord) {
      const bool spaceBefore = matchStart == 0 || !endsWithWordChar(text.substr(0, matchStart));
      const bool spaceAfter = matchEnd == text.size() || !startsWithWordChar(text.substr(matchEnd));
      if (!spaceBefore || !spaceAfter)
        continue;
    }
    std::size_t start = matchStart;
    std::size_t stop = matchEnd;
    if (token.lstrip)
      start = std::max(common::utf8::trailingWhiteSpaceStart(text.substr(0, start)), emitted);
    if (token.rstrip)
      stop += common::utf8::leadingWhiteSpaceBytes(text.substr(stop));
    if (emitted < start) {
      out.push_back({std::string(text.substr(emitted, start - emitted)), std::nullopt,
                     input.atStart && emitted == 0});
    }
    out.push_back(
        {std::string(text.substr(start, stop - start)), token.id, input.atStart && start == 0});
    emitted = stop;
  }
  if (emitted < text.size()) {
    out.push_back({std::string(text.substr(emitted)), std::nullopt, input.atStart && emitted == 0});
  }
}

std::vector<TextSplit> AddedVocabulary::extractAndNormalize(std::string_view text,
                                                            const NormalizeFn& normalizer) const {
  std::vector<TextSplit> rawSplits;
  split(TextSplit{std::string(text), std::nullopt, true}, raw_, rawSplits);
  std::vector<TextSplit> out;
  out.reserve(rawSplits.size());
  for (TextSplit& piece : rawSplits) {
    if (piece.addedId) {
      out.push_back(std::move(piece));
      continue;
    }
    if (normalizer)
      normalizer(piece.text);
    split(piece, normalized_, out);
  }
  return out;
}

}  // namespace lorascope::text

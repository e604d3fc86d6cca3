// AddedVocabulary.h — the added_tokens of tokenizer.json (special tokens such as <|im_start|>
// and user-added tokens) and how they are cut out of the text before the model sees it:
// leftmost-longest matching, single_word / lstrip / rstrip, normalized vs raw matching.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/Components.h"

namespace lorascope::text {

struct AddedToken {
  std::int32_t id = 0;
  std::string content;
  bool singleWord = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

// A part of the input: either text still to tokenize or an added token found in it.
struct TextSplit {
  std::string text;
  std::optional<std::int32_t> addedId;
  bool atStart = false;  // begins at offset 0 of the original input
};

class AddedVocabulary {
 public:
  AddedVocabulary() = default;
  // `normalizer` turns the content of normalized tokens into what they match.
  AddedVocabulary(const nlohmann::json& addedTokens, const NormalizeFn& normalizer,
                  const std::string& source);

  // Splits `text` (the raw input) into added tokens and normalized text pieces.
  std::vector<TextSplit> extractAndNormalize(std::string_view text,
                                             const NormalizeFn& normalizer) const;

  const AddedToken* byId(std::int32_t id) const;
  std::optional<std::int32_t> idOf(std::string_view content) const;
  std::size_t size() const { return tokens_.size(); }
  std::int32_t maxId() const;

 private:
  // Patterns matched against one kind of text (raw or normalized).
  struct MatchSet {
    std::vector<std::string> patterns;
    std::vector<std::size_t> tokenIndex;                    // per pattern: into tokens_
    std::array<std::vector<std::size_t>, 256> byFirstByte;  // pattern indices, longest first
    void build();
  };
  void split(const TextSplit& input, const MatchSet& set, std::vector<TextSplit>& out) const;

  std::vector<AddedToken> tokens_;
  std::unordered_map<std::int32_t, std::size_t> byId_;
  std::unordered_map<std::string, std::size_t> byContent_;
  MatchSet raw_;
  MatchSet normalized_;
};

}  // namespace lorascope::text

// BpeModel.h — the BPE model of tokenizer.json: vocabulary, ranked merges, and the word ->
// ids step (ignore_merges, byte_fallback "<0xNN>" tokens, unk_token with fuse_unk,
// continuing_subword_prefix / end_of_word_suffix). Results are cached per word.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::text {

// Hash and equality that let unordered maps keyed by std::string be searched by string_view.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, std::int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  // `model` is the "model" object of tokenizer.json; errors name `source`.
  static std::unique_ptr<BpeModel> fromJson(const nlohmann::json& model, const std::string& source);

  // Appends the ids of one pre-tokenized word.
  void tokenize(std::string_view word, std::vector<std::int32_t>& out) const;

  std::optional<std::int32_t> tokenId(std::string_view token) const;
  const std::string* tokenText(std::int32_t id) const;  // nullptr when not in the vocabulary
  std::int32_t maxId() const { return maxId_; }
  std::size_t vocabEntries() const { return vocab_.size(); }
  std::size_t mergeCount() const { return merges_.size(); }
  bool byteFallback() const { return byteFallback_; }
  // Entries of the id -> token tables: grows with the vocabulary, not with its largest id.
  std::size_t idTableSlots() const { return idToToken_.size() + sparseIdToToken_.size(); }

 private:
  struct Merge {
    std::int32_t rank;
    std::int32_t mergedId;
  };
  static std::uint64_t pairKey(std::int32_t left, std::int32_t right) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) |
           static_cast<std::uint32_t>(right);
  }
  void initialSymbols(std::string_view word, std::vector<std::int32_t>& symbols) const;
  void mergeSymbols(std::vector<std::int32_t>& symbols) const;

  Vocab vocab_;
  // Gaps a dense id table may hold beyond twice the entries (small vocabularies with holes).
  static constexpr std::size_t kDenseIdSlack = 1024;
  std::vector<const std::string*> idToToken_;  // index = id; nullptr for gaps; empty when sparse
  std::unordered_map<std::int32_t, const std::string*> sparseIdToToken_;  // for sparse ids
  std::unordered_map<std::uint64_t, Merge> merges_;
  std::int32_t maxId_ = -1;
  std::optional<std::int32_t> unkId_;
  bool fuseUnk_ = false;
  bool byteFallback_ = false;
  bool ignoreMerges_ = false;
  std::string continuingSubwordPrefix_;
  std::string endOfWordSuffix_;
  std::int32_t byteFallbackIds_[256];  // id of "<0xNN>", -1 when absent

  // Words seen before and their ids; bounded so a huge corpus cannot grow it without limit.
  // Long words (whole texts, for SentencePiece-style files without a pre-tokenizer) rarely
  // repeat and are not cached.
  static constexpr std::size_t kCacheMaxWords = 100000;
  static constexpr std::size_t kCacheMaxWordBytes = 256;
  mutable std::mutex cacheMutex_;
  mutable std::unordered_map<std::string, std::vector<std::int32_t>, StringHash, std::equal_to<>>
      cache_;
};

}  // namespace lorascope::text

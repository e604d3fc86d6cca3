// BpeModel.cpp — loading vocab/merges and the rank-ordered merge loop.
//
// Merge order: repeatedly apply the pair with the lowest merge rank, the leftmost one among
// equal ranks, until no adjacent pair has a merge. A min-heap of candidate (rank, position)
// pairs over a doubly linked list of symbols does this in O(n log n); heap entries whose
// symbols have changed since they were pushed are recognised and skipped.
#include "text/BpeModel.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "common/Utf8.h"
#include "text/TextError.h"

namespace lorascope::text {

namespace {

std::string optionalString(const nlohmann::json& model, const char* key) {
  if (!model.contains(key) || model.at(key).is_null())
    return {};
  return model.at(key).get<std::string>();
}

std::pair<std::string, std::string> parseMerge(const nlohmann::json& merge, std::size_t index,
                                               const std::string& where) {
  if (merge.is_string()) {
    const auto& text = merge.get_ref<const std::string&>();
    const std::size_t space = text.find(' ');
    if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
      throw TextError(where + ": merge #" + std::to_string(index) + " '" + text +
                      "' is not two tokens separated by one space");
    }
    return {text.substr(0, space), text.substr(space + 1)};
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
    return {merge[0].get<std::string>(), merge[1].get<std::string>()};
  }
  throw TextError(where + ": merge #" + std::to_string(index) +
                  " must be \"a b\" or [\"a\", \"b\"]");
}

}  // namespace

std::unique_ptr<BpeModel> BpeModel::fromJson(const nlohmann::json& model,
                                             const std::string& source) {
  const std::string where = source + ": model";
  auto bpe = std::make_unique<BpeModel>();
  if (!model.contains("vocab") || !model.at("vocab").is_object()) {
    throw TextError(where + ": 'vocab' must be an object of token -> id");
  }
  for (const auto& [token, id] : model.at("vocab").items()) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 0 ||
        id.get<std::int64_t>() > 0x7FFFFFFF) {
      throw TextError(where + ": vocab entry '" + token + "' has no valid id");
    }
    bpe->vocab_.insert_or_assign(token, id.get<std::int32_t>());
  }
  for (const auto& [token, id] : bpe->vocab_)
    bpe->maxId_ = std::max(bpe->maxId_, id);
  // A table indexed by id while the ids are nearly dense (the usual 0..n-1); a hash map when
  // they are sparse, so that one id of 1.5e9 costs one entry and not 12 GB of empty slots.
  const auto slots = static_cast<std::size_t>(bpe->maxId_) + 1;
  if (slots <= 2 * bpe->vocab_.size() + kDenseIdSlack) {
    bpe->idToToken_.assign(slots, nullptr);
    for (const auto& entry : bpe->vocab_)
      bpe->idToToken_[entry.second] = &entry.first;
  } else {
    bpe->sparseIdToToken_.reserve(bpe->vocab_.size());
    for (const auto& entry : bpe->vocab_)
      bpe->sparseIdToToken_.emplace(entry.second, &entry.first);
  }

  if (model.contains("dropout") && model.at("dropout").is_number() &&
      model.at("dropout").get<double>() > 0.0) {
    throw TextError(where + ": BPE dropout is not supported (it makes ids random; set it to null)");
  }
  bpe->continuingSubwordPrefix_ = optionalString(model, "continuing_subword_prefix");
  bpe->endOfWordSuffix_ = optionalString(model, "end_of_word_suffix");
  bpe->fuseUnk_ = model.value("fuse_unk", false);
  bpe->byteFallback_ = model.value("byte_fallback", false);
  bpe->ignoreMerges_ = model.value("ignore_merges", false);
  const std::string unk = optionalString(model, "unk_token");
  if (!unk.empty()) {
    const auto it = bpe->vocab_.find(unk);
    if (it == bpe->vocab_.end()) {
      throw TextError(where + ": unk_token '" + unk + "' is not in the vocabulary");
    }
    bpe->unkId_ = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    const auto it = bpe->vocab_.find(std::string_view(name));
    bpe->byteFallbackIds_[b] = it == bpe->vocab_.end() ? -1 : it->second;
  }

  if (!model.contains("merges") || !model.at("merges").is_array()) {
    throw TextError(where + ": 'merges' must be an array");
  }
  const auto& merges = model.at("merges");
  const std::size_t prefixLength = bpe->continuingSubwordPrefix_.size();
  for (std::size_t i = 0; i < merges.size(); ++i) {
    const auto [left, right] = parseMerge(merges[i], i, where);
    const auto leftIt = bpe->vocab_.find(left);
    const auto rightIt = bpe->vocab_.find(right);
    if (leftIt == bpe->vocab_.end() || rightIt == bpe->vocab_.end()) {
      throw TextError(where + ": merge #" + std::to_string(i) + " '" + left + " " + right +
                      "' uses a token that is not in the vocabulary");
    }
    // The merged token drops the continuing-subword prefix of the right part.
    const std::string merged =
        left + (prefixLength > 0 && right.rfind(bpe->continuingSubwordPrefix_, 0) == 0
                    ? right.substr(prefixLength)
                    : right);
    const auto mergedIt = bpe->vocab_.find(merged);
    if (mergedIt == bpe->vocab_.end()) {
      throw TextError(where + ": merge #" + std::to_string(i) + " gives '" + merged +
                      "', which is not in the vocabulary");
    }
    // A repeated pair keeps its last rank, as `tokenizers` does.
    bpe->merges_.insert_or_assign(pairKey(leftIt->second, rightIt->second),
                                  Merge{static_cast<std::int32_t>(i), mergedIt->second});
  }
  return bpe;
}

std::optional<std::int32_t> BpeModel::tokenId(std::string_view token) const {
  const auto it = vocab_.find(token);
  if (it == vocab_.end())
    return std::nullopt;
  return it->second;
}

const std::string* BpeModel::tokenText(std::int32_t id) const {
  if (!sparseIdToToken_.empty()) {
    const auto it = sparseIdToToken_.find(id);
    return it == sparseIdToToken_.end() ? nullptr : it->second;
  }
  if (id < 0 || static_cast<std::size_t>(id) >= idToToken_.size())
    return nullptr;
  return idToToken_[id];
}

void BpeModel::initialSymbols(std::string_view word, std::vector<std::int32_t>& symbols) const {
  constexpr std::int32_t kNone = -1;
  std::int32_t pendingUnk = kNone;  // unk of a run of unknown characters not yet emitted
  std::string piece;
  std::size_t pos = 0;
  while (pos < word.size()) {
    std::size_t n = common::utf8::sequenceLength(word, pos);
    if (n == 0)
      n = 1;  // words are valid UTF-8; never loop forever on anything else
    const bool first = pos == 0;
    const bool last = pos + n == word.size();
    piece.clear();
    if (!first)
      piece += continuingSubwordPrefix_;
    piece.append(word.substr(pos, n));
    if (last)
      piece += endOfWordSuffix_;

    if (const auto it = vocab_.find(piece); it != vocab_.end()) {
      if (pendingUnk != kNone)
        symbols.push_back(pendingUnk);
      pendingUnk = kNone;
      symbols.push_back(it->second);
      pos += n;
      continue;
    }
    if (byteFallback_) {
      bool allBytes = true;
      for (std::size_t i = 0; i < n; ++i) {
        allBytes = allBytes && byteFallbackIds_[static_cast<std::uint8_t>(word[pos + i])] >= 0;
      }
      if (allBytes) {
        if (pendingUnk != kNone)
          symbols.push_back(pendingUnk);
        pendingUnk = kNone;
        for (std::size_t i = 0; i < n; ++i) {
          symbols.push_back(byteFallbackIds_[static_cast<std::uint8_t>(word[pos + i])]);
        }
        pos += n;
        continue;
      }
    }
    if (unkId_) {
      // With fuse_unk a run of unknown characters becomes one unk token.
      if (pendingUnk != kNone && !fuseUnk_)
        symbols.push_back(pendingUnk);
      pendingUnk = *unkId_;
    }
    // Without an unk_token the character is dropped, as in `tokenizers`.
    pos += n;
  }
  if (pendingUnk != kNone)
    symbols.push_back(pendingUnk);
}

void BpeModel::mergeSymbols(std::vector<std::int32_t>& symbols) const {
  const std::size_t n = symbols.size();
  if (n < 2)
    return;
  std::vector<std::int32_t> prev(n);
  std::vector<std::int32_t> next(n);
  std::vector<bool> alive(n, true);
  for (std::size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<std::int32_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1;
  }
  struct Candidate {
    std::int32_t rank;
    std::int32_t pos;
    std::int32_t mergedId;
    bool operator>(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto pushPair = [&](std::int32_t left) {
    const std::int32_t right = next[left];
    if (left < 0 || right < 0)
      return;
    const auto it = merges_.find(pairKey(symbols[left], symbols[right]));
    if (it != merges_.end())
      queue.push({it->second.rank, left, it->second.mergedId});
  };
  for (std::size_t i = 0; i + 1 < n; ++i)
    pushPair(static_cast<std::int32_t>(i));

  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    if (!alive[top.pos] || next[top.pos] < 0)
      continue;
    const std::int32_t right = next[top.pos];
    // Stale entry: the pair at this position is no longer the one that was pushed.
    const auto it = merges_.find(pairKey(symbols[top.pos], symbols[right]));
    if (it == merges_.end() || it->second.mergedId != top.mergedId)
      continue;
    symbols[top.pos] = top.mergedId;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0)
      prev[next[right]] = top.pos;
    if (prev[top.pos] >= 0)
      pushPair(prev[top.pos]);
    pushPair(top.pos);
  }
  std::size_t kept = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (alive[i])
      symbols[kept++] = symbols[i];
  }
  symbols.resize(kept);
}

void BpeModel::tokenize(std::string_view word, std::vector<std::int32_t>& out) const {
  if (word.empty())
    return;
  if (ignoreMerges_) {
    if (const auto it = vocab_.find(word); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    const std::lock_guard lock(cacheMutex_);
    if (const auto it = cache_.find(word); it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<std::int32_t> symbols;
  symbols.reserve(word.size());
  initialSymbols(word, symbols);
  mergeSymbols(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
  if (!cacheable)
    return;
  const std::lock_guard lock(cacheMutex_);
  if (cache_.size() >= kCacheMaxWords)
    cache_.clear();
  cache_.emplace(std::string(word), std::move(symbols));
}

}  // namespace lorascope::text

// train/Batching.cpp — sequences, packing, epoch order and padding.
#include "train/Batching.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "compute/Backend.h"  // defines: kIgnoreTarget
#include "train/Philox.h"     // defines: uniformBelow

namespace lorascope::train {
namespace {

constexpr std::uint64_t kShuffleTag = std::uint64_t{1} << 62;  // apart from init and dropout

std::int64_t countPredicted(const std::vector<std::int32_t>& labels) {
  std::int64_t n = 0;
  for (std::size_t t = 1; t < labels.size(); ++t) {
    n += labels[t] != compute::kIgnoreTarget ? 1 : 0;
  }
  return n;
}

}  // namespace

SequenceSet buildSequences(std::span<const TokenizedExample> examples, std::int64_t maxSeqLen,
                           bool packing) {
  if (maxSeqLen < 2) {
    throw std::invalid_argument("max_seq_len must be at least 2 tokens, got " +
                                std::to_string(maxSeqLen));
  }
  SequenceSet out;
  Sequence pack;
  auto flush = [&] {
    if (!pack.ids.empty()) {
      pack.predictedTokens = countPredicted(pack.labels);
      out.sequences.push_back(std::move(pack));
      pack = Sequence{};
    }
  };
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const TokenizedExample& e = examples[i];
    if (e.ids.empty() || e.ids.size() != e.labels.size()) {
      throw std::invalid_argument(
          "example " + std::to_string(i) + " has " + std::to_string(e.ids.size()) + " ids and " +
          std::to_string(e.labels.size()) + " labels; they must be equal and non-zero");
    }
    const auto length = static_cast<std::size_t>(
        std::min<std::int64_t>(static_cast<std::int64_t>(e.ids.size()), maxSeqLen));
    std::vector<std::int32_t> labels(e.labels.begin(), e.labels.begin() + length);
    if (countPredicted(labels) == 0) {
      ++out.droppedExamples;
      continue;
    }
    if (!packing) {
      out.sequences.push_back(
          {{e.ids.begin(), e.ids.begin() + length}, labels, countPredicted(labels)});
      continue;
    }
    if (static_cast<std::int64_t>(pack.ids.size() + length) > maxSeqLen) {
      flush();
    }
    if (!pack.ids.empty()) {
      labels.front() = compute::kIgnoreTarget;  // see Note [packing]
    }
    pack.ids.insert(pack.ids.end(), e.ids.begin(), e.ids.begin() + length);
    pack.labels.insert(pack.labels.end(), labels.begin(), labels.end());
  }
  flush();
  return out;
}

std::vector<std::int64_t> epochOrder(std::int64_t count, std::uint64_t seed, std::int64_t epoch,
                                     bool shuffle) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  std::iota(order.begin(), order.end(), std::int64_t{0});
  if (!shuffle) {
    return order;
  }
  const std::uint64_t stream = kShuffleTag | static_cast<std::uint64_t>(epoch);
  std::uint64_t index = 0;
  for (std::size_t i = order.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(uniformBelow(seed, stream, index, i));
    std::swap(order[i - 1], order[j]);
  }
  return order;
}

MicroBatch collate(std::span<const Sequence* const> rows) {
  MicroBatch mb;
  mb.batch = static_cast<std::int64_t>(rows.size());
  for (const Sequence* s : rows) {
    mb.seq = std::max(mb.seq, static_cast<std::int64_t>(s->ids.size()));
  }
  const auto seq = static_cast<std::size_t>(mb.seq);
  mb.ids.assign(rows.size() * seq, 0);
  mb.labels.assign(rows.size() * seq, compute::kIgnoreTarget);
  for (std::size_t r = 0; r < rows.size(); ++r) {
    std::copy(rows[r]->ids.begin(), rows[r]->ids.end(), mb.ids.begin() + r * seq);
    std::copy(rows[r]->labels.begin(), rows[r]->labels.end(), mb.labels.begin() + r * seq);
    mb.predictedTokens += rows[r]->predictedTokens;
    mb.realTokens += static_cast<std::int64_t>(rows[r]->ids.size());
  }
  return mb;
}

}  // namespace lorascope::train

// train/Batching.cpp — sequences, packing, epoch order and padding.
#include "train/Batching.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "compute/Backend.h"    // defines: kIgnoreTarget
#include "train/RandomDraws.h"  // defines: uniformBelow

namespace lorascope::train {
namespace {

constexpr std::uint64_t kShuffleTag = std::uint64_t{1} << 62;  // apart from init and dropout
// The shuffle of length groups (Note [length grouping] step 5): apart from the order's own.
constexpr std::uint64_t kGroupShuffleTag = kShuffleTag | (std::uint64_t{1} << 60);

std::int64_t countPredicted(const std::vector<std::int32_t>& labels) {
  std::int64_t n = 0;
  for (std::size_t t = 1; t < labels.size(); ++t) {
    n += labels[t] != compute::kIgnoreTarget ? 1 : 0;
  }
  return n;
}

void fisherYates(std::span<std::int64_t> items, std::uint64_t seed, std::uint64_t stream) {
  std::uint64_t index = 0;
  for (std::size_t i = items.size(); i > 1; --i) {
    const auto j = static_cast<std::size_t>(uniformBelow(seed, stream, index, i));
    std::swap(items[i - 1], items[j]);
  }
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
  fisherYates(order, seed, kShuffleTag | static_cast<std::uint64_t>(epoch));
  return order;
}

std::vector<std::int64_t> lengthGroupedOrder(std::span<const Sequence> sequences,
                                             std::int64_t group, std::uint64_t seed,
                                             std::int64_t epoch, bool shuffle) {
  if (group < 1) {
    throw std::invalid_argument("length groups must hold at least 1 sequence, got " +
                                std::to_string(group));
  }
  const auto count = static_cast<std::int64_t>(sequences.size());
  const auto length = [&](std::int64_t i) {
    return sequences[static_cast<std::size_t>(i)].ids.size();
  };
  const auto longerFirst = [&](std::int64_t a, std::int64_t b) { return length(a) > length(b); };
  std::vector<std::int64_t> order = epochOrder(count, seed, epoch, shuffle);
  const std::int64_t mega = std::clamp<std::int64_t>(count / (4 * group), 1, 50) * group;
  for (std::int64_t first = 0; first < count; first += mega) {
    const auto begin = order.begin() + first;
    std::stable_sort(begin, begin + std::min(mega, count - first), longerFirst);
  }
  // Whole groups by their first position; the short one, if any, stays after them.
  std::vector<std::int64_t> groups(static_cast<std::size_t>(count / group));
  std::iota(groups.begin(), groups.end(), std::int64_t{0});
  if (groups.empty()) {
    return order;  // one short group, sorted
  }
  if (shuffle) {
    fisherYates(groups, seed, kGroupShuffleTag | static_cast<std::uint64_t>(epoch));
  }
  // A group's longest sequence is its first. The first group holding the longest goes first.
  const auto head = [&](std::int64_t g) { return order[static_cast<std::size_t>(g * group)]; };
  const auto longest = std::min_element(
      groups.begin(), groups.end(), [&](auto a, auto b) { return longerFirst(head(a), head(b)); });
  std::iter_swap(groups.begin(), longest);
  const std::int64_t shortGroup = static_cast<std::int64_t>(groups.size()) * group;
  if (shortGroup < count &&
      longerFirst(order[static_cast<std::size_t>(shortGroup)], head(groups.front()))) {
    std::swap(order[static_cast<std::size_t>(shortGroup)],
              order[static_cast<std::size_t>(groups.front() * group)]);
    std::stable_sort(order.begin() + shortGroup, order.end(), longerFirst);
  }
  std::vector<std::int64_t> grouped;
  grouped.reserve(order.size());
  for (const std::int64_t g : groups) {
    const auto begin = order.begin() + g * group;
    grouped.insert(grouped.end(), begin, begin + group);
  }
  grouped.insert(grouped.end(), order.begin() + shortGroup, order.end());
  return grouped;
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

// train/Batching.cpp — sequences, packing, epoch order and padding.
#include "train/Batching.h"

#include <algorithm>
#include <numeric>
#include <set>
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

const char* packingName(Packing packing) {
  switch (packing) {
    case Packing::Off:
      return "off";
    case Packing::Causal:
      return "causal";
    case Packing::Documents:
      break;
  }
  return "documents";
}

Packing parsePacking(const std::string& word) {
  for (const Packing p : {Packing::Off, Packing::Causal, Packing::Documents}) {
    if (word == packingName(p)) {
      return p;
    }
  }
  throw std::invalid_argument("unknown packing '" + word + "' (off, causal or documents)");
}

namespace {

// Examples cut to maxSeqLen that have a trained token left, in dataset order.
struct CutExamples {
  std::vector<Sequence> kept;  // ids, labels; predictedTokens counted
  std::int64_t dropped = 0;
};
CutExamples cutExamples(std::span<const TokenizedExample> examples, std::int64_t maxSeqLen) {
  if (maxSeqLen < 2) {
    throw std::invalid_argument("max_seq_len must be at least 2 tokens, got " +
                                std::to_string(maxSeqLen));
  }
  CutExamples out;
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const TokenizedExample& e = examples[i];
    if (e.ids.empty() || e.ids.size() != e.labels.size()) {
      throw std::invalid_argument(
          "example " + std::to_string(i) + " has " + std::to_string(e.ids.size()) + " ids and " +
          std::to_string(e.labels.size()) + " labels; they must be equal and non-zero");
    }
    const auto length = static_cast<std::ptrdiff_t>(
        std::min<std::int64_t>(static_cast<std::int64_t>(e.ids.size()), maxSeqLen));
    Sequence s{{e.ids.begin(), e.ids.begin() + length},
               {e.labels.begin(), e.labels.begin() + length}};
    s.predictedTokens = countPredicted(s.labels);
    if (s.predictedTokens == 0) {
      ++out.dropped;
      continue;
    }
    out.kept.push_back(std::move(s));
  }
  return out;
}

// Appends `example` to `pack`; its first label becomes −100 when it is not the pack's first
// (Note [packing]).
void appendToPack(Sequence& pack, const Sequence& example, bool recordStart) {
  if (recordStart) {
    pack.documentStarts.push_back(static_cast<std::int32_t>(pack.ids.size()));
  }
  const bool first = pack.ids.empty();
  pack.ids.insert(pack.ids.end(), example.ids.begin(), example.ids.end());
  pack.labels.insert(pack.labels.end(), example.labels.begin(), example.labels.end());
  if (!first) {
    pack.labels[pack.labels.size() - example.labels.size()] = compute::kIgnoreTarget;
  }
}

// Note [packing]: greedy, in dataset order.
std::vector<Sequence> packGreedily(const std::vector<Sequence>& examples, std::int64_t maxSeqLen) {
  std::vector<Sequence> packs;
  Sequence pack;
  for (const Sequence& e : examples) {
    if (static_cast<std::int64_t>(pack.ids.size() + e.ids.size()) > maxSeqLen) {
      packs.push_back(std::move(pack));
      pack = Sequence{};
    }
    appendToPack(pack, e, false);
  }
  if (!pack.ids.empty()) {
    packs.push_back(std::move(pack));
  }
  return packs;
}

// Note [document packing]: best-fit decreasing over each window of kPackWindow examples. A window
// this long leaves its last few packs part-filled among hundreds of full ones; a longer one would
// only move examples further from their place in the data.
constexpr std::int64_t kPackWindow = 1024;

std::vector<Sequence> packBestFit(const std::vector<Sequence>& examples, std::int64_t maxSeqLen) {
  std::vector<Sequence> packs;
  const auto count = static_cast<std::int64_t>(examples.size());
  for (std::int64_t first = 0; first < count; first += kPackWindow) {
    std::vector<std::int64_t> window(
        static_cast<std::size_t>(std::min(kPackWindow, count - first)));
    std::iota(window.begin(), window.end(), first);
    const auto length = [&](std::int64_t i) {
      return static_cast<std::int64_t>(examples[static_cast<std::size_t>(i)].ids.size());
    };
    std::stable_sort(window.begin(), window.end(),
                     [&](std::int64_t a, std::int64_t b) { return length(a) > length(b); });
    std::set<std::pair<std::int64_t, std::size_t>> room;  // (tokens free, pack) of open packs
    for (const std::int64_t i : window) {
      const std::int64_t n = length(i);
      std::size_t pack = packs.size();
      if (const auto fit = room.lower_bound({n, std::size_t{0}}); fit != room.end()) {
        pack = fit->second;
        room.erase(fit);
      } else {
        packs.emplace_back();
      }
      appendToPack(packs[pack], examples[static_cast<std::size_t>(i)], true);
      const std::int64_t left = maxSeqLen - static_cast<std::int64_t>(packs[pack].ids.size());
      if (left > 0) {
        room.insert({left, pack});
      }
    }
  }
  return packs;
}

}  // namespace

SequenceSet buildSequences(std::span<const TokenizedExample> examples, std::int64_t maxSeqLen,
                           Packing packing) {
  CutExamples cut = cutExamples(examples, maxSeqLen);
  SequenceSet out;
  out.droppedExamples = cut.dropped;
  switch (packing) {
    case Packing::Off:
      out.sequences = std::move(cut.kept);
      return out;
    case Packing::Causal:
      out.sequences = packGreedily(cut.kept, maxSeqLen);
      break;
    case Packing::Documents:
      out.sequences = packBestFit(cut.kept, maxSeqLen);
      break;
  }
  for (Sequence& s : out.sequences) {
    s.predictedTokens = countPredicted(s.labels);
  }
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

std::int64_t paddedLength(std::int64_t longest, std::int64_t multiple, std::int64_t maxSeq) {
  const std::int64_t rounded = (longest + multiple - 1) / multiple * multiple;
  return maxSeq > 0 ? std::max(longest, std::min(rounded, maxSeq)) : rounded;
}

void fillDocumentStarts(const Sequence& row, std::span<std::int32_t> starts) {
  std::fill(starts.begin(), starts.end(), 0);
  const std::vector<std::int32_t>& first = row.documentStarts;
  for (std::size_t d = 0; d < first.size(); ++d) {
    const std::size_t end =
        d + 1 < first.size() ? static_cast<std::size_t>(first[d + 1]) : starts.size();
    std::fill(starts.begin() + first[d], starts.begin() + static_cast<std::ptrdiff_t>(end),
              first[d]);
  }
}

MicroBatch collate(std::span<const Sequence* const> rows, std::int64_t multiple,
                   std::int64_t maxSeq) {
  MicroBatch mb;
  mb.batch = static_cast<std::int64_t>(rows.size());
  for (const Sequence* s : rows) {
    mb.seq = std::max(mb.seq, static_cast<std::int64_t>(s->ids.size()));
  }
  mb.seq = paddedLength(mb.seq, multiple, maxSeq);  // Note [sequence buckets]
  const auto seq = static_cast<std::size_t>(mb.seq);
  mb.ids.assign(rows.size() * seq, 0);
  mb.labels.assign(rows.size() * seq, compute::kIgnoreTarget);
  const bool documents = std::any_of(rows.begin(), rows.end(),
                                     [](const Sequence* s) { return !s->documentStarts.empty(); });
  if (documents) {
    mb.documentStarts.assign(rows.size() * seq, 0);
  }
  for (std::size_t r = 0; r < rows.size(); ++r) {
    if (documents) {
      fillDocumentStarts(*rows[r], std::span(mb.documentStarts).subspan(r * seq, seq));
    }
    std::copy(rows[r]->ids.begin(), rows[r]->ids.end(), mb.ids.begin() + r * seq);
    std::copy(rows[r]->labels.begin(), rows[r]->labels.end(), mb.labels.begin() + r * seq);
    mb.predictedTokens += rows[r]->predictedTokens;
    mb.realTokens += static_cast<std::int64_t>(rows[r]->ids.size());
  }
  return mb;
}

}  // namespace lorascope::train

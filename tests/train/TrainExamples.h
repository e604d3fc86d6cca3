// TrainExamples.h — synthetic tokenized examples for the trainer tests. Qt-free, so the QtTest
// files and the GPU tests (which build without Qt on the device machine) share it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "train/Batching.h"     // defines: TokenizedExample
#include "train/RandomDraws.h"  // defines: uniformBelow

namespace lorascope::test {

// `count` examples of 4..15 tokens over a `vocab`-token vocabulary (the fixtures have 300); the
// first 1..3 labels of each are −100 (a prompt). Philox streams 1 and 2 of `seed`.
inline std::vector<train::TokenizedExample> syntheticExamples(int count, std::uint64_t seed,
                                                              std::uint64_t vocab = 300) {
  std::vector<train::TokenizedExample> out;
  std::uint64_t index = 0;
  for (int e = 0; e < count; ++e) {
    train::TokenizedExample ex;
    const auto length = 4 + train::uniformBelow(seed, 1, index, 12);
    for (std::uint64_t t = 0; t < length; ++t) {
      ex.ids.push_back(static_cast<std::int32_t>(train::uniformBelow(seed, 2, index, vocab)));
      ex.labels.push_back(t < 1 + static_cast<std::uint64_t>(e % 3) ? -100 : ex.ids.back());
    }
    out.push_back(std::move(ex));
  }
  return out;
}

// Real tokens / computed positions when `order` is cut into micro-batches of `micro` (each padded
// to its longest row, as collate pads).
inline double fillOf(const std::vector<train::Sequence>& sequences,
                     const std::vector<std::int64_t>& order, std::size_t micro) {
  std::int64_t real = 0, positions = 0;
  for (std::size_t first = 0; first < order.size(); first += micro) {
    std::vector<const train::Sequence*> rows;
    for (std::size_t i = first; i < std::min(order.size(), first + micro); ++i)
      rows.push_back(&sequences[static_cast<std::size_t>(order[i])]);
    const train::MicroBatch mb = train::collate(rows);
    real += mb.realTokens;
    positions += mb.positions();
  }
  return static_cast<double>(real) / static_cast<double>(positions);
}

}  // namespace lorascope::test

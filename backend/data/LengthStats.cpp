// LengthStats.cpp — percentiles and half-octave histogram of token lengths.
#include "data/LengthStats.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

namespace lorascope::data {

namespace {

constexpr std::size_t kFirstEdgeTokens = 16;  // below this one bin: [0, 16)

}  // namespace

std::size_t percentileNearestRank(const std::vector<std::size_t>& sorted, double percent) {
  if (sorted.empty()) {
    return 0;
  }
  const double rank = std::ceil(percent / 100.0 * static_cast<double>(sorted.size()));
  const std::size_t index = rank < 1.0 ? 0 : static_cast<std::size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

std::size_t histogramBinStart(std::size_t tokens) {
  if (tokens < kFirstEdgeTokens) {
    return 0;
  }
  const std::size_t power = std::bit_floor(tokens);  // 2^k <= tokens < 2^(k+1)
  const std::size_t middle = power + power / 2;
  return tokens >= middle ? middle : power;
}

std::size_t histogramBinEnd(std::size_t tokens) {
  if (tokens < kFirstEdgeTokens) {
    return kFirstEdgeTokens;
  }
  const std::size_t power = std::bit_floor(tokens);
  const std::size_t middle = power + power / 2;
  return tokens >= middle ? 2 * power : middle;
}

LengthSummary summariseLengths(std::vector<std::size_t> lengths) {
  LengthSummary summary;
  if (lengths.empty()) {
    return summary;
  }
  std::sort(lengths.begin(), lengths.end());
  summary.examples = lengths.size();
  summary.minTokens = lengths.front();
  summary.maxTokens = lengths.back();
  summary.p50Tokens = percentileNearestRank(lengths, 50);
  summary.p90Tokens = percentileNearestRank(lengths, 90);
  summary.p99Tokens = percentileNearestRank(lengths, 99);
  summary.totalTokens = std::accumulate(lengths.begin(), lengths.end(), std::uint64_t{0});
  summary.meanTokens =
      static_cast<double>(summary.totalTokens) / static_cast<double>(lengths.size());
  std::size_t from = histogramBinStart(summary.minTokens);
  auto it = lengths.begin();
  while (from <= summary.maxTokens) {
    const std::size_t to = histogramBinEnd(from);
    const auto stop = std::lower_bound(it, lengths.end(), to);
    summary.histogram.push_back({from, to, static_cast<std::size_t>(stop - it)});
    it = stop;
    from = to;
  }
  return summary;
}

}  // namespace lorascope::data

// LengthStats.h — the token-length distribution of a dataset: min, percentiles (nearest rank),
// max, mean and a histogram with half-octave bins (edges 16, 24, 32, 48, 64, 96, 128, ...), so
// that every power of two — the usual max_seq_len — is an edge and a long tail stays readable.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lorascope::data {

struct HistogramBin {
  std::size_t fromTokens = 0;  // inclusive
  std::size_t toTokens = 0;    // exclusive
  std::size_t examples = 0;
};

struct LengthSummary {
  std::size_t examples = 0;
  std::size_t minTokens = 0;
  std::size_t p50Tokens = 0;
  std::size_t p90Tokens = 0;
  std::size_t p99Tokens = 0;
  std::size_t maxTokens = 0;
  double meanTokens = 0.0;
  std::uint64_t totalTokens = 0;
  std::vector<HistogramBin> histogram;  // from the bin holding min to the bin holding max
};

// The nearest-rank percentile `percent` (0 < percent <= 100) of ascending `sorted`; 0 if empty.
std::size_t percentileNearestRank(const std::vector<std::size_t>& sorted, double percent);

// The edge bins start at: 0, 16, 24, 32, 48, 64, ... (each power of two and 1.5 times it).
std::size_t histogramBinStart(std::size_t tokens);
std::size_t histogramBinEnd(std::size_t tokens);  // exclusive end of the bin holding `tokens`

LengthSummary summariseLengths(std::vector<std::size_t> lengths);

}  // namespace lorascope::data

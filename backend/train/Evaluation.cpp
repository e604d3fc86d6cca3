// train/Evaluation.cpp — the seeded held-out split, the evaluation sequences, early stopping.
#include "train/Evaluation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "train/RandomDraws.h"

namespace lorascope::train {
namespace {

constexpr std::uint64_t kEvalSplitStream = std::uint64_t{1} << 61;  // apart from shuffle, dropout

}  // namespace

std::vector<TokenizedExample> splitForEvaluation(std::vector<TokenizedExample>& examples,
                                                 double fraction, std::uint64_t seed) {
  if (!(fraction > 0.0 && fraction < 1.0)) {
    throw std::invalid_argument("eval split must be a fraction in (0, 1), got " +
                                std::to_string(fraction));
  }
  const auto n = static_cast<std::int64_t>(examples.size());
  if (n < 2) {
    throw std::invalid_argument(
        "eval split needs at least 2 examples (one to train on, one to "
        "evaluate), the dataset has " +
        std::to_string(n));
  }
  const auto wanted = static_cast<std::int64_t>(std::ceil(fraction * static_cast<double>(n)));
  const std::int64_t heldOut = std::clamp<std::int64_t>(wanted, 1, n - 1);
  // A partial Fisher–Yates shuffle: its first heldOut positions are the held-out examples.
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    order[static_cast<std::size_t>(i)] = i;
  }
  std::uint64_t index = 0;
  std::vector<bool> held(static_cast<std::size_t>(n), false);
  for (std::int64_t i = 0; i < heldOut; ++i) {
    const auto j = static_cast<std::int64_t>(
        uniformBelow(seed, kEvalSplitStream, index, static_cast<std::uint64_t>(n - i)));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(i + j)]);
    held[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = true;
  }
  std::vector<TokenizedExample> train, eval;
  for (std::int64_t i = 0; i < n; ++i) {
    (held[static_cast<std::size_t>(i)] ? eval : train)
        .push_back(std::move(examples[static_cast<std::size_t>(i)]));
  }
  examples = std::move(train);
  return eval;
}

std::vector<Sequence> evaluationSequences(const std::vector<TokenizedExample>& examples,
                                          std::int64_t maxSeqLen) {
  SequenceSet set = buildSequences(examples, maxSeqLen, Packing::Off);
  if (set.sequences.empty()) {
    throw std::invalid_argument(
        "the evaluation set has no example with a predicted token within "
        "max_seq_len " +
        std::to_string(maxSeqLen) + " (" + std::to_string(set.droppedExamples) + " dropped)");
  }
  return std::move(set.sequences);
}

bool EarlyStopping::observe(const EvalMetrics& eval) {
  if (!best_ || eval.loss < best_->loss) {
    best_ = eval;
    withoutImprovement_ = 0;
  } else {
    ++withoutImprovement_;
  }
  return patience_ > 0 && withoutImprovement_ >= patience_;
}

}  // namespace lorascope::train

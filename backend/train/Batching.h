// train/Batching.h — from tokenized examples to micro-batches: sequences (one example, or several
// packed), the seeded order of each epoch, and padding into a (batch, seq) block.
//
// Note [packing]: with packing on, whole examples (each cut to maxSeqLen) are placed greedily, in
// dataset order, into sequences of at most maxSeqLen tokens. The first label of every example
// after the first in a pack is set to −100, so the tokens predicted are exactly those of the
// unpacked examples (the last token of one example never predicts the first of the next).
// Attention is causal over the whole pack and positions run on across examples, as in
// transformers' group_texts and TRL's ConstantLengthDataset; per-example attention masks are
// not applied.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace lorascope::train {

// One training example: token ids and unshifted labels (−100 = not trained), as
// data::ExampleEncoder produces them.
struct TokenizedExample {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> labels;  // same length as ids
};

// A row of a micro-batch.
struct Sequence {
  std::vector<std::int32_t> ids;
  std::vector<std::int32_t> labels;
  std::int64_t predictedTokens = 0;  // t with labels[t+1] != −100
};

struct SequenceSet {
  std::vector<Sequence> sequences;
  std::int64_t droppedExamples = 0;  // no trained token left after cutting to maxSeqLen
};

// Throws std::invalid_argument naming the example whose ids and labels differ in length or that
// is empty, and for maxSeqLen < 2.
SequenceSet buildSequences(std::span<const TokenizedExample> examples, std::int64_t maxSeqLen,
                           bool packing);

// The order in which epoch `epoch` visits `count` sequences: a Fisher–Yates shuffle drawn from
// Philox stream shuffleStream(epoch) of `seed`, or 0..count−1 when shuffle is off.
std::vector<std::int64_t> epochOrder(std::int64_t count, std::uint64_t seed, std::int64_t epoch,
                                     bool shuffle);

// Sequences padded on the right to the longest (pad id 0, label −100): with causal attention the
// padding changes nothing before it.
struct MicroBatch {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::vector<std::int32_t> ids;     // (batch, seq)
  std::vector<std::int32_t> labels;  // (batch, seq)
  std::int64_t predictedTokens = 0;
  std::int64_t realTokens = 0;  // tokens that are not padding
};
MicroBatch collate(std::span<const Sequence* const> rows);

}  // namespace lorascope::train

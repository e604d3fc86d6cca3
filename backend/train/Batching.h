// train/Batching.h — from tokenized examples to micro-batches: sequences (one example, or several
// packed), the seeded order of each epoch, and padding into a (batch, seq) block.
//
// Note [packing]: with packing causal (--packing), whole examples (each cut to maxSeqLen) are
// placed greedily, in dataset order, into sequences of at most maxSeqLen tokens. The first label
// of every example after the first in a pack is set to −100, so the tokens predicted are exactly
// those of the unpacked examples (the last token of one example never predicts the first of the
// next). Attention is causal over the whole pack and positions run on across examples, as in
// transformers' group_texts and TRL's ConstantLengthDataset; per-example attention masks are
// not applied.
//
// Note [document packing]: with packing documents, the packed examples do not see each other:
//   - each pack records where its examples start (Sequence::documentStarts); collate gives every
//     token its example's start in the row (MicroBatch::documentStarts), which the attention ops
//     take as the first key the token may see (block-diagonal causal attention,
//     Backend::AttentionOptions) and from which the RoPE positions restart at 0 for each example
//     (model::makeSequenceLayout). The first label of each example after the first is −100 as
//     above, so loss and gradients are those of the examples run one per row, padded.
//   - the packs are filled by best-fit decreasing over windows of examples in dataset order
//     (kPackWindow in Batching.cpp): a window's examples longest first, each into the pack it fills
//     most tightly (the fullest one with room; ties to the older pack), else into a new pack. On
//     alpaca-style data the greedy packing in dataset order leaves about a quarter of the
//     positions as padding (77% real); this fills 98-99%.
//   - the packs are a function of the examples' lengths alone (no seed, no epoch), so a resumed
//     run rebuilds the same packs; each epoch visits them in the order epochOrder or
//     lengthGroupedOrder gives from (seed, epoch), as any sequences.
//
// Note [length grouping]: with group-by-length on, an epoch's order puts sequences of similar
// length together, so that a micro-batch, padded to its longest row (collate), computes little
// padding — the design of Hugging Face Trainer's group_by_length (its LengthGroupedSampler):
//   1. the epoch's order as without grouping (epochOrder: seeded shuffle, or dataset order);
//   2. cut into mega-batches of `mult` groups, mult = min(count / (4 × group), 50), at least 1;
//   3. each mega-batch sorted longest first (ties keep step 1's order);
//   4. cut into groups of `group` sequences — the optimizer step's effective batch, so every
//      micro-batch of a step comes from one group whatever the micro-batch size is now (it may
//      change at any step; the effective batch does not) and only the last group is short;
//   5. with shuffle on, the whole groups shuffled (Philox stream of the epoch, apart from the
//      order's own), so that lengths do not fall within a mega-batch step after step; the short
//      group stays last, where the epoch's last step takes what is left;
//   6. the group holding the longest sequence first, so that a batch that does not fit the
//      device fails in the first step, not hours in (when only the short group holds it, its
//      longest sequence trades places with the first group's).
// Unlike Trainer, which keeps each mega-batch longest first, step 5 shuffles the groups. The
// order is a function of (lengths, group, seed, epoch, shuffle): a resumed run continues it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
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
  // Packing::Documents: where each packed example begins (0 first, rising); empty otherwise.
  std::vector<std::int32_t> documentStarts = {};
};

// How examples become sequences (the --packing setting).
enum class Packing : std::uint8_t {
  Off,        // one example per sequence
  Causal,     // Note [packing]: greedy, in dataset order; attention over the whole pack
  Documents,  // Note [document packing]: best-fit decreasing; each example attends to itself
};
const char* packingName(Packing packing);  // "off", "causal", "documents"
// Throws std::invalid_argument naming the word when it is none of packingName's.
Packing parsePacking(const std::string& word);

struct SequenceSet {
  std::vector<Sequence> sequences;
  std::int64_t droppedExamples = 0;  // no trained token left after cutting to maxSeqLen
};

// Throws std::invalid_argument naming the example whose ids and labels differ in length or that
// is empty, and for maxSeqLen < 2.
SequenceSet buildSequences(std::span<const TokenizedExample> examples, std::int64_t maxSeqLen,
                           Packing packing);

// The order in which epoch `epoch` visits `count` sequences: a Fisher–Yates shuffle drawn from
// Philox stream shuffleStream(epoch) of `seed`, or 0..count−1 when shuffle is off.
std::vector<std::int64_t> epochOrder(std::int64_t count, std::uint64_t seed, std::int64_t epoch,
                                     bool shuffle);

// The order of epoch `epoch` with sequences of similar length grouped (Note [length grouping]):
// a permutation of 0..sequences.size()−1 whose runs of `group` sequences (the effective batch)
// are each sorted longest first. Throws std::invalid_argument for group < 1.
std::vector<std::int64_t> lengthGroupedOrder(std::span<const Sequence> sequences,
                                             std::int64_t group, std::uint64_t seed,
                                             std::int64_t epoch, bool shuffle);

// `longest` rounded up to a multiple of `multiple` (≥ 1), but not past maxSeq (when > 0) unless
// longest is: the padded length of a micro-batch (Note [sequence buckets]; a whole-step graph's
// shape, train/StepGraphs.h).
std::int64_t paddedLength(std::int64_t longest, std::int64_t multiple, std::int64_t maxSeq);

// Sequences padded on the right (pad id 0, label −100) to the longest, or with a multiple > 1 to
// paddedLength (Note [sequence buckets]): with causal attention the padding changes nothing
// before it.
//
// Note [sequence buckets]: unpacked batches are as long as their longest example, so on a GPU a
// step met new GEMM shapes whenever that length changed, and a vendor GEMM meets a shape cold. On
// the H200 (cuBLAS 13) the 15 GEMM shapes of a Llama-3.2-1B layer took 7 ms longer (median over 45
// lengths, up to 30) the first time a token count came than the next time (0.5-1 ms), the host
// choosing and loading kernels while the device waited; every layer shares the shapes, so that was
// once a step. A GPU run pads each micro-batch to a multiple of kGpuSequenceMultiple instead (at
// most 15 positions a row more): a few dozen shapes a run, each cold once. Not with LoRA dropout:
// an eager step draws its masks over the batch's positions (Backend::dropoutMask), so the padding
// would change every row's but the first from what the CPU, or the same run unpadded, draws.
inline constexpr std::int64_t kGpuSequenceMultiple = 16;
struct MicroBatch {
  std::int64_t batch = 0;
  std::int64_t seq = 0;
  std::vector<std::int32_t> ids;     // (batch, seq)
  std::vector<std::int32_t> labels;  // (batch, seq)
  // With rows of Packing::Documents: (batch, seq), the row offset where each token's example
  // begins (padding: the row's last example's); empty when no row has documentStarts.
  std::vector<std::int32_t> documentStarts;
  std::int64_t predictedTokens = 0;
  std::int64_t realTokens = 0;                            // tokens that are not padding
  std::int64_t positions() const { return batch * seq; }  // computed, padding included
};
MicroBatch collate(std::span<const Sequence* const> rows, std::int64_t multiple = 1,
                   std::int64_t maxSeq = 0);
// One row of MicroBatch::documentStarts: each of `row`'s documents' start from its first token to
// the next start, the last one through the padding (every start 0 for a row without starts).
void fillDocumentStarts(const Sequence& row, std::span<std::int32_t> starts);

}  // namespace lorascope::train

// test_train_loop.cpp — the optimizer-step loop on the tiny Llama fixture: bit-identical runs from
// the same seed, bit-identical resume from a saved TrainerState, micro-batch size changes that
// keep the effective batch (and the trajectory), packing (document packing's fill, and its run
// continued bit for bit by a resumed run), seeded epoch order (and its
// length-grouped form, continued bit for bit by a resumed run), learning on
// repeated data, per-step metrics, cancellation, config errors, a host state that follows the
// backend's adapter and moments, and the state mirror's snapshot of a step taken before the next
// step runs.
#include "TestRunner.h"

#include <set>

#include "TrainExamples.h"
#include "TrainTestUtil.h"
#include "train/Batching.h"
#include "train/StateCodec.h"
#include "train/TrainLoop.h"

using namespace lorascope;
using namespace lorascope::test;
using train::StepMetrics;
using train::TokenizedExample;
using train::TrainConfig;
using train::TrainLoop;

namespace {

// Examples over the fixture's 300-token vocabulary.
std::vector<TokenizedExample> examples(int count, std::uint64_t seed) {
  return syntheticExamples(count, seed);
}

// The small run with weight decay and a cosine schedule after 2 warm-up steps.
TrainConfig smallConfig() {
  TrainConfig c = smallTrainConfig();
  c.adamw.weightDecay = 0.01;
  c.schedule = train::ScheduleKind::Cosine;
  c.warmupSteps = 2;
  return c;
}

// The small run over three whole epochs instead of its 6 steps.
TrainConfig threeEpochs() {
  TrainConfig c = smallConfig();
  c.maxSteps = 0;
  c.epochs = 3;
  return c;
}

std::vector<StepMetrics> runAll(TrainLoop& loop) {
  std::vector<StepMetrics> out;
  loop.run([&](const StepMetrics& m) { out.push_back(m); });
  return out;
}

bool sameAdapter(const train::LoraAdapter& a, const train::LoraAdapter& b) {
  if (a.weights.size() != b.weights.size())
    return false;
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    if (!bitIdentical(a.weights[i].a, b.weights[i].a) ||
        !bitIdentical(a.weights[i].b, b.weights[i].b))
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE(sameSeedGivesBitIdenticalRuns) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainLoop first(*backend, folder.config(), folder.weights(), examples(10, 1), smallConfig());
  TrainLoop second(*backend, folder.config(), folder.weights(), examples(10, 1), smallConfig());
  const auto a = runAll(first), b = runAll(second);
  COMPARE(a.size(), std::size_t{6});
  for (std::size_t i = 0; i < a.size(); ++i) {
    VERIFY(a[i].loss == b[i].loss);  // bit for bit, not fuzzy
    VERIFY(a[i].gradNorm == b[i].gradNorm);
  }
  VERIFY(sameAdapter(first.state().adapter, second.state().adapter));
  TrainConfig other = smallConfig();
  other.seed = 99;
  TrainLoop third(*backend, folder.config(), folder.weights(), examples(10, 1), other);
  VERIFY(runAll(third)[0].loss != a[0].loss);  // another shuffle, another dropout
}

TEST_CASE(resumeFromStateIsBitIdentical) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  // 10 sequences / 4 per step: 3 steps per epoch, the last one of 2
  const TrainConfig config = threeEpochs();
  TrainLoop uninterrupted(*backend, folder.config(), folder.weights(), examples(10, 2), config);
  const auto all = runAll(uninterrupted);
  COMPARE(all.size(), std::size_t{9});
  COMPARE(all[2].epoch.value_or(-1.0), 1.0);  // epochs done: the first, whole
  COMPARE(all[3].epoch.value_or(-1.0), 1.4);  // and 4 of its 10 sequences into the second

  TrainLoop interrupted(*backend, folder.config(), folder.weights(), examples(10, 2), config);
  for (int i = 0; i < 4; ++i)
    interrupted.step();
  const train::TrainerState saved = interrupted.state();  // what a checkpoint holds
  COMPARE(saved.step, std::int64_t{4});
  TrainLoop resumed(*backend, folder.config(), folder.weights(), examples(10, 2), config, saved);
  const auto rest = runAll(resumed);
  COMPARE(rest.size(), std::size_t{5});
  for (std::size_t i = 0; i < rest.size(); ++i) {
    COMPARE(rest[i].step, all[i + 4].step);
    VERIFY(rest[i].loss == all[i + 4].loss);
  }
  VERIFY(sameAdapter(resumed.state().adapter, uninterrupted.state().adapter));
  for (std::size_t i = 0; i < saved.moments.size(); ++i) {
    VERIFY(
        bitIdentical(resumed.state().moments[i].secondB, uninterrupted.state().moments[i].secondB));
  }
}

// The CPU-fallback toggle's move, between two CPU backends: everything the next steps depend on
// (adapter, moments, data cursor across an epoch boundary, dropout and shuffle RNG) carries over,
// so the moved run is the unmoved one bit for bit, and the old backend is no longer used.
TEST_CASE(moveToAnotherBackendContinuesBitForBit) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto first = compute::createCpuBackend();
  auto second = compute::createCpuBackend();
  // 3 steps per epoch: the move after step 4 is inside epoch 1
  const TrainConfig config = threeEpochs();
  TrainLoop unmoved(*first, folder.config(), folder.weights(), examples(10, 2), config);
  const auto all = runAll(unmoved);
  // Read now: state() copies the adapter from unmoved's backend, which is `first`.
  const train::TrainerState expected = unmoved.state();

  TrainLoop moved(*first, folder.config(), folder.weights(), examples(10, 2), config);
  for (int i = 0; i < 4; ++i)
    moved.step();
  moved.moveTo(*second, folder.weights());
  COMPARE(&moved.backend(), second.get());
  first.reset();  // a step that still called it would use a destroyed object (ASan: sanitize)
  const auto rest = runAll(moved);
  COMPARE(rest.size(), all.size() - 4);
  for (std::size_t i = 0; i < rest.size(); ++i) {
    COMPARE(rest[i].step, all[i + 4].step);
    COMPARE(rest[i].epoch.value_or(-1.0), all[i + 4].epoch.value_or(-2.0));
    VERIFY(rest[i].loss == all[i + 4].loss);
    VERIFY(rest[i].gradNorm == all[i + 4].gradNorm);
  }
  VERIFY(sameAdapter(moved.state().adapter, expected.adapter));
  for (std::size_t i = 0; i < moved.state().moments.size(); ++i) {
    VERIFY(bitIdentical(moved.state().moments[i].secondA, expected.moments[i].secondA));
  }
}

TEST_CASE(microBatchChangeKeepsEffectiveBatch) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainConfig config = smallConfig();
  config.lora.dropout = 0.0;  // masks are keyed by micro-batch index; without them the steps agree
  TrainLoop steady(*backend, folder.config(), folder.weights(), examples(12, 3), config);
  TrainLoop changing(*backend, folder.config(), folder.weights(), examples(12, 3), config);
  std::vector<StepMetrics> a, b;
  for (int i = 0; i < 5; ++i) {
    if (i == 1)
      changing.setMicroBatchSize(1, "user");
    if (i == 3)
      changing.setMicroBatchSize(3, "oom");
    a.push_back(steady.step());
    b.push_back(changing.step());
  }
  COMPARE(b[1].microBatch, std::int64_t{1});
  COMPARE(b[1].accumulation, std::int64_t{4});
  COMPARE(b[3].microBatch, std::int64_t{3});
  COMPARE(b[3].accumulation, std::int64_t{2});  // 3 + 1 sequences
  for (std::size_t i = 0; i < a.size(); ++i) {
    COMPARE(b[i].predictedTokens, a[i].predictedTokens);
    VERIFY2(std::fabs(a[i].loss - b[i].loss) < 1e-5 * a[i].loss,
            lstest::format("step %zu: %g vs %g", i, a[i].loss, b[i].loss));
  }
  const auto& history = changing.state().microBatchHistory;
  COMPARE(history.size(), std::size_t{3});
  COMPARE(history[0], (train::MicroBatchChange{0, 2, 2, "start"}));
  COMPARE(history[1], (train::MicroBatchChange{1, 1, 4, "user"}));
  COMPARE(history[2], (train::MicroBatchChange{3, 3, 2, "oom"}));
  VERIFY(throwsNaming<std::invalid_argument>([&] { changing.setMicroBatchSize(5, "user"); },
                                             "exceeds the effective batch 4"));
}

TEST_CASE(packingKeepsPredictedTokens) {
  const auto data = examples(20, 4);
  const train::SequenceSet plain = train::buildSequences(data, 16, train::Packing::Off);
  const train::SequenceSet packed = train::buildSequences(data, 16, train::Packing::Causal);
  COMPARE(plain.sequences.size(), data.size());
  VERIFY(packed.sequences.size() < plain.sequences.size());
  std::int64_t plainTokens = 0, packedTokens = 0;
  std::size_t packedLength = 0;
  for (const auto& s : plain.sequences)
    plainTokens += s.predictedTokens;
  for (const auto& s : packed.sequences) {
    packedTokens += s.predictedTokens;
    packedLength += s.ids.size();
    VERIFY(s.ids.size() <= 16 && s.ids.size() == s.labels.size());
  }
  COMPARE(packedTokens, plainTokens);
  std::size_t total = 0;
  for (const auto& e : data)
    total += e.ids.size();
  COMPARE(packedLength, total);
  // Truncation to 3 tokens leaves examples with 2+ masked prompt labels nothing to train.
  const train::SequenceSet cut = train::buildSequences(data, 3, train::Packing::Off);
  VERIFY(cut.droppedExamples > 0);
  COMPARE(cut.sequences.size() + static_cast<std::size_t>(cut.droppedExamples), data.size());
}

namespace {

// `count` examples of an alpaca-style dataset's lengths: q(u) = 64·e^(2.59·u) tokens for u uniform
// in [0, 1) (Philox stream 6 of `seed`), cut to 512 as train cuts them. The quartiles (122, 233,
// 445) and the fifth at 512 are those of the alpaca_en_demo fixture under a Qwen2-style
// tokenizer (quartiles 122, 244, 446; p95 at the 512 cut). The first 20 labels are a prompt.
std::vector<TokenizedExample> alpacaLengthExamples(int count, std::uint64_t seed) {
  std::vector<TokenizedExample> out;
  for (int e = 0; e < count; ++e) {
    const double u = train::uniformFloat(seed, 6, static_cast<std::uint64_t>(e));
    const auto length =
        std::min<std::size_t>(512, static_cast<std::size_t>(64 * std::exp(2.59 * u)));
    TokenizedExample ex;
    for (std::size_t t = 0; t < length; ++t) {
      ex.ids.push_back(static_cast<std::int32_t>(t % 300));
      ex.labels.push_back(t < 20 ? -100 : ex.ids.back());
    }
    out.push_back(std::move(ex));
  }
  return out;
}

}  // namespace

// Note [document packing]: every example once, whole, in a pack of at most max_seq_len whose
// starts mark it; the packs the same on every call (a resumed run rebuilds them); and ≥ 95% of
// the positions of micro-batches of 8 real tokens, in the epochs' shuffled order, on alpaca-like
// lengths (greedy causal packing reaches about 77% there).
TEST_CASE(documentPackingFillsItsPacksWithWholeExamples) {
  const auto data = alpacaLengthExamples(1500, 9);  // two best-fit windows
  const train::SequenceSet set = train::buildSequences(data, 512, train::Packing::Documents);
  COMPARE(set.droppedExamples, std::int64_t{0});
  COMPARE(train::buildSequences(data, 512, train::Packing::Documents).sequences.size(),
          set.sequences.size());
  std::multiset<std::size_t> examplesSeen, examplesGiven;
  std::int64_t predicted = 0, predictedGiven = 0;
  for (const TokenizedExample& e : data) {
    examplesGiven.insert(e.ids.size());
    predictedGiven += static_cast<std::int64_t>(e.ids.size()) - 20;
  }
  for (const train::Sequence& s : set.sequences) {
    VERIFY(s.ids.size() <= 512 && s.labels.size() == s.ids.size());
    VERIFY(!s.documentStarts.empty() && s.documentStarts.front() == 0);
    for (std::size_t d = 0; d < s.documentStarts.size(); ++d) {
      const std::size_t begin = static_cast<std::size_t>(s.documentStarts[d]);
      const std::size_t end = d + 1 < s.documentStarts.size()
                                  ? static_cast<std::size_t>(s.documentStarts[d + 1])
                                  : s.ids.size();
      VERIFY(end > begin);
      examplesSeen.insert(end - begin);
      COMPARE(s.ids[begin], std::int32_t{0});  // each example starts at its first token
      COMPARE(s.labels[begin], std::int32_t{-100});
    }
    predicted += s.predictedTokens;
  }
  VERIFY(examplesSeen == examplesGiven);
  COMPARE(predicted, predictedGiven);
  const auto count = static_cast<std::int64_t>(set.sequences.size());
  const auto causal = train::buildSequences(data, 512, train::Packing::Causal).sequences;
  for (std::int64_t epoch = 0; epoch < 3; ++epoch) {
    const double fill = fillOf(set.sequences, train::epochOrder(count, 42, epoch, true), 8);
    const double greedy = fillOf(
        causal, train::epochOrder(static_cast<std::int64_t>(causal.size()), 42, epoch, true), 8);
    lstest::info("epoch %lld: fill %.4f with document packing, %.4f with causal packing",
                 static_cast<long long>(epoch), fill, greedy);
    VERIFY2(fill >= 0.95 && fill > greedy + 0.1,
            lstest::format("epoch %lld: fill %.4f documents, %.4f causal",
                           static_cast<long long>(epoch), fill, greedy));
  }
  // collate gives each token its example's start; the padding keeps the row's last one.
  const train::Sequence* rows[] = {&set.sequences[0], &set.sequences.back()};
  const train::MicroBatch mb = train::collate(rows);
  COMPARE(mb.documentStarts.size(), mb.ids.size());
  const train::Sequence& last = set.sequences.back();
  for (std::int64_t t = 0; t < mb.seq; ++t) {
    std::int32_t want = 0;
    for (const std::int32_t start : last.documentStarts)
      want = start <= t ? start : want;
    COMPARE(mb.documentStarts[static_cast<std::size_t>(mb.seq + t)], want);
  }
}

// Note [sequence buckets]: a micro-batch padded to a multiple of its bucket (as a GPU run's are)
// holds the same tokens and labels, padding after them, and never grows past maxSeq.
TEST_CASE(collatePadsToTheBucketWithinMaxSeq) {
  train::Sequence longer;
  longer.ids = {5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21};  // 17 tokens
  longer.labels.assign(longer.ids.size(), 3);
  longer.predictedTokens = static_cast<std::int64_t>(longer.ids.size());
  train::Sequence shorter;
  shorter.ids = {1, 2, 3};
  shorter.labels = {compute::kIgnoreTarget, 4, 4};
  shorter.predictedTokens = 2;
  const train::Sequence* rows[] = {&longer, &shorter};
  const train::MicroBatch exact = train::collate(rows);
  COMPARE(exact.seq, std::int64_t{17});
  const train::MicroBatch bucket = train::collate(rows, train::kGpuSequenceMultiple, 512);
  COMPARE(bucket.seq, std::int64_t{32});
  COMPARE(bucket.positions(), std::int64_t{64});
  COMPARE(bucket.realTokens, exact.realTokens);
  COMPARE(bucket.predictedTokens, exact.predictedTokens);
  for (std::int64_t row = 0; row < 2; ++row) {
    for (std::int64_t t = 0; t < bucket.seq; ++t) {
      const auto at = static_cast<std::size_t>(row * bucket.seq + t);
      const bool real = t < exact.seq;
      const auto was = static_cast<std::size_t>(row * exact.seq + t);
      COMPARE(bucket.ids[at], real ? exact.ids[was] : 0);
      COMPARE(bucket.labels[at], real ? exact.labels[was] : compute::kIgnoreTarget);
    }
  }
  COMPARE(train::collate(rows, train::kGpuSequenceMultiple, 20).seq, std::int64_t{20});
  COMPARE(train::collate(rows, train::kGpuSequenceMultiple, 10).seq, std::int64_t{17});
  COMPARE(train::paddedLength(32, 16, 512), std::int64_t{32});
}

TEST_CASE(epochOrderIsASeededPermutation) {
  const auto a = train::epochOrder(50, 7, 0, true);
  COMPARE(std::set<std::int64_t>(a.begin(), a.end()).size(), std::size_t{50});
  COMPARE(train::epochOrder(50, 7, 0, true), a);
  VERIFY(train::epochOrder(50, 7, 1, true) != a);
  VERIFY(train::epochOrder(50, 8, 0, true) != a);
  const auto identity = train::epochOrder(5, 7, 3, false);
  COMPARE(identity, (std::vector<std::int64_t>{0, 1, 2, 3, 4}));
}

namespace {

// `count` sequences of 1..300 tokens (Philox stream 5 of `seed`): lengths as mixed as real data's.
std::vector<train::Sequence> sequencesOfMixedLength(int count, std::uint64_t seed) {
  std::vector<train::Sequence> out;
  std::uint64_t index = 0;
  for (int i = 0; i < count; ++i) {
    const auto length = 1 + train::uniformBelow(seed, 5, index, 300);
    out.push_back({std::vector<std::int32_t>(length, i), std::vector<std::int32_t>(length, i), 1});
  }
  return out;
}

}  // namespace

// Note [length grouping]: every sequence once per epoch, runs of one group sorted longest
// first, the longest group first, the short group last, and the same order for the same
// (seed, epoch) — what a resumed run recomputes.
TEST_CASE(lengthGroupedOrderIsASeededPermutationOfSortedGroups) {
  const auto sequences = sequencesOfMixedLength(1003, 3);  // 125 groups of 8 and one of 3
  const auto length = [&](std::int64_t i) {
    return sequences[static_cast<std::size_t>(i)].ids.size();
  };
  for (const bool shuffle : {true, false}) {
    const auto order = train::lengthGroupedOrder(sequences, 8, 7, 0, shuffle);
    COMPARE(order.size(), sequences.size());
    COMPARE(std::set<std::int64_t>(order.begin(), order.end()).size(), sequences.size());
    COMPARE(*std::min_element(order.begin(), order.end()), std::int64_t{0});
    COMPARE(*std::max_element(order.begin(), order.end()), std::int64_t{1002});
    COMPARE(train::lengthGroupedOrder(sequences, 8, 7, 0, shuffle), order);
    for (std::size_t first = 0; first < order.size(); first += 8) {
      for (std::size_t i = first + 1; i < std::min(order.size(), first + 8); ++i)
        VERIFY2(length(order[i - 1]) >= length(order[i]), lstest::format("position %zu", i));
    }
    std::size_t longest = 0;
    for (const auto& s : sequences)
      longest = std::max(longest, s.ids.size());
    COMPARE(length(order[0]), longest);
  }
  const auto a = train::lengthGroupedOrder(sequences, 8, 7, 0, true);
  VERIFY(train::lengthGroupedOrder(sequences, 8, 7, 1, true) != a);
  VERIFY(train::lengthGroupedOrder(sequences, 8, 8, 0, true) != a);
  // The groups are shuffled: lengths do not fall group after group as in a sorted mega-batch.
  int rises = 0;
  for (std::size_t g = 8; g + 8 <= 1000; g += 8)
    rises += length(a[g]) > length(a[g - 8]) ? 1 : 0;
  VERIFY2(rises > 30, lstest::format("%d of 124 groups start longer than the one before", rises));
  // Far less padding than the plain shuffle in micro-batches of 8, 4 and 3 (a micro-batch size
  // changed during the run: groups are effective batches, their micro-batches stay within them).
  const auto plain = train::epochOrder(1003, 7, 0, true);
  for (const std::size_t micro : {8, 4, 3}) {
    const double grouped = fillOf(sequences, a, micro);
    VERIFY2(grouped > 0.9 && grouped > fillOf(sequences, plain, micro) + 0.2,
            lstest::format("micro %zu: fill %.3f grouped, %.3f not", micro, grouped,
                           fillOf(sequences, plain, micro)));
  }
  // Fewer sequences than a group: one short group, sorted; a group of 1 is the plain order.
  const auto few = std::vector<train::Sequence>(sequences.begin(), sequences.begin() + 5);
  const auto five = train::lengthGroupedOrder(few, 8, 7, 0, true);
  COMPARE(std::set<std::int64_t>(five.begin(), five.end()).size(), std::size_t{5});
  for (std::size_t i = 1; i < 5; ++i)
    VERIFY(length(five[i - 1]) >= length(five[i]));
  // The longest sequence alone in the short group (17 in groups of 4, dataset order): it trades
  // places with the first group's longest, and the order stays a permutation.
  std::vector<train::Sequence> tail(sequences.begin(), sequences.begin() + 17);
  tail[16].ids.assign(400, 0);
  const auto lastLongest = train::lengthGroupedOrder(tail, 4, 7, 0, false);
  COMPARE(lastLongest.front(), std::int64_t{16});
  COMPARE(std::set<std::int64_t>(lastLongest.begin(), lastLongest.end()).size(), std::size_t{17});
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] { train::lengthGroupedOrder(sequences, 0, 7, 0, true); }, "at least 1 sequence"));
}

// A run grouped by length, saved mid-epoch and resumed, takes the same sequences in every step
// (its tokens and positions) and continues the uninterrupted run bit for bit, across epochs.
TEST_CASE(resumeContinuesTheLengthGroupedOrder) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  // 21 sequences / 4 per step: 6 steps per epoch, the last one of 1
  TrainConfig config = threeEpochs();
  config.groupByLength = true;
  TrainLoop uninterrupted(*backend, folder.config(), folder.weights(), examples(21, 4), config);
  const auto all = runAll(uninterrupted);
  COMPARE(all.size(), std::size_t{18});
  TrainConfig plainConfig = config;
  plainConfig.groupByLength = false;
  TrainLoop plain(*backend, folder.config(), folder.weights(), examples(21, 4), plainConfig);
  const auto plainSteps = runAll(plain);
  std::int64_t groupedPositions = 0, plainPositions = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    VERIFY(all[i].tokens <= all[i].positions);
    groupedPositions += all[i].positions;
    plainPositions += plainSteps[i].positions;
  }
  VERIFY2(
      groupedPositions < plainPositions,
      lstest::format("%lld positions grouped, %lld not", static_cast<long long>(groupedPositions),
                     static_cast<long long>(plainPositions)));

  TrainLoop interrupted(*backend, folder.config(), folder.weights(), examples(21, 4), config);
  for (int i = 0; i < 8; ++i)
    interrupted.step();
  const train::TrainerState saved = interrupted.state();
  COMPARE(saved.epoch, std::int64_t{1});
  TrainLoop resumed(*backend, folder.config(), folder.weights(), examples(21, 4), config, saved);
  const auto rest = runAll(resumed);
  COMPARE(rest.size(), std::size_t{10});
  for (std::size_t i = 0; i < rest.size(); ++i) {
    COMPARE(rest[i].tokens, all[i + 8].tokens);
    COMPARE(rest[i].positions, all[i + 8].positions);
    VERIFY(rest[i].loss == all[i + 8].loss);
  }
  VERIFY(sameAdapter(resumed.state().adapter, uninterrupted.state().adapter));
}

// A run with document packing, saved mid-epoch and resumed, rebuilds the same packs and continues
// the uninterrupted run bit for bit.
TEST_CASE(resumeContinuesADocumentPackedRun) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainConfig config = threeEpochs();
  config.packing = train::Packing::Documents;
  TrainLoop uninterrupted(*backend, folder.config(), folder.weights(), examples(30, 4), config);
  const auto all = runAll(uninterrupted);
  VERIFY(uninterrupted.sequenceCount() < 30);  // packed
  TrainLoop interrupted(*backend, folder.config(), folder.weights(), examples(30, 4), config);
  const std::size_t first = all.size() / 2;
  for (std::size_t i = 0; i < first; ++i)
    interrupted.step();
  TrainLoop resumed(*backend, folder.config(), folder.weights(), examples(30, 4), config,
                    interrupted.state());
  const auto rest = runAll(resumed);
  COMPARE(rest.size(), all.size() - first);
  for (std::size_t i = 0; i < rest.size(); ++i) {
    COMPARE(rest[i].tokens, all[i + first].tokens);
    COMPARE(rest[i].positions, all[i + first].positions);
    VERIFY(rest[i].loss == all[i + first].loss);
  }
  VERIFY(sameAdapter(resumed.state().adapter, uninterrupted.state().adapter));
}

TEST_CASE(lossDropsOnRepeatedData) {
  const model::ModelFolder folder = openFixture("qwen2_f32_tied");
  auto backend = compute::createCpuBackend();
  TrainConfig config = smallConfig();
  config.lora.dropout = 0.0;
  config.maxSteps = 0;
  config.epochs = 15;
  config.adamw.learningRate = 2e-2;
  config.activationCheckpointing = true;
  config.packing = train::Packing::Causal;
  TrainLoop loop(*backend, folder.config(), folder.weights(), examples(4, 5), config);
  const auto metrics = runAll(loop);
  VERIFY2(metrics.back().loss < 0.5 * metrics.front().loss,
          lstest::format("%g -> %g", metrics.front().loss, metrics.back().loss));
}

TEST_CASE(metricsFollowTheSchedule) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainConfig config = smallConfig();
  config.schedule = train::ScheduleKind::Linear;
  TrainLoop loop(*backend, folder.config(), folder.weights(), examples(10, 6), config);
  const auto m = runAll(loop);
  COMPARE(m[0].learningRate, 0.0);     // warm-up starts at 0
  COMPARE(m[1].learningRate, 0.5e-2);  // 1/2 of the way
  COMPARE(m[2].learningRate, 1e-2);
  VERIFY(std::fabs(m[3].learningRate - 0.75e-2) < 1e-15);
  for (const StepMetrics& s : m) {
    VERIFY(s.gradNorm > 0 && s.tokensPerS > 0 && s.tokens > s.predictedTokens);
    COMPARE(s.microBatch, std::int64_t{2});
  }
  COMPARE(m.back().step, std::int64_t{6});
  COMPARE(loop.state().step, std::int64_t{6});
  VERIFY(loop.finished());
}

TEST_CASE(cancellationLeavesTheLastCompletedStep) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainLoop loop(*backend, folder.config(), folder.weights(), examples(10, 7), smallConfig());
  loop.step();
  const train::TrainerState before = loop.state();
  std::atomic<bool> cancel{true};
  VERIFY(!loop.run({}, &cancel));
  COMPARE(loop.state().step, before.step);
  COMPARE(loop.state().dataCursor, before.dataCursor);
  VERIFY(sameAdapter(loop.state().adapter, before.adapter));
  cancel = false;
  VERIFY(loop.run({}, &cancel));
  COMPARE(loop.state().step, std::int64_t{6});
}

TEST_CASE(rejectsBadConfigAndData) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainConfig config = smallConfig();
  config.microBatchSize = 0;
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] { TrainLoop l(*backend, folder.config(), folder.weights(), examples(4, 8), config); },
      "micro-batch size must be at least 1"));
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] {
        TrainLoop l(*backend, folder.config(), folder.weights(),
                    {TokenizedExample{{1, 2, 3}, {-100, -100, -100}}}, smallConfig());
      },
      "no example has a trained token"));
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] {
        TrainLoop l(*backend, folder.config(), folder.weights(), {TokenizedExample{{1, 2}, {1}}},
                    smallConfig());
      },
      "example 0 has 2 ids and 1 labels"));
  TrainLoop ok(*backend, folder.config(), folder.weights(), examples(6, 9), smallConfig());
  train::TrainerState state = ok.state();
  state.moments.pop_back();
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] {
        TrainLoop l(*backend, folder.config(), folder.weights(), examples(6, 9), smallConfig(),
                    state);
      },
      "optimizer moments"));
}

// The adapter and moments stay on the backend between steps; state() copies them back when it is
// read, so reading it after every step or only at the end gives the same bits, and each read
// shows the step just completed.
TEST_CASE(stateIsCurrentHoweverOftenItIsRead) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainLoop eager(*backend, folder.config(), folder.weights(), examples(10, 4), smallConfig());
  TrainLoop lazy(*backend, folder.config(), folder.weights(), examples(10, 4), smallConfig());
  train::TrainerState previous = eager.state();
  for (int i = 0; i < 4; ++i) {
    eager.step();
    lazy.step();
    const train::TrainerState& now = eager.state();
    COMPARE(now.step, std::int64_t{i + 1});
    VERIFY(!bitIdentical(now.moments[0].firstB, previous.moments[0].firstB));
    if (i > 0) {  // the warm-up's first learning rate is 0: the adapter moves from step 2 on
      VERIFY(!sameAdapter(now.adapter, previous.adapter));
    }
    previous = now;
  }
  lazy.syncState();
  lazy.syncState();  // nothing ran since: the same state
  VERIFY(sameAdapter(lazy.state().adapter, eager.state().adapter));
  for (std::size_t i = 0; i < eager.state().moments.size(); ++i) {
    const train::LoraMoments& a = lazy.state().moments[i];
    const train::LoraMoments& b = eager.state().moments[i];
    VERIFY(bitIdentical(a.firstA, b.firstA) && bitIdentical(a.secondA, b.secondA) &&
           bitIdentical(a.firstB, b.firstB) && bitIdentical(a.secondB, b.secondB));
  }
}

// TrainLoop::snapshotState, waited for after the next step ran (as the state mirror's writer does
// while the engine steps on), is the state of the step it was taken at: encoded, byte for byte
// what state() read then gives (also when encoded straight from the download, as the writer
// does), and unlike the state after the next step.
TEST_CASE(snapshotBeforeTheNextStepHoldsItsStep) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  TrainLoop stepping(*backend, folder.config(), folder.weights(), examples(10, 5), smallConfig());
  TrainLoop reference(*backend, folder.config(), folder.weights(), examples(10, 5), smallConfig());
  std::vector<std::byte> buffer;
  for (int i = 0; i < 3; ++i) {
    stepping.step();
    reference.step();
    train::PendingTrainerState snapshot = stepping.snapshotState();
    train::PendingTrainerState encoded = stepping.snapshotState();
    stepping.step();  // changes the adapter and moments the snapshots were taken from
    const train::TrainerState taken = snapshot.wait();
    COMPARE(taken.step, std::int64_t{2 * i + 1});
    const std::vector<std::byte> expected = train::encodeTrainerState(reference.state());
    VERIFY(train::encodeTrainerState(taken) == expected);
    encoded.waitEncoded(buffer);  // as the mirror's writer encodes, into a buffer it reuses
    VERIFY(buffer == expected);
    VERIFY(!bitIdentical(taken.moments[0].firstB, stepping.state().moments[0].firstB));
    reference.step();
  }
  // Nothing ran since the last state() read: the host copy itself, the same bytes.
  train::PendingTrainerState again = stepping.snapshotState();
  train::PendingTrainerState againEncoded = stepping.snapshotState();
  VERIFY(train::encodeTrainerState(again.wait()) == train::encodeTrainerState(stepping.state()));
  againEncoded.waitEncoded(buffer);
  VERIFY(buffer == train::encodeTrainerState(stepping.state()));
}

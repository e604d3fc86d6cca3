// train/TrainLoop.cpp — one optimizer step: take the step's sequences, run its micro-batches
// (forward + backward, gradients accumulated with the step-wide 1/N), clip, schedule, AdamW.
#include "train/TrainLoop.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "memory/DeviceAllocator.h"  // defines: DeviceAllocator::beginStep
#include "train/StateCodec.h"

namespace lorascope::train {
namespace {

std::int64_t ceilDiv(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

void requireFinite(const char* name, double value) {
  if (!std::isfinite(value)) {
    throw std::invalid_argument(std::string(name) + " must be a finite number, got " +
                                std::to_string(value));
  }
}

void requirePositive(const char* name, std::int64_t value) {
  if (value < 1) {
    throw std::invalid_argument(std::string(name) + " must be at least 1, got " +
                                std::to_string(value));
  }
}

}  // namespace

void TrainConfig::validate() const {
  // NaN passes every range check below (each comparison is false), so finiteness comes first.
  requireFinite("lora alpha", lora.alpha);
  requireFinite("lora dropout", lora.dropout);
  requireFinite("learning rate", adamw.learningRate);
  requireFinite("adam beta1", adamw.beta1);
  requireFinite("adam beta2", adamw.beta2);
  requireFinite("adam epsilon", adamw.epsilon);
  requireFinite("weight decay", adamw.weightDecay);
  requireFinite("max grad norm", maxGradNorm);
  lora.validate();
  if (!(adamw.beta1 >= 0 && adamw.beta1 < 1) || !(adamw.beta2 >= 0 && adamw.beta2 < 1)) {
    throw std::invalid_argument("adam beta1 and beta2 must be in [0, 1)");
  }
  if (!(adamw.epsilon > 0)) {
    throw std::invalid_argument("adam epsilon must be > 0");
  }
  if (adamw.weightDecay < 0) {
    throw std::invalid_argument("weight decay must be ≥ 0");
  }
  requirePositive("non-finite step limit", nonFiniteStepLimit);
  requirePositive("micro-batch size", microBatchSize);
  requirePositive("gradient accumulation", gradAccumulation);
  requirePositive("epochs", epochs);
  if (maxSteps < 0) {
    throw std::invalid_argument("max steps must be ≥ 0 (0 = by epochs)");
  }
  if (warmupSteps < 0) {
    throw std::invalid_argument("warmup steps must be ≥ 0");
  }
  if (!(adamw.learningRate > 0)) {
    throw std::invalid_argument("learning rate must be > 0");
  }
  if (maxSeqLen < 2) {
    throw std::invalid_argument("max sequence length must be at least 2 tokens");
  }
}

TrainLoop::TrainLoop(compute::Backend& backend, const model::ModelConfig& modelConfig,
                     const model::ModelWeights& weights, std::vector<TokenizedExample> examples,
                     TrainConfig config, std::optional<TrainerState> resume)
    : backend_(&backend), modelConfig_(modelConfig), config_(std::move(config)) {
  config_.validate();
  SequenceSet set = buildSequences(examples, config_.maxSeqLen, config_.packing);
  sequences_ = std::move(set.sequences);
  droppedExamples_ = set.droppedExamples;
  if (sequences_.empty()) {
    throw std::invalid_argument("no example has a trained token within max_seq_len " +
                                std::to_string(config_.maxSeqLen) + " (" +
                                std::to_string(droppedExamples_) + " dropped)");
  }
  totalSteps_ = config_.maxSteps > 0 ? config_.maxSteps : config_.epochs * stepsPerEpoch();
  microBatch_ = config_.microBatchSize;
  if (resume) {
    state_ = std::move(*resume);
    if (state_.moments.empty()) {
      state_.moments = zeroMoments(state_.adapter);  // an adapter to start from, step 0
    }
    checkResumeState();
    if (!state_.microBatchHistory.empty()) {
      microBatch_ = state_.microBatchHistory.back().microBatch;
    }
  } else {
    state_.seed = config_.seed;
    state_.adapter = createLoraAdapter(config_.lora, modelLoraSites(modelConfig), config_.seed);
    state_.moments = zeroMoments(state_.adapter);
    state_.microBatchHistory.push_back({0, microBatch_, accumulation(), "start"});
  }
  graph_ = graphOn(backend, weights, GraphOptions{config_.activationCheckpointing});
}

std::unique_ptr<TrainGraph> TrainLoop::graphOn(compute::Backend& backend,
                                               const model::ModelWeights& weights,
                                               const GraphOptions& options) const {
  auto graph =
      std::make_unique<TrainGraph>(backend, modelConfig_, weights, state_.adapter, options);
  graph->loadMoments(state_.moments);
  return graph;
}

void TrainLoop::syncState() {
  if (hostStateStale_) {
    graph_->downloadAdapter(state_.adapter);
    graph_->downloadMoments(state_.moments);
    hostStateStale_ = false;
  }
}

const TrainerState& TrainLoop::state() {
  syncState();
  return state_;
}

PendingTrainerState TrainLoop::snapshotState() {
  if (!hostStateStale_) {
    return PendingTrainerState(state_, std::nullopt);
  }
  // Everything but the stale A, B and moments (tens of MB, not copied here): they step aside
  // while the rest is copied.
  std::vector<LoraWeights> weights = std::move(state_.adapter.weights);
  std::vector<LoraMoments> moments = std::move(state_.moments);
  TrainerState state = state_;
  state_.adapter.weights = std::move(weights);
  state_.moments = std::move(moments);
  state.adapter.weights.reserve(state_.adapter.weights.size());
  for (const LoraWeights& w : state_.adapter.weights) {
    state.adapter.weights.push_back({w.site, {}, {}});
  }
  try {
    return PendingTrainerState(std::move(state), graph_->downloadStateAsync());
  } catch (const memory::OutOfMemoryError&) {
    // No room for the device copy next to the step's blocks: downloaded now, as state() does.
    syncState();
    return PendingTrainerState(state_, std::nullopt);
  }
}

TrainerState PendingTrainerState::wait() {
  if (lora_) {
    lora_->wait(state_.adapter, state_.moments);
    lora_.reset();
  }
  return std::move(state_);
}

void PendingTrainerState::waitEncoded(std::vector<std::byte>& out) {
  if (!lora_) {
    encodeTrainerStateInto(state_, encodingArrays(state_), out);
    return;
  }
  encodeTrainerStateInto(state_, lora_->waitArrays(), out);
  lora_.reset();
}

void TrainLoop::checkResumeState() const {
  const TrainerState& s = state_;
  if (s.seed != config_.seed) {
    throw std::invalid_argument("resume: the saved run's seed " + std::to_string(s.seed) +
                                " differs from the config's " + std::to_string(config_.seed));
  }
  if (s.adapter.config.rank != config_.lora.rank ||
      s.adapter.config.targets != config_.lora.targets) {
    throw std::invalid_argument(
        "resume: the saved adapter's rank or targets differ from the "
        "config's");
  }
  if (s.moments.size() != s.adapter.weights.size()) {
    throw std::invalid_argument("resume: " + std::to_string(s.moments.size()) +
                                " optimizer moments for " +
                                std::to_string(s.adapter.weights.size()) + " adapter tensors");
  }
  for (std::size_t i = 0; i < s.moments.size(); ++i) {
    const LoraMoments& m = s.moments[i];
    const LoraWeights& w = s.adapter.weights[i];
    if (m.firstA.size() != w.a.size() || m.secondA.size() != w.a.size() ||
        m.firstB.size() != w.b.size() || m.secondB.size() != w.b.size()) {
      throw std::invalid_argument("resume: optimizer moments of " + peftKey(w.site, true) +
                                  " are shaped unlike the adapter");
    }
  }
  for (const MicroBatchChange& c : s.microBatchHistory) {
    if (c.microBatch < 1 || c.microBatch > config_.effectiveBatch() || c.accumulation < 1) {
      throw std::invalid_argument(
          "resume: micro-batch history entry of step " + std::to_string(c.step) +
          " has micro-batch " + std::to_string(c.microBatch) + " x " +
          std::to_string(c.accumulation) + ", impossible for the effective batch " +
          std::to_string(config_.effectiveBatch()));
    }
  }
  if (s.step < 0 || s.epoch < 0 || s.dataCursor < 0 ||
      s.dataCursor > static_cast<std::int64_t>(sequences_.size())) {
    throw std::invalid_argument("resume: data cursor " + std::to_string(s.dataCursor) +
                                " is outside this data's " + std::to_string(sequences_.size()) +
                                " sequences (the data changed?)");
  }
}

std::int64_t TrainLoop::accumulation() const {
  return ceilDiv(config_.effectiveBatch(), microBatch_);
}

std::int64_t TrainLoop::stepsPerEpoch() const {
  return ceilDiv(static_cast<std::int64_t>(sequences_.size()), config_.effectiveBatch());
}

void TrainLoop::setMicroBatchSize(std::int64_t microBatch, const std::string& reason) {
  requirePositive("micro-batch size", microBatch);
  if (microBatch > config_.effectiveBatch()) {
    throw std::invalid_argument("micro-batch size " + std::to_string(microBatch) +
                                " exceeds the effective batch " +
                                std::to_string(config_.effectiveBatch()));
  }
  if (microBatch == microBatch_) {
    return;
  }
  microBatch_ = microBatch;
  auto& history = state_.microBatchHistory;
  if (!history.empty() && history.back().step == state_.step) {
    history.pop_back();  // two changes before one step: the later one is what ran
  }
  history.push_back({state_.step, microBatch_, accumulation(), reason});
}

void TrainLoop::moveTo(compute::Backend& backend, const model::ModelWeights& weights) {
  stepGraphs_.reset();  // the graphs are the old backend's
  syncState();          // until here the old backend's adapter and moments are the current ones
  std::unique_ptr<TrainGraph> graph = graphOn(backend, weights, graph_->options());
  graph_ = std::move(graph);  // the old backend's tensors of this loop are released here
  backend_ = &backend;
}

void TrainLoop::setActivationCheckpointing(bool on, const model::ModelWeights& weights) {
  if (graph_->options().activationCheckpointing == on) {
    return;
  }
  stepGraphs_.reset();  // they hold the old graph's activations' shapes and tensors
  syncState();
  GraphOptions options = graph_->options();
  options.activationCheckpointing = on;
  std::unique_ptr<TrainGraph> graph = graphOn(*backend_, weights, options);
  graph_ = std::move(graph);
}

const std::vector<std::int64_t>& TrainLoop::orderOf(std::int64_t epoch) {
  if (epoch != orderEpoch_) {
    order_ = config_.groupByLength ? lengthGroupedOrder(sequences_, config_.effectiveBatch(),
                                                        config_.seed, epoch, config_.shuffle)
                                   : epochOrder(static_cast<std::int64_t>(sequences_.size()),
                                                config_.seed, epoch, config_.shuffle);
    orderEpoch_ = epoch;
  }
  return order_;
}

StepMetrics TrainLoop::step(const std::atomic<bool>* cancel) {
  std::string fallback;
  if ((stepMode_ == StepMode::Deferred && group_ == nullptr) || graphActive()) {
    try {
      return graphStep(cancel);
    } catch (const TrainingCancelled&) {
      throw;
    } catch (const NonFiniteTraining&) {
      throw;
    } catch (const std::exception& e) {
      // Nothing of the step has changed the state (the update is the graph's last op, and a
      // failed capture or launch ran nothing): the step runs again eagerly.
      fallback = std::string("graph mode off: ") + e.what() +
                 "; this step and the rest of the run are eager";
      leaveGraphMode();
    }
  }
  StepMetrics metrics = eagerStep(cancel);
  metrics.graphFallback = std::move(fallback);
  return metrics;
}

std::int64_t TrainLoop::sequenceMultiple() const {
  // Note [sequence buckets] (train/Batching.h): the CPU has no cold shapes to avoid, and with
  // LoRA dropout the padding would move the masks.
  const bool bucketed =
      backend_->capabilities().device != compute::Device::Cpu && config_.lora.dropout == 0.0;
  return bucketed ? kGpuSequenceMultiple : 1;
}

TrainLoop::StepRows TrainLoop::takeRows() {
  // The allocator's step boundary: a queued policy change takes effect, new blocks carry the step.
  if (memory::DeviceAllocator* allocator = backend_->deviceAllocator()) {
    allocator->beginStep(state_.step + 1);
  }
  StepRows r;
  const auto count = static_cast<std::int64_t>(sequences_.size());
  r.epoch = state_.epoch;
  r.cursor = state_.dataCursor;
  if (r.cursor >= count) {
    ++r.epoch;
    r.cursor = 0;
  }
  const std::vector<std::int64_t>& order = orderOf(r.epoch);
  r.taken = std::min(config_.effectiveBatch(), count - r.cursor);
  for (std::int64_t i = r.cursor; i < r.cursor + r.taken; ++i) {
    r.rows.push_back(&sequences_[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])]);
    r.predicted += r.rows.back()->predictedTokens;
  }
  return r;
}

std::string TrainLoop::checkFinite(double loss, double gradNorm) {
  if (std::isfinite(loss) && std::isfinite(gradNorm)) {
    nonFiniteInARow_ = 0;
    return {};
  }
  // An update from a NaN or infinite gradient would poison every weight and moment for good.
  const std::string what = "step " + std::to_string(state_.step + 1) + ": loss " +
                           std::to_string(loss) + ", gradient norm " + std::to_string(gradNorm) +
                           " (not finite)";
  if (++nonFiniteInARow_ >= config_.nonFiniteStepLimit) {
    --nonFiniteInARow_;  // this step did not complete; the state is the last completed one's
    throw NonFiniteTraining(
        what + "; " + std::to_string(config_.nonFiniteStepLimit) +
        " steps in a row were not finite, so training stopped. The adapter is the last finite "
        "step's (the skipped steps did not change it). Check the base model with "
        "`lorascope-train inspect-model MODEL --check` (a NaN weight gives a NaN loss), then "
        "lower the learning rate or raise max grad norm's clipping");
  }
  return what + "; the update was skipped (" + std::to_string(nonFiniteInARow_) + " of " +
         std::to_string(config_.nonFiniteStepLimit) + " in a row stop the run)";
}

double TrainLoop::learningRate() const {
  const Schedule schedule{config_.schedule, config_.warmupSteps, totalSteps_};
  return config_.adamw.learningRate * scheduleFactor(schedule, state_.step);
}

StepMetrics TrainLoop::completeStep(const StepRows& r, StepMetrics metrics,
                                    std::chrono::steady_clock::time_point start) {
  using Clock = std::chrono::steady_clock;
  state_.epoch = r.epoch;
  state_.dataCursor = r.cursor + r.taken;
  state_.tokensSeen += r.predicted;
  ++state_.step;
  const auto completed = Clock::now();
  const double seconds = std::chrono::duration<double>(completed - start).count();
  const double cycle =
      std::chrono::duration<double>(completed - lastCompleted_.value_or(start)).count();
  lastCompleted_ = completed;
  metrics.step = state_.step;
  // Epochs done after this step, as a Hugging Face Trainer logs them: the epoch its data came from
  // and the fraction of that epoch's sequences taken so far (0.4: four tenths into the first).
  const auto count = static_cast<std::int64_t>(sequences_.size());
  metrics.epoch = static_cast<double>(r.epoch * count + state_.dataCursor) /
                  static_cast<double>(std::max<std::int64_t>(count, 1));
  metrics.seconds = seconds;
  metrics.cycleSeconds = cycle;
  metrics.tokensPerS = cycle > 0 ? static_cast<double>(metrics.tokens) / cycle : 0.0;
  metrics.computeTokensPerS = seconds > 0 ? static_cast<double>(metrics.tokens) / seconds : 0.0;
  metrics.predictedTokens = r.predicted;
  metrics.microBatch = microBatch_;
  metrics.device = compute::deviceName(backend_->capabilities().device);
  return metrics;
}

StepMetrics TrainLoop::eagerStep(const std::atomic<bool>* cancel) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto ms = [](Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double, std::milli>(to - from).count();
  };
  StepMetrics metrics;
  StepMetrics::Stages& stages = metrics.stages;
  const StepRows r = takeRows();

  graph_->zeroGradients();
  const float gradScale = 1.0f / static_cast<float>(r.predicted);
  double lossSum = 0.0;
  const std::int64_t microBatches = ceilDiv(r.taken, microBatch_);
  const auto [firstMicro, endMicro] = microBatchesOfThisRank(microBatches);
  for (std::int64_t micro = firstMicro; micro < endMicro; ++micro) {
    const std::int64_t first = micro * microBatch_;
    const std::int64_t n = std::min(microBatch_, r.taken - first);
    const auto building = Clock::now();
    const MicroBatch mb = collate(
        std::span<const Sequence* const>(r.rows.data() + first, static_cast<std::size_t>(n)),
        sequenceMultiple(), config_.maxSeqLen);
    const model::ForwardInput input{mb.batch, mb.seq, mb.ids, mb.labels, mb.documentStarts};
    const auto built = Clock::now();
    lossSum +=
        graph_->forwardBackward(input, gradScale, {config_.seed, state_.step, micro}, cancel).sum;
    metrics.tokens += mb.realTokens;
    metrics.positions += mb.positions();
    stages.batchesMs += ms(building, built);
    stages.passesMs += ms(built, Clock::now());
  }

  const auto clipping = Clock::now();
  if (group_ != nullptr) {
    // once per optimizer step, before the update
    reduceOverGroup(lossSum, metrics.tokens, metrics.positions);
  }
  const double gradNorm = graph_->clipGradients(config_.maxGradNorm);
  const auto clipped = Clock::now();
  stages.clipMs = ms(clipping, clipped);
  const double lr = learningRate();
  const double loss = lossSum / static_cast<double>(r.predicted);
  metrics.nonFinite = checkFinite(loss, gradNorm);
  if (metrics.nonFinite.empty()) {
    graph_->adamwStep(config_.adamw, lr, state_.step + 1);
    hostStateStale_ = true;
  }
  stages.updateMs = ms(clipped, Clock::now());
  metrics.loss = loss;
  metrics.learningRate = lr;
  metrics.gradNorm = gradNorm;
  metrics.accumulation = microBatches;
  return completeStep(r, std::move(metrics), start);
}

EvalMetrics TrainLoop::evaluate(std::span<const Sequence> sequences,
                                const std::atomic<bool>* cancel) {
  const auto start = std::chrono::steady_clock::now();
  EvalMetrics eval;
  eval.step = state_.step;
  double lossSum = 0.0;
  const auto count = static_cast<std::int64_t>(sequences.size());
  for (std::int64_t first = 0; first < count; first += microBatch_) {
    if (cancel != nullptr && cancel->load()) {
      throw TrainingCancelled();
    }
    std::vector<const Sequence*> rows;
    for (std::int64_t i = first; i < std::min(count, first + microBatch_); ++i) {
      rows.push_back(&sequences[static_cast<std::size_t>(i)]);
    }
    const MicroBatch mb = collate(rows, sequenceMultiple(), config_.maxSeqLen);
    const LossSum part = graph_->forwardLoss({mb.batch, mb.seq, mb.ids, mb.labels});
    lossSum += part.sum;
    eval.predictedTokens += part.predictedTokens;
    ++eval.batches;
  }
  eval.sequences = count;
  eval.loss =
      eval.predictedTokens > 0 ? lossSum / static_cast<double>(eval.predictedTokens) : std::nan("");
  eval.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return eval;
}

bool TrainLoop::run(const StepCallback& onStep, const std::atomic<bool>* cancel) {
  while (!finished()) {
    StepMetrics metrics;
    try {
      metrics = step(cancel);
    } catch (const TrainingCancelled&) {
      return false;
    }
    if (onStep) {
      onStep(metrics);
    }
  }
  return true;
}

}  // namespace lorascope::train

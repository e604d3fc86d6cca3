// train/TrainLoop.h — the optimizer-step loop: micro-batches with gradient accumulation,
// global-norm clipping, the LR schedule and AdamW over every LoRA tensor, epochs with a seeded
// shuffle, optional packing, and a micro-batch size that may change at any step boundary.
//
// - The loss of a step is Σ token losses / tokens predicted in the whole step, and every
//   micro-batch's backward is scaled by that same 1/N, so the gradient does not depend on how the
//   step is split into micro-batches.
// - A step takes `effective batch` = microBatch × accumulation sequences (fewer at the end of an
//   epoch; steps never straddle epochs). Changing the micro-batch size keeps the effective batch:
//   accumulation = ⌈effective / microBatch⌉, the last micro-batch taking what is left. Every
//   change is recorded in TrainerState::microBatchHistory.
// - Each epoch visits every sequence once, in epochOrder's order or, with groupByLength, in
//   lengthGroupedOrder's (groups of one effective batch, so a step never mixes two groups).
// - Everything random is f(seed, stream, index) (Philox): the shuffle of epoch e, the dropout of
//   (step, micro-batch, layer, module). TrainerState (train/Checkpoint.h) is therefore the whole
//   state: a loop built from it continues bit for bit.
// - Cancellation: the flag is checked between ops; the step in progress is abandoned and the
//   state stays at the last completed step.
// - Gradients, clipping and AdamW run on the backend (TrainGraph); the host TrainerState's
//   adapter and moments are copied back only when state() or syncState() asks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "compute/Backend.h"
#include "group/Collective.h"
#include "model/ModelConfig.h"
#include "model/ModelFolder.h"         // defines: ModelWeights
#include "model/WeightQuantization.h"  // defines: WeightQuantization
#include "runs/StepRecord.h"           // defines: StepRecord
#include "train/Batching.h"
#include "train/Checkpoint.h"  // defines: TrainerState, LoraMoments, MicroBatchChange (types only)
#include "train/Evaluation.h"  // defines: EvalMetrics
#include "train/Lora.h"
#include "train/Optimizer.h"
#include "train/StepGraphs.h"
#include "train/TrainGraph.h"

namespace lorascope::train {

struct TrainConfig {
  LoraConfig lora;
  AdamWConfig adamw;
  ScheduleKind schedule = ScheduleKind::Linear;
  std::int64_t warmupSteps = 0;
  std::int64_t maxSteps = 0;  // optimizer steps; 0 = epochs × steps per epoch
  std::int64_t epochs = 1;
  std::int64_t microBatchSize = 1;    // sequences per forward/backward
  std::int64_t gradAccumulation = 1;  // micro-batches per optimizer step
  std::int64_t maxSeqLen = 2048;      // tokens per sequence
  double maxGradNorm = 1.0;           // ≤ 0: no clipping
  std::uint64_t seed = 42;
  bool shuffle = true;
  Packing packing = Packing::Off;  // train/Batching.h, Notes [packing], [document packing]
  // Each epoch's order groups sequences of similar length into the steps' effective batches
  // (train/Batching.h, Note [length grouping]): less padding computed.
  bool groupByLength = false;
  bool activationCheckpointing = false;
  // How the caller placed the frozen projections (model::placeWeights): recorded in the run's
  // config.json and model card, and counted by the memory model; the loop computes the same way.
  model::WeightQuantization quantization = model::WeightQuantization::None;
  // A step whose loss or gradient norm is not finite (NaN, ±inf) changes nothing: the update is
  // skipped and the step says so. This many of them in a row stop the run (NonFiniteTraining),
  // leaving the adapter of the last finite step; 1 stops at the first.
  std::int64_t nonFiniteStepLimit = 3;

  std::int64_t effectiveBatch() const { return microBatchSize * gradAccumulation; }
  // Throws std::invalid_argument naming the field (also for NaN and infinite values).
  void validate() const;
};

// Thrown by TrainLoop::step when TrainConfig::nonFiniteStepLimit steps in a row had a loss or
// gradient norm that is not finite; the loop's state is that of the last completed step.
class NonFiniteTraining : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one optimizer step did: the run folder's step record (the metrics.jsonl line and the
// protocol's step event; runs/StepRecord.h).
using StepMetrics = runs::StepRecord;

// TrainLoop::snapshotState's answer: the trainer state after a completed step, its adapter and
// moments still on their way to the host. Independent of the loop once made (another thread may
// wait for it while the loop steps on).
class PendingTrainerState {
 public:
  PendingTrainerState(TrainerState state, std::optional<PendingLoraState> lora)
      : state_(std::move(state)), lora_(std::move(lora)) {}
  // Blocks until the adapter and moments are on the host; the whole state, as state() gave it
  // when the snapshot was taken. Once.
  TrainerState wait();
  // Blocks likewise and encodes the state (train/StateCodec.h) into `out`, straight from the
  // downloaded buffers: the bytes of encodeTrainerState(wait()) without the per-site copies, in
  // `out`'s memory (reused from step to step: the mirror's writer). Instead of wait().
  void waitEncoded(std::vector<std::byte>& out);

 private:
  TrainerState state_;  // everything; the adapter's A and B and the moments only without lora_
  std::optional<PendingLoraState> lora_;
};

// How TrainLoop::step runs a step.
enum class StepMode : std::uint8_t {
  Eager,     // op by op, reading the loss and gradient norm as they come
  Graph,     // whole-step graphs (train/StepGraphs.h) where the backend can capture; else Eager
  Deferred,  // graph mode's step (fixed shapes, device-side scalars) without capture
};

class TrainLoop {
 public:
  using StepCallback = std::function<void(const StepMetrics&)>;

  // A fresh run (adapter from config.lora and config.seed), or with `resume` the run that state
  // was saved from (a state with no moments starts AdamW from zero: training an adapter given
  // from outside). The model and backend must outlive the loop. Throws std::invalid_argument for
  // a bad config, no trainable sequence, or a state that does not fit the config and model.
  TrainLoop(compute::Backend& backend, const model::ModelConfig& modelConfig,
            const model::ModelWeights& weights, std::vector<TokenizedExample> examples,
            TrainConfig config, std::optional<TrainerState> resume = std::nullopt);

  // One optimizer step. Throws TrainingCancelled (state unchanged) when `cancel` becomes true.
  StepMetrics step(const std::atomic<bool>* cancel = nullptr);
  // The next step's cycle (StepMetrics::cycleSeconds) starts when that step begins, not when the
  // previous one completed: after a pause, a toggle or anything else that is not the run's work.
  void restartCycle() { lastCompleted_.reset(); }
  // The held-out loss of `sequences` (train/Evaluation.h) under the adapter of the last completed
  // step, in micro-batches of the current size, without dropout. Reads the adapter and changes
  // nothing a later step reads. Throws TrainingCancelled when `cancel` becomes true.
  EvalMetrics evaluate(std::span<const Sequence> sequences,
                       const std::atomic<bool>* cancel = nullptr);
  // Steps until totalSteps() or cancellation; returns false when cancelled.
  bool run(const StepCallback& onStep, const std::atomic<bool>* cancel = nullptr);

  // Data parallelism: from the next step this loop is rank collective.rank() of a group whose
  // ranks run the same loop (same config, data and state). Each step runs this rank's share of the
  // step's micro-batches (group/RankPlan.h, Note [micro-batches are the unit of work]) and sums
  // the gradients and the loss over the group once, before clipping and the update, so every rank
  // updates the same way (train/GroupStep.cpp). The collective must outlive the loop; its
  // failures leave the step as cancellation does (the state is the last completed step's).
  void joinGroup(group::Collective& collective) { group_ = &collective; }
  // An agreement the group's step carries (train/GroupStep.cpp): before a step, this rank's count
  // of what every rank receives in the same order (the engine's toggles); after it, the smallest
  // count over the ranks (0 when the step did not reach its sum), so that every rank acts on that
  // many at the same step boundary.
  void setReceivedCount(std::int64_t received) {
    received_ = received;
    agreed_ = 0;
  }
  std::int64_t agreedCount() const { return agreed_; }

  // From the next step on. Leaving Graph drops the captured graphs and gives their memory back.
  // Graph on a backend that cannot capture (the CPU) runs eager steps.
  void setStepMode(StepMode mode);
  StepMode stepMode() const { return stepMode_; }
  // Whether the next step runs as a graph: Graph, on a backend that can capture, alone (a rank
  // of a group steps eagerly: its gradient sum sits between the backward and the update).
  bool graphActive() const {
    return stepMode_ == StepMode::Graph && backend_->canCapture() && group_ == nullptr;
  }

  // Takes effect at the next step; accumulation becomes ⌈effective / microBatch⌉.
  void setMicroBatchSize(std::int64_t microBatch, const std::string& reason);

  // Moves the run to `backend` at this step boundary (the CPU-fallback toggle, either way): the
  // LoRA weights, AdamW moments, data cursor and RNG position (all in TrainerState) carry over,
  // so the next step continues the loss curve. `weights` are the model's weights on `backend`
  // (model::placeWeights) and must outlive the loop or its next move. The loop's tensors on the
  // old backend (LoRA weights, gradients, moments, activations) are released before this returns;
  // the caller frees the old weights and may hand the old device's cache back
  // (Backend::releaseCachedMemory). If the new backend throws (out of memory), the run stays on
  // the old one, unchanged.
  void moveTo(compute::Backend& backend, const model::ModelWeights& weights);
  compute::Backend& backend() const { return *backend_; }
  // Activation checkpointing from the next step: the graph is rebuilt on the same backend with the
  // option (adapter and moments carry over). `weights` as for moveTo.
  void setActivationCheckpointing(bool on, const model::ModelWeights& weights);

  bool finished() const { return state_.step >= totalSteps_; }
  // The optimizer steps completed: state().step without bringing the host's adapter and moments
  // up to date (a whole download of them, which the step boundary must not wait for).
  std::int64_t completedSteps() const { return state_.step; }
  std::int64_t totalSteps() const { return totalSteps_; }
  std::int64_t stepsPerEpoch() const;
  std::int64_t sequenceCount() const { return static_cast<std::int64_t>(sequences_.size()); }
  std::int64_t droppedExamples() const { return droppedExamples_; }
  std::int64_t microBatchSize() const { return microBatch_; }
  std::int64_t accumulation() const;
  const TrainConfig& config() const { return config_; }
  // The whole trainer state after the last completed step (what a checkpoint saves). The LoRA
  // weights and moments live on the backend between steps; this copies them to the host first
  // when a step has run since the last copy, so the answer is always current.
  const TrainerState& state();
  // Brings the host TrainerState's adapter and moments up to date with the backend's (a no-op
  // when no step has run since the last call). state() calls it; so must anything that is about
  // to release or replace the backend's copies (a move to another device).
  void syncState();
  // state(), without waiting for the backend: what the state mirror writes while the next step
  // runs (Note [asynchronous state mirror] in job/StepCommit.h). On a GPU the adapter and
  // moments are copied on the device and downloaded on a side stream; the host copy state() keeps
  // is not brought up to date.
  PendingTrainerState snapshotState();

 private:
  void checkResumeState() const;
  // A graph on `backend` holding state_'s adapter and moments.
  std::unique_ptr<TrainGraph> graphOn(compute::Backend& backend, const model::ModelWeights& weights,
                                      const GraphOptions& options) const;
  const std::vector<std::int64_t>& orderOf(std::int64_t epoch);
  // The group's part of a step (train/GroupStep.cpp): this rank's micro-batches of the step's
  // `microBatches`, and the sum over the ranks of the gradients and of the step's loss sum, real
  // tokens and positions.
  std::pair<std::int64_t, std::int64_t> microBatchesOfThisRank(std::int64_t microBatches) const;
  void reduceOverGroup(double& lossSum, std::int64_t& tokens, std::int64_t& positions);
  // The sequences of the next step (and the allocator's step boundary).
  struct StepRows {
    std::int64_t epoch = 0;
    std::int64_t cursor = 0;
    std::int64_t taken = 0;
    std::int64_t predicted = 0;
    std::vector<const Sequence*> rows;
  };
  StepRows takeRows();
  // What each micro-batch's length is padded to a multiple of (train/Batching.h: collate).
  std::int64_t sequenceMultiple() const;
  double learningRate() const;  // of the step about to run
  // "" for a finite loss and norm; else the warning, counting the steps in a row (throws
  // NonFiniteTraining at the limit).
  std::string checkFinite(double loss, double gradNorm);
  // The state after a completed step and the metrics' timing, step and batch fields.
  StepMetrics completeStep(const StepRows& rows, StepMetrics metrics,
                           std::chrono::steady_clock::time_point start);
  StepMetrics eagerStep(const std::atomic<bool>* cancel);
  // Graph mode's step (train/TrainLoopGraph.cpp): captured, replayed or deferred.
  StepMetrics graphStep(const std::atomic<bool>* cancel);
  void leaveGraphMode();

  compute::Backend* backend_;  // where the run computes; moveTo changes it
  const model::ModelConfig& modelConfig_;
  TrainConfig config_;
  std::vector<Sequence> sequences_;
  std::int64_t droppedExamples_ = 0;
  std::int64_t totalSteps_ = 0;
  std::int64_t microBatch_ = 1;
  TrainerState state_;           // adapter and moments as of the last syncState()
  bool hostStateStale_ = false;  // the backend's adapter/moments are ahead of state_'s
  std::unique_ptr<TrainGraph> graph_;
  std::int64_t orderEpoch_ = -1;
  std::vector<std::int64_t> order_;
  std::int64_t nonFiniteInARow_ = 0;    // steps whose update was skipped, up to the last one
  group::Collective* group_ = nullptr;  // data parallelism: joinGroup
  std::int64_t received_ = 0;           // setReceivedCount
  std::int64_t agreed_ = 0;
  // When the last step completed: the start of the next one's cycle (none: restartCycle).
  std::optional<std::chrono::steady_clock::time_point> lastCompleted_;
  StepMode stepMode_ = StepMode::Eager;
  // Graph mode's graphs and pinned buffers; declared after graph_, so destroyed before its tensors.
  std::unique_ptr<StepGraphs> stepGraphs_;
};

}  // namespace lorascope::train

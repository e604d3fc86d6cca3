// runs/StepRecord.h — what one optimizer step did, and its one JSON form. The trainer fills it
// (train::StepMetrics is this type), the run job announces it as the protocol's step event
// (engine::StepEvent is this type too), metrics.jsonl holds one per line, HfLogs and TfEvents
// derive their records from it, and the Runs page reads it back.
//
// The JSON keys: step, loss, lr, grad_norm, tokens_per_s, micro_batch, accumulation, seconds,
// cycle_seconds, tokens, positions, predicted_tokens, device; epoch when known;
// non_finite when the step was skipped; eval_loss, eval_predicted_tokens, eval_sequences,
// eval_batches, eval_seconds when the run evaluated after it; compute_tokens_per_s when known;
// replayed and total_steps only when set (an announcement's, never in a metrics line the trainer
// writes). JSON has no NaN: a loss or
// norm that is not finite is written as null. Lines and events of older versions lack later
// keys; reading fills them as those versions meant them (readStepRecord says how).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/JsonReader.h"

namespace lorascope::runs {

// The held-out loss after optimizer step `step`.
struct EvalRecord {
  std::int64_t step = 0;
  double loss = 0.0;                 // mean over the set's predicted tokens
  std::int64_t sequences = 0;        // sequences evaluated
  std::int64_t batches = 0;          // forward passes (micro-batches) they took
  std::int64_t predictedTokens = 0;  // tokens the loss is over
  double seconds = 0.0;              // wall time of the evaluation
};

struct StepRecord {
  // The first fields in the protocol's order (its tests and tools list a step event's numbers
  // positionally: StepEvent{step, loss, lr, grad norm, tokens/s, micro-batch, accumulation}).
  std::int64_t step = 0;  // optimizer steps completed, this one included
  double loss = 0.0;      // mean over the step's predicted tokens (before the update)
  double learningRate = 0.0;
  double gradNorm = 0.0;  // before clipping
  // The run's speed: real tokens (padding excluded) over the step cycle, the wall-clock time since
  // the previous step completed (everything between the steps included), as the run delivers it.
  double tokensPerS = 0.0;
  std::int64_t microBatch = 1;    // 0: not known (a supervised command's step)
  std::int64_t accumulation = 1;  // 0: not known
  // Announcing only: sent again by an engine that resumed from the state mirror (the step was
  // completed and mirrored by an engine that may have died before announcing it); the supervisor
  // passes it on only when it has not seen that step.
  bool replayed = false;
  // Announcing only: the run's step count, for progress and time left; 0 when not known.
  std::int64_t totalSteps = 0;
  double computeTokensPerS = 0.0;  // real tokens / seconds: the step's compute alone; 0: unknown
  // Epochs done after this step, when the trainer counts them, as a Hugging Face Trainer logs them
  // (0.33: a third into the first): ours from its data cursor, a supervised command's as its
  // output says. Metrics lines of versions before this held our trainer's 0-based epoch index
  // (a whole number) under the same key.
  std::optional<double> epoch{};
  double seconds = 0.0;        // the step's own time: its batches, passes, clipping and update
  double cycleSeconds = 0.0;   // since the previous step completed (TrainLoop::restartCycle)
  std::int64_t tokens = 0;     // input tokens processed (padding excluded)
  std::int64_t positions = 0;  // positions computed: each micro-batch's rows x its longest
  std::int64_t predictedTokens = 0;  // tokens the loss is over
  // Where the step ran: "cpu" or "gpu" (compute::deviceName of the backend's device).
  std::string device = "cpu";
  // Set when the loss or gradient norm was not finite and the update was skipped: what happened
  // and how many such steps in a row stop the run (for a warning line or an incident).
  std::string nonFinite{};
  // The held-out loss after this step, when the run evaluated here (eval-every, the last step).
  std::optional<EvalRecord> eval{};
  // Graph mode (Note [whole-step graphs] in train/StepGraphs.h; not in the metrics file): how
  // this step ran — "" eager, "warm-up" (a new shape's first step, its ops run eagerly),
  // "captured" (captured, then replayed), "replayed", "deferred" (graph mode's step without
  // capture).
  std::string graph{};
  // Set when graph mode failed in this step (a capture or launch error, an injected fault) and
  // the loop left it: what failed. The step itself then ran eagerly.
  std::string graphFallback{};
  // Where `seconds` went, in milliseconds (LORASCOPE_STEP_TIMING's breakdown; not in JSON):
  // building the micro-batches, their forward and backward passes (with the loss read), clipping
  // (the gradient norm read; in a data-parallel group, the sum over the ranks before it) and the
  // AdamW update's launch.
  struct Stages {
    double batchesMs = 0.0;
    double passesMs = 0.0;
    double clipMs = 0.0;
    double updateMs = 0.0;
  } stages{};
};

// The record as JSON (a metrics.jsonl line without its newline; the protocol's step event adds
// its envelope), and back from the fields of a line or an event: failures are the reader's
// (common/JsonReader.h), so they name the field and are thrown as the caller's error.
nlohmann::json toJson(const StepRecord& record);
StepRecord readStepRecord(const common::JsonReader& fields);

// The lines of a metrics file (none when it does not exist); a torn (unparseable, unterminated)
// last line is skipped, as a crash leaves it. Throws RunFileError naming the file and line for a
// malformed line elsewhere.
std::vector<StepRecord> readStepRecords(const std::filesystem::path& file);

}  // namespace lorascope::runs

// train/HfLogs.h — a run's metrics in the forms Hugging Face tooling reads:
//   trainer_state.json   the file transformers' Trainer writes (TrainerState.save_to_json:
//                        sorted keys, indent 2) with log_history entries {loss, grad_norm,
//                        learning_rate, epoch, step}, and after a step that evaluated an entry
//                        {eval_loss, eval_runtime, eval_samples_per_second,
//                        eval_steps_per_second, epoch, step} as Trainer.evaluate logs it;
//                        best_metric is the lowest eval_loss. TrainerState.load_from_json reads it
//   TensorBoard scalars  the tags of transformers' TensorBoardCallback (train/loss,
//                        train/learning_rate, train/grad_norm, train/epoch, eval/loss) plus
//                        train/tokens_per_s
// `epoch` is the 0-based epoch a step's examples came from (LoRAscope does not log the
// fraction of an epoch done, which Hugging Face's float epoch holds).
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "train/Checkpoint.h"  // defines: TrainerState
#include "train/TfEvents.h"    // defines: TfEvent
#include "train/TrainLoop.h"   // defines: StepMetrics

namespace lorascope::train {

nlohmann::json hfLogEntry(const StepMetrics& metrics);
nlohmann::json hfEvalLogEntry(const StepMetrics& metrics);  // metrics.eval must be set
// `metrics` are the steps up to state.step; `runConfig` is the run's config.json (its
// "training" object gives max_steps, epochs, micro-batch size and checkpoint interval).
nlohmann::json hfTrainerState(const std::vector<StepMetrics>& metrics, const TrainerState& state,
                              const nlohmann::json& runConfig);
// One TensorBoard event of a step, stamped with the current time.
TfEvent tfEventOf(const StepMetrics& metrics);
// The eval/loss event of an evaluation recorded after its step's event, stamped likewise.
TfEvent tfEventOf(const EvalMetrics& eval);

}  // namespace lorascope::train

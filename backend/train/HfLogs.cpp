// train/HfLogs.cpp — trainer_state.json in transformers' layout and a step's TensorBoard event.
#include "train/HfLogs.h"

#include <chrono>
#include <cmath>

namespace lorascope::train {

using nlohmann::json;

json hfLogEntry(const StepMetrics& m) {
  return {{"epoch", m.epoch.value_or(0.0)},
          {"grad_norm", m.gradNorm},
          {"learning_rate", m.learningRate},
          {"loss", m.loss},
          {"step", m.step}};
}

json hfEvalLogEntry(const StepMetrics& m) {
  const EvalMetrics& e = *m.eval;
  const double perSecond = e.seconds > 0 ? 1.0 / e.seconds : 0.0;
  return {{"epoch", m.epoch.value_or(0.0)},
          {"eval_loss", e.loss},
          {"eval_runtime", e.seconds},
          {"eval_samples_per_second", static_cast<double>(e.sequences) * perSecond},
          {"eval_steps_per_second", static_cast<double>(e.batches) * perSecond},
          {"step", m.step}};
}

json hfTrainerState(const std::vector<StepMetrics>& metrics, const TrainerState& state,
                    const json& runConfig) {
  const json training =
      runConfig.is_object() ? runConfig.value("training", json::object()) : json::object();
  json history = json::array();
  json bestMetric = nullptr;  // the lowest eval_loss so far (metric_for_best_model "eval_loss")
  for (const StepMetrics& m : metrics) {
    if (m.step > state.step)
      continue;
    history.push_back(hfLogEntry(m));
    if (m.eval) {
      history.push_back(hfEvalLogEntry(m));
      if (std::isfinite(m.eval->loss) &&
          (bestMetric.is_null() || m.eval->loss < bestMetric.get<double>()))
        bestMetric = m.eval->loss;
    }
  }
  const json evaluation = training.value("eval", json::object());
  const std::int64_t evalEvery = evaluation.value("every", std::int64_t{0});
  // The fields of transformers' TrainerState dataclass (4.x), so that load_from_json's
  // TrainerState(**json) accepts the file; values LoRAscope has no notion of keep the
  // dataclass defaults.
  return {{"best_metric", bestMetric},
          {"best_model_checkpoint", nullptr},
          {"epoch", static_cast<double>(state.epoch)},
          {"eval_steps", evalEvery > 0 ? evalEvery : 500},
          {"global_step", state.step},
          {"is_hyper_param_search", false},
          {"is_local_process_zero", true},
          {"is_world_process_zero", true},
          {"log_history", history},
          {"logging_steps", 1},
          {"max_steps", training.value("max_steps", std::int64_t{0})},
          {"num_input_tokens_seen", state.tokensSeen},
          {"num_train_epochs", training.value("epochs", std::int64_t{0})},
          {"save_steps", training.value("checkpoint_every", std::int64_t{500})},
          {"stateful_callbacks", json::object()},
          {"total_flos", 0.0},
          {"train_batch_size", training.value("micro_batch_size", std::int64_t{1})},
          {"trial_name", nullptr},
          {"trial_params", nullptr}};
}

namespace {

double wallTimeNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

TfEvent tfEventOf(const StepMetrics& m) {
  TfEvent event;
  event.wallTime = wallTimeNow();
  event.step = m.step;
  event.scalars = {{"train/loss", static_cast<float>(m.loss)},
                   {"train/learning_rate", static_cast<float>(m.learningRate)},
                   {"train/grad_norm", static_cast<float>(m.gradNorm)},
                   {"train/epoch", static_cast<float>(m.epoch.value_or(0.0))},
                   {"train/tokens_per_s", static_cast<float>(m.tokensPerS)}};
  if (m.eval) {
    event.scalars.push_back({"eval/loss", static_cast<float>(m.eval->loss)});  // as HF's Trainer
  }
  return event;
}

TfEvent tfEventOf(const EvalMetrics& eval) {
  TfEvent event;
  event.wallTime = wallTimeNow();
  event.step = eval.step;
  event.scalars = {{"eval/loss", static_cast<float>(eval.loss)}};  // as HF's Trainer
  return event;
}

}  // namespace lorascope::train

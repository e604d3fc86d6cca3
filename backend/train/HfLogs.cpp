// train/HfLogs.cpp — trainer_state.json in transformers' layout and a step's TensorBoard event.
#include "train/HfLogs.h"

#include <chrono>

namespace lorascope::train {

using nlohmann::json;

json hfLogEntry(const StepMetrics& m) {
  return {{"epoch", static_cast<double>(m.epoch)},
          {"grad_norm", m.gradNorm},
          {"learning_rate", m.learningRate},
          {"loss", m.loss},
          {"step", m.step}};
}

json hfTrainerState(const std::vector<StepMetrics>& metrics, const TrainerState& state,
                    const json& runConfig) {
  const json training =
      runConfig.is_object() ? runConfig.value("training", json::object()) : json::object();
  json history = json::array();
  for (const StepMetrics& m : metrics) {
    if (m.step <= state.step)
      history.push_back(hfLogEntry(m));
  }
  // The fields of transformers' TrainerState dataclass (4.x), so that load_from_json's
  // TrainerState(**json) accepts the file; values LoRAscope has no notion of keep the
  // dataclass defaults.
  return {{"best_metric", nullptr},
          {"best_model_checkpoint", nullptr},
          {"epoch", static_cast<double>(state.epoch)},
          {"eval_steps", 500},
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

TfEvent tfEventOf(const StepMetrics& m) {
  TfEvent event;
  event.wallTime =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  event.step = m.step;
  event.scalars = {{"train/loss", static_cast<float>(m.loss)},
                   {"train/learning_rate", static_cast<float>(m.learningRate)},
                   {"train/grad_norm", static_cast<float>(m.gradNorm)},
                   {"train/epoch", static_cast<float>(m.epoch)},
                   {"train/tokens_per_s", static_cast<float>(m.tokensPerS)}};
  return event;
}

}  // namespace lorascope::train

// train/Checkpoint.h — the complete trainer state and its checkpoint folder, written so that a
// resumed run continues bit for bit where the saved one stopped:
//   adapter_model.safetensors + adapter_config.json   the LoRA adapter in PEFT's format
//   optimizer.safetensors                              AdamW moments, F32, keyed
//                                                      "<peft key>.exp_avg" / ".exp_avg_sq"
//   lorascope_state.json                               step, epoch, data cursor, RNG, micro-batch
//                                                      history, config hash (runs made before
//                                                      this name kept it in trainer_state.json;
//                                                      they still resume)
//   trainer_state.json                                 Hugging Face Trainer's state with its
//                                                      log_history (train/HfTrainerState.h),
//                                                      written by RunDirectory
// Floats are stored as their exact bits (safetensors F32; JSON doubles round-trip exactly).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "train/Lora.h"

namespace lorascope::train {

inline constexpr const char* kOptimizerFile = "optimizer.safetensors";
inline constexpr const char* kStateFile = "lorascope_state.json";
// Hugging Face's name; our state lived under it (format_version 1) before lorascope_state.json.
inline constexpr const char* kHfTrainerStateFile = "trainer_state.json";
inline constexpr int kTrainerStateFormatVersion = 1;

// AdamW moments of one LoraWeights (same order as LoraAdapter::weights).
struct LoraMoments {
  std::vector<float> firstA, secondA;  // (r, in)
  std::vector<float> firstB, secondB;  // (out, r)
};

// Zero moments shaped like `adapter` (a fresh run).
std::vector<LoraMoments> zeroMoments(const LoraAdapter& adapter);

// A change of the micro-batch size at a step boundary; the effective batch
// (microBatch × accumulation) stays the same.
struct MicroBatchChange {
  std::int64_t step = 0;  // first optimizer step run with the new sizes
  std::int64_t microBatch = 1;
  std::int64_t accumulation = 1;
  std::string reason;  // "start", "user", "oom", ...

  bool operator==(const MicroBatchChange&) const = default;
};

struct TrainerState {
  std::int64_t step = 0;        // optimizer steps completed
  std::int64_t epoch = 0;       // 0-based epoch the data cursor is in
  std::int64_t dataCursor = 0;  // examples of this epoch's (shuffled) order already consumed
  std::uint64_t seed = 0;       // Philox key: every draw is f(seed, stream, index)
  std::uint64_t rngOffset = 0;  // draws consumed outside (step, epoch)-derived streams
  std::int64_t tokensSeen = 0;  // trained tokens so far
  LoraAdapter adapter;
  std::vector<LoraMoments> moments;  // one per adapter.weights entry
  std::vector<MicroBatchChange> microBatchHistory;
};

// Writes the four files (adapter, optimizer, lorascope_state.json) into `dir` (which must exist;
// each file atomically). `configHash` ties the checkpoint to the run's config.json; `baseModel`
// goes into adapter_config.json.
void writeCheckpointFiles(const std::filesystem::path& dir, const TrainerState& state,
                          const std::string& configHash, const std::string& baseModel);

// Reads a checkpoint folder. Throws CheckpointError naming the file and the problem: a missing
// file, a malformed lorascope_state.json (or, in a checkpoint written before it existed,
// trainer_state.json holding our format_version), a config hash that differs from
// `expectedConfigHash` (when given: the run's config changed since), optimizer moments missing or
// shaped unlike the adapter, steps that disagree between files.
TrainerState readCheckpoint(const std::filesystem::path& dir,
                            const std::optional<std::string>& expectedConfigHash);

// The file of `dir` holding LoRAscope's state: lorascope_state.json, or trainer_state.json of
// a checkpoint written before lorascope_state.json existed.
std::filesystem::path checkpointStateFile(const std::filesystem::path& dir);

// The config hash recorded in the checkpoint's state file (for messages and tooling).
std::string checkpointConfigHash(const std::filesystem::path& dir);

}  // namespace lorascope::train

// train/Merge.h — a merged model folder: the base model with a LoRA adapter folded into its
// weights, W' = W + scale · B·A for every adapted projection (computed in fp32, rounded once to
// the stored dtype), everything else byte for byte. transformers loads it like the base.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>

#include "train/Lora.h"

namespace lorascope::train {

struct MergeReport {
  std::int64_t mergedTensors = 0;  // projections that received B·A
  std::int64_t copiedTensors = 0;  // tensors copied unchanged
  std::int64_t copiedFiles = 0;    // config.json, tokenizer files, index, ...
};

// Progress of a merge: tensor bytes written so far, and of all the weights files' tensors.
using MergeProgress = std::function<void(std::uint64_t doneBytes, std::uint64_t totalBytes)>;

// Writes the merged model to `outDir`, which must not exist yet (it is assembled under a temp
// name beside it and renamed when complete). The safetensors files keep their names and
// sharding; every other regular file of the base folder (config.json, tokenizer.json,
// tokenizer_config.json, generation_config.json, the shard index, ...) is copied. Throws
// CheckpointError when the adapter does not fit the model, model::ModelError for a bad base.
// `progress`, when set, is called after every tensor written.
MergeReport mergeAdapterIntoModel(const std::filesystem::path& baseDir, const LoraAdapter& adapter,
                                  const std::filesystem::path& outDir,
                                  const MergeProgress& progress = {});

// Round to nearest even IEEE binary16 (for f16 bases).
std::uint16_t floatToF16(float value);

}  // namespace lorascope::train

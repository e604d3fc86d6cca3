// train/ModelCard.h — the README.md model card of an adapter folder, laid out as PEFT's
// save_pretrained writes one (YAML front matter with base_model and library_name: peft, the
// base_model:adapter tag; a "Framework versions" section), with what LoRAscope knows of the run
// filled in: rank, alpha, dropout, rsLoRA, target modules, dataset, steps, final loss, tokens,
// and the LoRAscope version that wrote it. A run on 4-bit base weights (--quantize nf4) gets the
// "Training procedure" section older PEFT versions wrote for QLoRA runs: the bitsandbytes
// quantization config the same quantisation has there (nf4, double quantisation, bf16 compute).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "train/Lora.h"  // defines: LoraConfig

namespace lorascope::train {

inline constexpr const char* kModelCardFile = "README.md";

struct ModelCardFacts {
  std::string baseModel;  // base_model_name_or_path: a hub id when known, else a path
  LoraConfig lora;
  std::string dataset;  // the data file's name
  std::int64_t steps = 0;
  std::optional<double> finalLoss;  // of the last step, when metrics exist
  std::int64_t trainedTokens = 0;
  std::string lorascopeVersion;
  std::string quantization = "none";  // the run's --quantize: "none" or "nf4"
};

std::string peftModelCard(const ModelCardFacts& facts);

}  // namespace lorascope::train

// train/PeftExport.h — LoRA adapters in Hugging Face PEFT's on-disk format, written and read:
//   adapter_model.safetensors  keys
//   base_model.model.model.layers.{i}.self_attn.q_proj.lora_A.weight
//                              (lora_B, mlp.gate_proj, ...); A (r, in), B (out, r); F32;
//                              metadata {"format": "pt"}
//   adapter_config.json        LoraConfig.to_dict() as PEFT saves it (peft_type LORA, task_type
//                              CAUSAL_LM, r, lora_alpha, target_modules, lora_dropout, bias none,
//                              fan_in_fan_out false, use_rslora, base_model_name_or_path, ...).
// peft.PeftModel.from_pretrained(base, dir) loads what writePeftAdapter writes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/ModelConfig.h"
#include "train/Lora.h"

namespace lorascope::train {

inline constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";
inline constexpr const char* kAdapterConfigFile = "adapter_config.json";

// adapter_config.json's content as PEFT 0.21 writes it (without peft_version), keys sorted.
nlohmann::ordered_json peftAdapterConfig(const LoraConfig& config,
                                         const std::string& baseModelNameOrPath);

// Writes dir/adapter_model.safetensors and dir/adapter_config.json (each atomically); creates
// dir when needed.
void writePeftAdapter(const std::filesystem::path& dir, const LoraAdapter& adapter,
                      const std::string& baseModelNameOrPath);

struct PeftAdapterFiles {
  LoraAdapter adapter;
  std::string baseModelNameOrPath;  // as recorded; may be empty
};

// Reads a PEFT LoRA adapter folder (ours or one PEFT saved). Throws CheckpointError naming the
// file: a missing file, a config this trainer cannot represent (DoRA, rank/alpha patterns, regex
// targets, bias other than none), a key that is not a LoRA weight of a decoder projection, A or B
// missing for a projection, shapes that disagree with r.
PeftAdapterFiles readPeftAdapter(const std::filesystem::path& dir);

// Throws CheckpointError naming `file` unless every adapted projection exists in `config` with
// the same in/out features.
void checkAdapterFitsModel(const LoraAdapter& adapter, const model::ModelConfig& config,
                           const std::string& file);

}  // namespace lorascope::train

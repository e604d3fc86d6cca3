// train/ModelCard.cpp — README.md for an adapter folder.
#include "train/ModelCard.h"

#include <cstdio>

#include "train/PeftExport.h"

namespace lorascope::train {

namespace {

std::string number(double value, const char* format) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

// A YAML scalar in double quotes (base model paths may hold ':' or '#').
std::string yamlQuoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string peftModelCard(const ModelCardFacts& f) {
  std::string targets;
  const nlohmann::ordered_json adapterConfig = peftAdapterConfig(f.lora, f.baseModel);
  for (const auto& name : adapterConfig.at("target_modules")) {
    targets += (targets.empty() ? "" : ", ") + name.get<std::string>();
  }
  std::string card;
  card += "---\n";
  card += "base_model: " + yamlQuoted(f.baseModel) + "\n";
  card += "library_name: peft\n";
  card += "pipeline_tag: text-generation\n";
  card += "tags:\n";
  card += "- " + yamlQuoted("base_model:adapter:" + f.baseModel) + "\n";
  card += "- lora\n";
  card += "- lorascope\n";
  card += "---\n\n";
  card += "# Model Card for a LoRA adapter of " + f.baseModel + "\n\n";
  card += "A LoRA adapter trained with LoRAscope " + f.lorascopeVersion + " on " +
          (f.dataset.empty() ? std::string("an unnamed dataset") : "`" + f.dataset + "`") + ".\n\n";
  card += "## Training details\n\n";
  card += "| | |\n|---|---|\n";
  card += "| Base model | `" + f.baseModel + "` |\n";
  card += "| LoRA rank (r) | " + std::to_string(f.lora.rank) + " |\n";
  card += "| LoRA alpha | " + number(f.lora.alpha, "%g") + " |\n";
  card += "| LoRA dropout | " + number(f.lora.dropout, "%g") + " |\n";
  card += "| rsLoRA | " + std::string(f.lora.useRslora ? "yes" : "no") + " |\n";
  card += "| Target modules | " + targets + " |\n";
  card += "| Dataset | " + (f.dataset.empty() ? std::string("unknown") : f.dataset) + " |\n";
  card += "| Optimizer steps | " + std::to_string(f.steps) + " |\n";
  card += "| Final training loss | " +
          (f.finalLoss ? number(*f.finalLoss, "%.4f") : std::string("not recorded")) + " |\n";
  card += "| Tokens trained | " + std::to_string(f.trainedTokens) + " |\n\n";
  if (f.quantization == "nf4") {
    // The section and keys PEFT's model card template wrote for a QLoRA run (a bitsandbytes
    // BitsAndBytesConfig with load_in_4bit), so tools that read it recognise the recipe.
    card += "## Training procedure\n\n";
    card += "The following `bitsandbytes` quantization config was used during training:\n";
    for (const char* line :
         {"quant_method: bitsandbytes", "load_in_8bit: False", "load_in_4bit: True",
          "llm_int8_threshold: 6.0", "llm_int8_skip_modules: None",
          "llm_int8_enable_fp32_cpu_offload: False", "llm_int8_has_fp16_weight: False",
          "bnb_4bit_quant_type: nf4", "bnb_4bit_use_double_quant: True",
          "bnb_4bit_compute_dtype: bfloat16"}) {
      card += std::string("- ") + line + "\n";
    }
    card += "\n";
    card +=
        "LoRAscope quantised the base model's q, k, v, o, gate, up and down projections to NF4 "
        "with double quantisation (blocks of 64, the block scales re-quantised in groups of "
        "256) when it loaded them, with its own implementation of that format. The adapter "
        "applies to the unquantised base model named above.\n\n";
  }
  card += "## How to use\n\n";
  card += "```python\n";
  card += "from peft import PeftModel\n";
  card += "from transformers import AutoModelForCausalLM\n\n";
  card += "base = AutoModelForCausalLM.from_pretrained(" + yamlQuoted(f.baseModel) + ")\n";
  card += "model = PeftModel.from_pretrained(base, \"path/to/this/folder\")\n";
  card += "```\n\n";
  card += "### Framework versions\n\n";
  card += "- LoRAscope " + f.lorascopeVersion + "\n";
  card += "- PEFT adapter format (adapter_config.json as PEFT 0.21 writes it)\n";
  return card;
}

}  // namespace lorascope::train

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

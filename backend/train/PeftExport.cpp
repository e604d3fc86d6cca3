// train/PeftExport.cpp — PEFT adapter folders: adapter_config.json and adapter_model.safetensors.
#include "train/PeftExport.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "common/DurableFile.h"
#include "common/OsError.h"  // defines: pathText
#include "compute/Convert.h"
#include "model/ModelError.h"
#include "model/Safetensors.h"
#include "train/CheckpointError.h"
#include "train/SafetensorsWriter.h"
#include "train/TrainGraph.h"  // defines: modelLoraSites

namespace lorascope::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kKeyPrefix = "base_model.model.model.layers.";

// "base_model.model.model.layers.3.mlp.up_proj.lora_B.weight" → layer 3, Up, isA false.
struct ParsedKey {
  int layer = 0;
  LoraModule module = LoraModule::Q;
  bool isA = true;
};

std::optional<ParsedKey> parsePeftKey(const std::string& key) {
  const std::string prefix = kKeyPrefix;
  if (key.rfind(prefix, 0) != 0) {
    return std::nullopt;
  }
  std::size_t pos = prefix.size();
  std::size_t digits = 0;
  int layer = 0;
  while (pos < key.size() && std::isdigit(static_cast<unsigned char>(key[pos])) && digits < 6) {
    layer = layer * 10 + (key[pos] - '0');
    ++pos;
    ++digits;
  }
  if (digits == 0 || pos >= key.size() || key[pos] != '.') {
    return std::nullopt;
  }
  const std::string rest = key.substr(pos + 1);
  for (LoraModule module : kAllLoraModules) {
    for (const bool isA : {true, false}) {
      if (rest == std::string(modulePath(module)) + (isA ? ".lora_A.weight" : ".lora_B.weight")) {
        return ParsedKey{layer, module, isA};
      }
    }
  }
  return std::nullopt;
}

std::vector<float> readAsFloats(const model::SafetensorsFile& file,
                                const model::SafetensorsEntry& entry) {
  const compute::Tensor t = file.tensor(entry);
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  compute::widenToFloat(t.data(), t.dtype(), 0, t.numel(), out.data());
  return out;
}

LoraConfig parseLoraConfig(const json& doc, const std::string& file) {
  const auto bad = [&](const std::string& problem) { return CheckpointError(file, problem); };
  const auto field = [&](const char* name) -> const json& {
    if (!doc.contains(name)) {
      throw bad(std::string("field '") + name + "' is missing");
    }
    return doc.at(name);
  };
  if (doc.value("peft_type", "") != "LORA") {
    throw bad("peft_type is " + doc.value("peft_type", json("(none)")).dump() +
              "; only LORA adapters can be loaded");
  }
  if (doc.value("use_dora", false)) {
    throw bad("use_dora is true; DoRA adapters are not supported");
  }
  if (doc.value("fan_in_fan_out", false)) {
    throw bad("fan_in_fan_out is true; only Linear layers (fan_in_fan_out false) are supported");
  }
  if (doc.contains("bias") && doc.at("bias") != "none") {
    throw bad("bias is " + doc.at("bias").dump() + "; only bias \"none\" is supported");
  }
  for (const char* pattern : {"rank_pattern", "alpha_pattern"}) {
    if (doc.contains(pattern) && doc.at(pattern).is_object() && !doc.at(pattern).empty()) {
      throw bad(std::string(pattern) + " is set; per-module ranks/alphas are not supported");
    }
  }
  // A whole number in [min, max], read whole: get<int>() kept the low 32 bits (an r of 2^32 + 8
  // was read as 8, 2^31 as -2147483648).
  const auto wholeNumber = [&](const json& v, const std::string& what, std::int64_t min,
                               std::int64_t max) {
    const bool inRange =
        v.is_number_integer() &&
        !(v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(max)) &&
        v.get<std::int64_t>() >= min && v.get<std::int64_t>() <= max;
    if (!inRange) {
      throw bad(what + " must be a whole number from " + std::to_string(min) + " to " +
                std::to_string(max) + ", got " + v.dump());
    }
    return static_cast<int>(v.get<std::int64_t>());
  };
  LoraConfig config;
  const json& r = field("r");
  const json& alpha = field("lora_alpha");
  if (!r.is_number_integer() || !alpha.is_number()) {
    throw bad("r must be an integer and lora_alpha a number");
  }
  config.rank = wholeNumber(r, "r", 1, kMaxLoraRank);
  config.alpha = alpha.get<double>();
  config.dropout = doc.value("lora_dropout", 0.0);
  config.useRslora = doc.value("use_rslora", false);
  const json& targets = field("target_modules");
  if (!targets.is_array()) {
    throw bad("target_modules must be a list of module names (a regex string is not supported)");
  }
  config.targets.clear();
  for (const json& t : targets) {
    try {
      config.targets.insert(parseLoraModule(t.get<std::string>()));
    } catch (const std::exception& e) {
      throw bad(std::string("target_modules: ") + e.what());
    }
  }
  if (doc.contains("layers_to_transform") && !doc.at("layers_to_transform").is_null()) {
    const json& layers = doc.at("layers_to_transform");
    std::set<int> chosen;
    constexpr std::int64_t kMaxLayer = 1 << 20;  // far past any model's depth
    if (layers.is_number_integer()) {
      chosen.insert(wholeNumber(layers, "layers_to_transform", 0, kMaxLayer));
    } else if (layers.is_array()) {
      for (std::size_t i = 0; i < layers.size(); ++i) {
        chosen.insert(
            wholeNumber(layers[i], "layers_to_transform[" + std::to_string(i) + "]", 0, kMaxLayer));
      }
    } else {
      throw bad("layers_to_transform must be an integer or a list of integers");
    }
    config.layers = chosen;
  }
  try {
    config.validate();
  } catch (const std::invalid_argument& e) {
    throw bad(e.what());
  }
  return config;
}

}  // namespace

nlohmann::ordered_json peftAdapterConfig(const LoraConfig& config,
                                         const std::string& baseModelNameOrPath) {
  json targets = json::array();
  for (LoraModule module : kAllLoraModules) {
    if (config.targets.count(module)) {
      targets.push_back(moduleName(module));
    }
  }
  json layers = nullptr;
  if (config.layers) {
    layers = json::array();
    for (int l : *config.layers) {
      layers.push_back(l);
    }
  }
  // PEFT writes lora_alpha as the int it usually is; keep a fractional alpha exact.
  const json alpha = config.alpha == std::floor(config.alpha) && std::fabs(config.alpha) < 1e15
                         ? json(static_cast<std::int64_t>(config.alpha))
                         : json(config.alpha);
  // The fields PEFT 0.21 writes (tests/train/peft_reference holds what it wrote), less
  // peft_version, which would claim a PEFT release wrote the file. nlohmann's json object sorts
  // keys, as PEFT's json.dumps(sort_keys=True) does.
  const json doc = {
      {"alora_invocation_tokens", nullptr},
      {"alpha_pattern", json::object()},
      {"arrow_config", nullptr},
      {"auto_mapping", nullptr},
      {"base_model_name_or_path", baseModelNameOrPath},
      {"bias", "none"},
      {"corda_config", nullptr},
      {"ensure_weight_tying", false},
      {"eva_config", nullptr},
      {"exclude_modules", nullptr},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"kasa_config", nullptr},
      {"layer_replication", nullptr},
      {"layers_pattern", nullptr},
      {"layers_to_transform", layers},
      {"loftq_config", json::object()},
      {"lora_alpha", alpha},
      {"lora_bias", false},
      {"lora_dropout", config.dropout},
      {"lora_ga_config", nullptr},
      {"megatron_config", nullptr},
      {"megatron_core", "megatron.core"},
      {"modules_to_save", nullptr},
      {"monteclora_config", nullptr},
      {"peft_type", "LORA"},
      {"qalora_group_size", 16},
      {"r", config.rank},
      {"rank_pattern", json::object()},
      {"revision", nullptr},
      {"target_modules", targets},
      {"target_parameters", nullptr},
      {"task_type", "CAUSAL_LM"},
      {"trainable_token_indices", nullptr},
      {"use_bdlora", nullptr},
      {"use_dora", false},
      {"use_qalora", false},
      {"use_rslora", config.useRslora},
      {"velora_config", nullptr},
  };
  return nlohmann::ordered_json::parse(doc.dump());
}

void writePeftAdapter(const fs::path& dir, const LoraAdapter& adapter,
                      const std::string& baseModelNameOrPath) {
  requireFiniteAdapter(adapter, common::pathText(dir));
  fs::create_directories(dir);
  std::vector<TensorToWrite> tensors;
  const std::int64_t r = adapter.config.rank;
  for (const LoraWeights& w : adapter.weights) {
    tensors.push_back(f32TensorToWrite(peftKey(w.site, true), {r, w.site.inFeatures}, w.a));
    tensors.push_back(f32TensorToWrite(peftKey(w.site, false), {w.site.outFeatures, r}, w.b));
  }
  writeSafetensors(dir / kAdapterWeightsFile, tensors, {{"format", "pt"}});
  common::writeFileDurably(dir / kAdapterConfigFile,
                           peftAdapterConfig(adapter.config, baseModelNameOrPath).dump(2) + "\n");
}

PeftAdapterFiles readPeftAdapter(const fs::path& dir) {
  const fs::path configPath = dir / kAdapterConfigFile;
  const json doc = readRunJson(configPath);
  PeftAdapterFiles out;
  out.adapter.config = parseLoraConfig(doc, common::pathText(configPath));
  if (doc.contains("base_model_name_or_path") && doc.at("base_model_name_or_path").is_string()) {
    out.baseModelNameOrPath = doc.at("base_model_name_or_path").get<std::string>();
  }
  const fs::path weightsPath = dir / kAdapterWeightsFile;
  const std::string file = common::pathText(weightsPath);
  if (!fs::exists(weightsPath)) {
    throw CheckpointError(file, "is missing (an adapter folder holds " +
                                    std::string(kAdapterWeightsFile) + " and " +
                                    kAdapterConfigFile + ")");
  }
  std::unique_ptr<model::SafetensorsFile> weights;
  try {
    weights = std::make_unique<model::SafetensorsFile>(file);
  } catch (const model::ModelError& e) {
    throw CheckpointError(file, e.what());
  }
  struct Pair {
    const model::SafetensorsEntry* a = nullptr;
    const model::SafetensorsEntry* b = nullptr;
  };
  std::map<std::pair<int, int>, Pair> pairs;  // (layer, module) → entries
  for (const auto& [name, entry] : weights->header().tensors) {
    const std::optional<ParsedKey> key = parsePeftKey(name);
    if (!key) {
      throw CheckpointError(file, "tensor '" + name +
                                      "' is not a LoRA A/B weight of a decoder projection "
                                      "(expected " +
                                      std::string(kKeyPrefix) +
                                      "{i}.self_attn.q_proj.lora_A.weight and the like)");
    }
    Pair& p = pairs[{key->layer, static_cast<int>(key->module)}];
    (key->isA ? p.a : p.b) = &entry;
  }
  const std::int64_t r = out.adapter.config.rank;
  for (const auto& [where, p] : pairs) {
    LoraSite site{where.first, static_cast<LoraModule>(where.second), 0, 0};
    if (p.a == nullptr || p.b == nullptr) {
      throw CheckpointError(file, "'" + peftKey(site, p.a == nullptr) +
                                      "' is missing (every projection needs lora_A and lora_B)");
    }
    if (p.a->shape.size() != 2 || p.a->shape[0] != r || p.b->shape.size() != 2 ||
        p.b->shape[1] != r) {
      throw CheckpointError(
          file, "'" + peftKey(site, true) + "' has shape " + compute::shapeToString(p.a->shape) +
                    " and lora_B " + compute::shapeToString(p.b->shape) +
                    "; with r = " + std::to_string(r) + " they must be [r, in] and [out, r]");
    }
    site.inFeatures = p.a->shape[1];
    site.outFeatures = p.b->shape[0];
    out.adapter.weights.push_back(
        {site, readAsFloats(*weights, *p.a), readAsFloats(*weights, *p.b)});
  }
  if (out.adapter.weights.empty()) {
    throw CheckpointError(file, "holds no LoRA weights");
  }
  return out;
}

void checkAdapterFitsModel(const LoraAdapter& adapter, const model::ModelConfig& config,
                           const std::string& file) {
  const std::vector<LoraSite> sites = modelLoraSites(config);
  for (const LoraWeights& w : adapter.weights) {
    const auto it = std::find_if(sites.begin(), sites.end(), [&](const LoraSite& s) {
      return s.layer == w.site.layer && s.module == w.site.module;
    });
    if (it == sites.end()) {
      throw CheckpointError(file, "adapter has layer " + std::to_string(w.site.layer) + " " +
                                      modulePath(w.site.module) + " but the model has only " +
                                      std::to_string(config.numLayers) +
                                      " layers; was it trained for another model?");
    }
    if (it->inFeatures != w.site.inFeatures || it->outFeatures != w.site.outFeatures) {
      throw CheckpointError(
          file, "layer " + std::to_string(w.site.layer) + " " + modulePath(w.site.module) +
                    ": adapter is " + std::to_string(w.site.inFeatures) + " → " +
                    std::to_string(w.site.outFeatures) +
                    " features but the model's projection is " + std::to_string(it->inFeatures) +
                    " → " + std::to_string(it->outFeatures) +
                    "; was it trained for another model?");
    }
  }
}

}  // namespace lorascope::train

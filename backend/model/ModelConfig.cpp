// ModelConfig.cpp — config.json parsing with errors that name the file and the field.
#include "model/ModelConfig.h"

#include <cmath>
#include <utility>

#include <nlohmann/json.hpp>

#include "model/JsonFile.h"
#include "model/ModelError.h"

namespace lorascope::model {
namespace {

using nlohmann::json;

// Reads the fields of one JSON object (the document or rope_parameters / rope_scaling) and says
// which object a bad field lives in.
class FieldReader {
 public:
  FieldReader(const json& object, const std::string& file, std::string prefix)
      : object_(object), file_(file), prefix_(std::move(prefix)) {}

  bool has(const char* name) const { return object_.contains(name) && !object_.at(name).is_null(); }

  std::int64_t positiveInt(const char* name) const {
    const json& v = require(name);
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0) {
      fail(name, "must be a positive integer", v);
    }
    return v.get<std::int64_t>();
  }
  std::int64_t positiveInt(const char* name, std::int64_t fallback) const {
    return has(name) ? positiveInt(name) : fallback;
  }

  double positiveNumber(const char* name) const {
    const json& v = require(name);
    if (!v.is_number() || !(v.get<double>() > 0.0) || !std::isfinite(v.get<double>())) {
      fail(name, "must be a positive number", v);
    }
    return v.get<double>();
  }
  double positiveNumber(const char* name, double fallback) const {
    return has(name) ? positiveNumber(name) : fallback;
  }

  bool boolean(const char* name, bool fallback) const {
    if (!has(name)) {
      return fallback;
    }
    const json& v = object_.at(name);
    if (!v.is_boolean()) {
      fail(name, "must be true or false", v);
    }
    return v.get<bool>();
  }

  std::string string(const char* name) const {
    const json& v = require(name);
    if (!v.is_string()) {
      fail(name, "must be a string", v);
    }
    return v.get<std::string>();
  }
  std::string string(const char* name, const std::string& fallback) const {
    return has(name) ? string(name) : fallback;
  }

  [[noreturn]] void fail(const char* name, const std::string& rule, const json& v) const {
    throw ModelError(file_, "field '" + prefix_ + name + "' " + rule + ", got " + v.dump());
  }

 private:
  const json& require(const char* name) const {
    if (!has(name)) {
      throw ModelError(file_, "field '" + prefix_ + name + "' is missing");
    }
    return object_.at(name);
  }

  const json& object_;
  const std::string& file_;
  std::string prefix_;
};

constexpr std::pair<const char*, Family> kFamilies[] = {
    {"llama", Family::Llama},     {"qwen2", Family::Qwen2},   {"qwen3", Family::Qwen3},
    {"mistral", Family::Mistral}, {"gemma2", Family::Gemma2}, {"gemma3_text", Family::Gemma3},
};

Family parseFamily(const std::string& modelType, const std::string& file) {
  for (const auto& [name, family] : kFamilies) {
    if (modelType == name) {
      return family;
    }
  }
  if (modelType == "gemma3") {
    throw UnsupportedModelError(
        file,
        "model_type 'gemma3' is the multimodal Gemma 3 (vision tower and text_config); this "
        "build trains the text-only gemma3_text models (e.g. gemma-3-1b), not the "
        "multimodal folders");
  }
  throw UnsupportedModelError(
      file, "model_type '" + modelType + "' (this build runs " + supportedFamilies() + ")");
}

bool isGemma(Family family) {
  return family == Family::Gemma2 || family == Family::Gemma3;
}

// Scaling keys live in rope_scaling (≤4.x) or rope_parameters (5.x); the same reader serves both.
void parseRopeScaling(const FieldReader& scaling, RopeConfig& rope, const std::string& file) {
  const std::string type =
      scaling.has("rope_type") ? scaling.string("rope_type") : scaling.string("type", "default");
  if (type == "default") {
    rope.scaling = RopeScalingType::None;
  } else if (type == "linear") {
    rope.scaling = RopeScalingType::Linear;
    rope.factor = scaling.positiveNumber("factor");
  } else if (type == "llama3") {
    rope.scaling = RopeScalingType::Llama3;
    rope.factor = scaling.positiveNumber("factor");
    rope.lowFreqFactor = scaling.positiveNumber("low_freq_factor");
    rope.highFreqFactor = scaling.positiveNumber("high_freq_factor");
    rope.originalMaxPositionEmbeddings = scaling.positiveInt("original_max_position_embeddings");
    if (!(rope.highFreqFactor > rope.lowFreqFactor)) {
      throw ModelError(file, "rope scaling: high_freq_factor must exceed low_freq_factor");
    }
  } else {
    throw UnsupportedModelError(
        file, "rope scaling type '" + type + "' (this build runs default, linear and llama3)");
  }
}

// A rope_parameters object: either one set of parameters, or (Gemma 3 under transformers 5) one
// per layer type, {"full_attention": {...}, "sliding_attention": {...}}.
void parseRopeParameters(const json& params, RopeConfig& rope, std::optional<RopeConfig>& local,
                         const std::string& file) {
  if (params.contains("full_attention") || params.contains("sliding_attention")) {
    for (const char* type : {"full_attention", "sliding_attention"}) {
      if (!params.contains(type)) {
        continue;
      }
      const json& one = params.at(type);
      const std::string prefix = std::string("rope_parameters.") + type + ".";
      if (!one.is_object()) {
        throw ModelError(file, "field '" + prefix.substr(0, prefix.size() - 1) +
                                   "' must be an object, got " + one.dump());
      }
      RopeConfig parsed;
      parsed.theta = rope.theta;
      const FieldReader reader(one, file, prefix);
      parsed.theta = reader.positiveNumber("rope_theta", parsed.theta);
      parseRopeScaling(reader, parsed, file);
      (std::string(type) == "full_attention" ? rope : local.emplace()) = parsed;
    }
    return;
  }
  const FieldReader reader(params, file, "rope_parameters.");
  rope.theta = reader.positiveNumber("rope_theta", rope.theta);
  parseRopeScaling(reader, rope, file);
}

RopeConfig parseRope(const json& doc, const FieldReader& top, std::optional<RopeConfig>& local,
                     const std::string& file) {
  RopeConfig rope;
  rope.theta = top.positiveNumber("rope_theta", 10000.0);
  if (top.has("rope_parameters")) {
    const json& params = doc.at("rope_parameters");
    if (!params.is_object()) {
      top.fail("rope_parameters", "must be an object", params);
    }
    parseRopeParameters(params, rope, local, file);
  } else if (top.has("rope_scaling")) {
    const json& scaling = doc.at("rope_scaling");
    if (!scaling.is_object()) {
      top.fail("rope_scaling", "must be an object or null", scaling);
    }
    parseRopeScaling(FieldReader(scaling, file, "rope_scaling."), rope, file);
  }
  return rope;
}

// Which layers use the sliding window: config.json's layer_types when present (transformers
// ≥4.53 writes it for every family), else the family's pattern.
std::vector<bool> parseSlidingLayers(const json& doc, const ModelConfig& c,
                                     std::int64_t gemma3Pattern, const std::string& file) {
  std::vector<bool> sliding(static_cast<std::size_t>(c.numLayers), false);
  if (doc.contains("layer_types") && !doc.at("layer_types").is_null()) {
    const json& types = doc.at("layer_types");
    if (!types.is_array() || static_cast<std::int64_t>(types.size()) != c.numLayers) {
      throw ModelError(file, "field 'layer_types' must list one type per layer (" +
                                 std::to_string(c.numLayers) + "), got " + types.dump());
    }
    for (std::size_t i = 0; i < types.size(); ++i) {
      const json& t = types[i];
      if (t == "sliding_attention") {
        sliding[i] = true;
      } else if (t != "full_attention") {
        throw UnsupportedModelError(file, "layer_types[" + std::to_string(i) + "] = " + t.dump() +
                                              " (this build runs full_attention and "
                                              "sliding_attention layers)");
      }
    }
    return sliding;
  }
  for (std::size_t i = 0; i < sliding.size(); ++i) {
    if (c.family == Family::Gemma2) {
      sliding[i] = (i + 1) % 2 != 0;  // layers 0, 2, 4, ... slide
    } else if (c.family == Family::Gemma3) {
      sliding[i] = (i + 1) % static_cast<std::size_t>(gemma3Pattern) != 0;
    } else {
      sliding[i] = true;
    }
  }
  return sliding;
}

// A soft-capping value: absent → the family's default, null → off.
double softcap(const json& doc, const FieldReader& top, const char* name, double fallback) {
  if (!doc.contains(name)) {
    return fallback;
  }
  return top.has(name) ? top.positiveNumber(name) : 0.0;
}

// The fields of Gemma 2 and Gemma 3 beyond the Llama graph.
void parseGemma(const json& doc, const FieldReader& top, ModelConfig& c) {
  const bool gemma2 = c.family == Family::Gemma2;
  c.qkvBias = c.oBias = top.boolean("attention_bias", false);
  c.qkNorm = !gemma2;
  c.normWeightPlusOne = true;
  c.sandwichNorms = true;
  c.embeddingScale = std::sqrt(static_cast<double>(c.hiddenSize));
  c.attentionScale = 1.0 / std::sqrt(top.positiveNumber("query_pre_attn_scalar", 256.0));
  c.attentionLogitSoftcap = softcap(doc, top, "attn_logit_softcapping", gemma2 ? 50.0 : 0.0);
  c.finalLogitSoftcap = softcap(doc, top, "final_logit_softcapping", gemma2 ? 30.0 : 0.0);
  // transformers' Gemma configs default sliding_window to 4096; null disables it.
  c.slidingWindow = doc.contains("sliding_window") ? top.positiveInt("sliding_window", 0) : 4096;
  if (!gemma2 && !c.localRope) {
    RopeConfig local;  // transformers ≤4.x: rope_local_base_freq, no scaling on local layers
    local.theta = top.positiveNumber("rope_local_base_freq", 10000.0);
    c.localRope = local;
  }
}

// Bounds far above any released model, so that shape arithmetic (numel of every weight, times
// layers) can never overflow int64 on a hostile or corrupted config.
void checkPlausibleSizes(const ModelConfig& c, const std::string& file) {
  constexpr std::int64_t kMaxDimension = std::int64_t{1} << 24;  // elements along one axis
  constexpr std::int64_t kMaxLayers = std::int64_t{1} << 16;
  const std::pair<const char*, std::int64_t> dims[] = {
      {"vocab_size", c.vocabSize},
      {"hidden_size", c.hiddenSize},
      {"intermediate_size", c.intermediateSize},
      {"num_attention_heads", c.numHeads},
      {"head_dim", c.headDim},
  };
  for (const auto& [name, value] : dims) {
    if (value > kMaxDimension) {
      throw ModelError(file, std::string(name) + " = " + std::to_string(value) +
                                 " is implausibly large (limit " + std::to_string(kMaxDimension) +
                                 ")");
    }
  }
  if (c.numHeads * c.headDim > kMaxDimension) {  // both ≤ 2^24 here: no overflow
    throw ModelError(file, "num_attention_heads × head_dim = " +
                               std::to_string(c.numHeads * c.headDim) + " is implausibly large");
  }
  if (c.numLayers > kMaxLayers) {
    throw ModelError(
        file, "num_hidden_layers = " + std::to_string(c.numLayers) + " is implausibly large");
  }
}

}  // namespace

const char* familyName(Family family) {
  for (const auto& [name, f] : kFamilies) {
    if (f == family) {
      return name;
    }
  }
  return "?";
}

std::string supportedFamilies() {
  std::string out;
  for (const auto& [name, family] : kFamilies) {
    out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

ModelConfig parseModelConfig(const json& doc, const std::string& file) {
  if (!doc.is_object()) {
    throw ModelError(file, "expected a JSON object, found " + std::string(doc.type_name()));
  }
  const FieldReader top(doc, file, "");
  ModelConfig c;
  c.modelType = top.string("model_type");
  c.family = parseFamily(c.modelType, file);
  const bool gemma = isGemma(c.family);
  // Gemma names the field hidden_activation (and may also write hidden_act).
  const std::string activation =
      gemma ? top.string("hidden_activation", top.string("hidden_act", "gelu_pytorch_tanh"))
            : top.string("hidden_act", "silu");
  if (activation != (gemma ? "gelu_pytorch_tanh" : "silu")) {
    throw UnsupportedModelError(
        file, "hidden_act '" + activation + "' (the MLP of a " + c.modelType + " model must be " +
                  (gemma ? "GeGLU, gelu_pytorch_tanh" : "SwiGLU, silu") + ")");
  }
  c.mlpActivation = gemma ? MlpActivation::GeluTanh : MlpActivation::Silu;
  c.vocabSize = top.positiveInt("vocab_size");
  c.hiddenSize = top.positiveInt("hidden_size");
  c.intermediateSize = top.positiveInt("intermediate_size");
  c.numLayers = top.positiveInt("num_hidden_layers");
  c.numHeads = top.positiveInt("num_attention_heads");
  c.numKvHeads = top.positiveInt("num_key_value_heads", c.numHeads);
  if (c.numHeads % c.numKvHeads != 0) {
    throw ModelError(file, "num_attention_heads " + std::to_string(c.numHeads) +
                               " is not a multiple of num_key_value_heads " +
                               std::to_string(c.numKvHeads));
  }
  if (top.has("head_dim")) {
    c.headDim = top.positiveInt("head_dim");
  } else if (gemma || c.family == Family::Qwen3) {
    c.headDim = c.family == Family::Qwen3 ? 128 : 256;  // transformers' config defaults
  } else if (c.hiddenSize % c.numHeads == 0) {
    c.headDim = c.hiddenSize / c.numHeads;
  } else {
    throw ModelError(file, "field 'head_dim' is missing and hidden_size " +
                               std::to_string(c.hiddenSize) + " is not a multiple of " +
                               std::to_string(c.numHeads) + " heads");
  }
  if (c.headDim % 2 != 0) {
    throw ModelError(file, "head_dim " + std::to_string(c.headDim) + " is odd; RoPE needs pairs");
  }
  checkPlausibleSizes(c, file);
  c.rmsNormEps = top.positiveNumber("rms_norm_eps", 1e-6);  // transformers' default
  c.rope = parseRope(doc, top, c.localRope, file);
  c.tieWordEmbeddings = top.boolean("tie_word_embeddings", gemma);  // Gemma ties by default
  c.maxPositionEmbeddings = top.positiveInt("max_position_embeddings", 0);
  c.storedDtype = top.has("dtype") ? top.string("dtype") : top.string("torch_dtype", "");
  switch (c.family) {
    case Family::Llama:
      c.qkvBias = c.oBias = top.boolean("attention_bias", false);
      c.mlpBias = top.boolean("mlp_bias", false);
      break;
    case Family::Qwen2:
      c.qkvBias = true;  // Qwen2Attention: q/k/v projections carry a bias, o_proj does not
      c.slidingWindow =
          top.boolean("use_sliding_window", false) ? top.positiveInt("sliding_window", 4096) : 0;
      break;
    case Family::Qwen3:
      c.qkvBias = c.oBias = top.boolean("attention_bias", false);
      c.qkNorm = true;  // Qwen3Attention: q_norm, k_norm over head_dim before RoPE
      c.slidingWindow =
          top.boolean("use_sliding_window", false) ? top.positiveInt("sliding_window", 4096) : 0;
      break;
    case Family::Mistral:
      // transformers' MistralConfig defaults sliding_window to 4096; null disables it.
      c.slidingWindow =
          doc.contains("sliding_window") ? top.positiveInt("sliding_window", 0) : 4096;
      break;
    case Family::Gemma2:
    case Family::Gemma3:
      parseGemma(doc, top, c);
      break;
  }
  const std::int64_t pattern = top.positiveInt("sliding_window_pattern", 6);
  c.slidingLayers = c.slidingWindow > 0 ? parseSlidingLayers(doc, c, pattern, file)
                                        : std::vector<bool>(static_cast<std::size_t>(c.numLayers));
  return c;
}

ModelConfig parseModelConfigText(std::string_view text, const std::string& file) {
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    throw ModelError(file, "not well-formed JSON");
  }
  return parseModelConfig(doc, file);
}

ModelConfig loadModelConfig(const std::string& path) {
  return parseModelConfig(readJsonFile(path), path);
}

std::vector<float> ropeInverseFrequencies(const ModelConfig& config) {
  return ropeInverseFrequencies(config.rope, config.headDim);
}

std::vector<float> ropeInverseFrequencies(const RopeConfig& rope, std::int64_t headDim) {
  const std::int64_t half = headDim / 2;
  std::vector<float> inv(static_cast<std::size_t>(half));
  constexpr double kTwoPi = 6.283185307179586;
  for (std::int64_t i = 0; i < half; ++i) {
    double f =
        1.0 / std::pow(rope.theta, static_cast<double>(2 * i) / static_cast<double>(headDim));
    if (rope.scaling == RopeScalingType::Linear) {
      f /= rope.factor;
    } else if (rope.scaling == RopeScalingType::Llama3) {
      // Llama 3.1: long wavelengths are slowed by `factor`, short ones kept, the band between
      // low_freq_factor and high_freq_factor interpolated smoothly.
      const double old = static_cast<double>(rope.originalMaxPositionEmbeddings);
      const double wavelength = kTwoPi / f;
      if (wavelength > old / rope.lowFreqFactor) {
        f /= rope.factor;
      } else if (wavelength >= old / rope.highFreqFactor) {
        const double smooth =
            (old / wavelength - rope.lowFreqFactor) / (rope.highFreqFactor - rope.lowFreqFactor);
        f = (1.0 - smooth) * f / rope.factor + smooth * f;
      }
    }
    inv[static_cast<std::size_t>(i)] = static_cast<float>(f);
  }
  return inv;
}

}  // namespace lorascope::model

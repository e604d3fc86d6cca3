// ModelFolder.cpp — opening a model folder: weights index (single file or shards), then every
// expected tensor located, shape-checked against config.json and viewed from its mapping.
#include "model/ModelFolder.h"

#include "model/HfCache.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/OsError.h"   // defines: pathFromUtf8, pathText
#include "compute/Convert.h"  // defines: widenToFloat
#include "model/JsonFile.h"
#include "model/ModelError.h"
#include "model/ModelLayout.h"
#include "model/Projections.h"

namespace lorascope::model {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Located {
  const SafetensorsFile* file = nullptr;
  const SafetensorsEntry* entry = nullptr;
};
using Files = std::map<std::string, std::shared_ptr<const SafetensorsFile>>;

// Where each projection's weight and bias go in LayerWeights, and which config flag says the
// checkpoint has the bias.
struct ProjectionSlots {
  Projection projection;
  compute::Tensor LayerWeights::*weight;
  compute::Tensor LayerWeights::*bias;
  bool ModelConfig::*hasBias;
};
constexpr ProjectionSlots kProjectionSlots[] = {
    {Projection::Q, &LayerWeights::q, &LayerWeights::qBias, &ModelConfig::qkvBias},
    {Projection::K, &LayerWeights::k, &LayerWeights::kBias, &ModelConfig::qkvBias},
    {Projection::V, &LayerWeights::v, &LayerWeights::vBias, &ModelConfig::qkvBias},
    {Projection::O, &LayerWeights::o, &LayerWeights::oBias, &ModelConfig::oBias},
    {Projection::Gate, &LayerWeights::gate, &LayerWeights::gateBias, &ModelConfig::mlpBias},
    {Projection::Up, &LayerWeights::up, &LayerWeights::upBias, &ModelConfig::mlpBias},
    {Projection::Down, &LayerWeights::down, &LayerWeights::downBias, &ModelConfig::mlpBias},
};

// A shard name from an index must be a plain file name beside the index (no paths).
void checkShardName(const std::string& shard, const std::string& indexPath) {
  if (shard.empty() || shard.find('/') != std::string::npos ||
      shard.find('\\') != std::string::npos || shard == "." || shard == "..") {
    throw ModelError(indexPath, "shard name '" + shard + "' is not a plain file name");
  }
}

std::map<std::string, Located> indexSharded(const std::string& indexPath, const fs::path& dir,
                                            Files& files) {
  const json doc = readJsonFile(indexPath);
  if (!doc.is_object() || !doc.contains("weight_map") || !doc.at("weight_map").is_object()) {
    throw ModelError(indexPath, "field 'weight_map' (tensor name → shard file) is missing");
  }
  std::map<std::string, Located> index;
  for (const auto& [name, shardJson] : doc.at("weight_map").items()) {
    if (!shardJson.is_string()) {
      throw ModelError(indexPath, "weight_map['" + name + "'] must be a file name");
    }
    const std::string shard = shardJson.get<std::string>();
    checkShardName(shard, indexPath);
    const fs::path shardFile = dir / common::pathFromUtf8(shard);
    const std::string shardPath = common::pathText(shardFile);
    auto& file = files[shardPath];
    if (!file) {
      if (!fs::exists(shardFile)) {
        throw ModelError(indexPath, "lists shard '" + shard + "' (for tensor '" + name +
                                        "'), but " + shardPath + " does not exist");
      }
      file = std::make_shared<const SafetensorsFile>(shardPath);
    }
    const SafetensorsEntry* entry = file->find(name);
    if (entry == nullptr) {
      throw ModelError(shardPath, "tensor '" + name + "' is missing, though " + indexPath +
                                      " places it in this file");
    }
    index[name] = {file.get(), entry};
  }
  return index;
}

// Gemma's RMSNorm multiplies by (1 + weight), computed in f32 (transformers' Gemma2RMSNorm /
// Gemma3RMSNorm): the loader keeps 1 + weight as an owned f32 tensor, so the graph's RMSNorm
// needs no second form.
compute::Tensor plusOne(const compute::Tensor& stored) {
  const auto n = static_cast<std::size_t>(stored.numel());
  const std::shared_ptr<float[]> values = std::make_shared<float[]>(n);
  compute::widenToFloat(stored.data(), stored.dtype(), 0, stored.numel(), values.get());
  for (std::size_t i = 0; i < n; ++i) {
    values[i] += 1.0f;
  }
  return compute::Tensor(std::shared_ptr<void>(values, values.get()), compute::DType::F32,
                         stored.shape(), compute::Device::Cpu);
}

std::map<std::string, Located> indexSingle(const std::string& path, Files& files) {
  auto& file = files[path];
  file = std::make_shared<const SafetensorsFile>(path);
  std::map<std::string, Located> index;
  for (const auto& [name, entry] : file->header().tensors) {
    index[name] = {file.get(), &entry};
  }
  return index;
}

}  // namespace

ModelFolder ModelFolder::open(const std::string& spec) {
  ModelFolder m;
  const ResolvedModel resolved = resolveModel(spec);  // a folder, or an id from the hub cache
  // Paths are UTF-8 text here (pathText/pathFromUtf8: no code page on Windows).
  const std::string dir = common::pathText(resolved.dir);
  m.dir_ = dir;
  m.modelId_ = resolved.modelId;
  const fs::path& root = resolved.dir;
  m.config_ = loadModelConfig(common::pathText(root / "config.json"));

  const std::string single = common::pathText(root / "model.safetensors");
  const std::string indexPath = common::pathText(root / "model.safetensors.index.json");
  std::map<std::string, Located> index;
  std::string weightsSource;
  if (fs::exists(root / "model.safetensors.index.json")) {
    index = indexSharded(indexPath, root, m.files_);
    weightsSource = indexPath;
  } else if (fs::exists(root / "model.safetensors")) {
    index = indexSingle(single, m.files_);
    weightsSource = single;
  } else {
    throw ModelError(dir,
                     "has neither model.safetensors nor model.safetensors.index.json "
                     "(only safetensors weights are loaded; pickled .bin files never are)");
  }

  // Layers the weights hold beyond config.json's num_hidden_layers would be ignored: say so.
  constexpr std::string_view kLayerPrefix = "model.layers.";
  for (const auto& [name, located] : index) {
    if (name.rfind(kLayerPrefix, 0) != 0)
      continue;
    const std::size_t dot = name.find('.', kLayerPrefix.size());
    const std::string digits = name.substr(kLayerPrefix.size(), dot - kLayerPrefix.size());
    if (!digits.empty() && digits.size() < 10 &&
        digits.find_first_not_of("0123456789") == std::string::npos &&
        std::stoll(digits) >= m.config_.numLayers) {
      throw ModelError(located.file->path(),
                       "holds tensor '" + name + "' of layer " + digits + ", but config.json has " +
                           std::to_string(m.config_.numLayers) +
                           " layers (num_hidden_layers); the extra layers would be ignored. Fix "
                           "num_hidden_layers or use the config that came with these weights");
    }
  }

  std::map<std::string, compute::Tensor> loaded;
  for (const ExpectedTensor& expected : expectedTensors(m.config_)) {
    const auto it = index.find(expected.name);
    if (it == index.end()) {
      throw ModelError(weightsSource, "tensor '" + expected.name + "' (shape " +
                                          compute::shapeToString(expected.shape) + ") is missing");
    }
    const auto [file, entry] = it->second;
    if (entry->shape != expected.shape) {
      throw ModelError(file->path(), "tensor '" + expected.name + "' has shape " +
                                         compute::shapeToString(entry->shape) + ", expected " +
                                         compute::shapeToString(expected.shape) + " (" +
                                         describeShapeSource(m.config_) + ")");
    }
    loaded[expected.name] = file->tensor(*entry);
    m.tensors_.push_back({expected.name, entry->dtype, entry->shape, file->path()});
  }

  const auto take = [&](const std::string& name) { return loaded.at(name); };
  const auto takeIf = [&](bool present, const std::string& name) {
    return present ? loaded.at(name) : compute::Tensor();
  };
  const ModelConfig& c = m.config_;
  const auto norm = [&](bool present, const std::string& name) {
    return !present ? compute::Tensor() : c.normWeightPlusOne ? plusOne(take(name)) : take(name);
  };
  m.weights_.embed = take("model.embed_tokens.weight");
  for (std::int64_t i = 0; i < c.numLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    LayerWeights l;
    l.inputNorm = norm(true, p + "input_layernorm.weight");
    l.postNorm = norm(true, p + "post_attention_layernorm.weight");
    l.qNorm = norm(c.qkNorm, p + "self_attn.q_norm.weight");
    l.kNorm = norm(c.qkNorm, p + "self_attn.k_norm.weight");
    l.preMlpNorm = norm(c.sandwichNorms, p + "pre_feedforward_layernorm.weight");
    l.postMlpNorm = norm(c.sandwichNorms, p + "post_feedforward_layernorm.weight");
    for (const ProjectionSlots& slot : kProjectionSlots) {
      l.*slot.weight = take(projectionTensorName(i, slot.projection, "weight"));
      l.*slot.bias = takeIf(c.*slot.hasBias, projectionTensorName(i, slot.projection, "bias"));
    }
    m.weights_.layers.push_back(std::move(l));
  }
  m.weights_.finalNorm = norm(true, "model.norm.weight");
  m.weights_.lmHead = c.tieWordEmbeddings ? m.weights_.embed : take("lm_head.weight");
  return m;
}

std::vector<std::string> ModelFolder::files() const {
  std::vector<std::string> out;
  for (const auto& entry : files_) {
    out.push_back(entry.first);
  }
  return out;
}

std::uint64_t ModelFolder::weightBytes() const {
  std::uint64_t bytes = 0;
  for (const StoredTensor& t : tensors_) {
    bytes += static_cast<std::uint64_t>(compute::numelOf(t.shape)) * compute::dtypeBytes(t.dtype);
  }
  return bytes;
}

std::vector<NonFiniteTensor> ModelFolder::findNonFiniteWeights() const {
  std::vector<NonFiniteTensor> found;
  for (const StoredTensor& t : tensors_) {
    const SafetensorsFile& file = *files_.at(t.file);
    const compute::Tensor tensor = file.tensor(*file.find(t.name));
    const std::int64_t n = tensor.numel();
    NonFiniteTensor bad{t.name, t.file, 0, -1};
    // By the bits: an exponent of all ones is NaN or ±inf in every IEEE format.
    const auto note = [&](std::int64_t i, bool nonFinite) {
      if (nonFinite && bad.count++ == 0)
        bad.firstIndex = i;
    };
    if (t.dtype == compute::DType::F32) {
      const auto* v = static_cast<const std::uint32_t*>(tensor.data());
      for (std::int64_t i = 0; i < n; ++i)
        note(i, (v[i] & 0x7F800000u) == 0x7F800000u);
    } else {
      const std::uint16_t mask = t.dtype == compute::DType::F16 ? 0x7C00 : 0x7F80;
      const auto* v = static_cast<const std::uint16_t*>(tensor.data());
      for (std::int64_t i = 0; i < n; ++i)
        note(i, (v[i] & mask) == mask);
    }
    if (bad.count > 0)
      found.push_back(std::move(bad));
  }
  return found;
}

}  // namespace lorascope::model

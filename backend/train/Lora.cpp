// train/Lora.cpp — LoRA target parsing, initialisation and naming.
#include "train/Lora.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "train/RandomDraws.h"

namespace lorascope::train {

const char* shortName(LoraModule module) {
  return model::namesOf(module).shortName;
}
const char* moduleName(LoraModule module) {
  return model::namesOf(module).name;
}
const char* modulePath(LoraModule module) {
  return model::namesOf(module).path;
}

LoraModule parseLoraModule(const std::string& word) {
  for (const model::ProjectionNames& n : model::kProjectionNames) {
    if (word == n.shortName || word == n.name || word == n.path) {
      return n.projection;
    }
  }
  throw std::invalid_argument("unknown LoRA target '" + word +
                              "' (use q, k, v, o, gate, up, down or their *_proj names)");
}

std::set<LoraModule> parseLoraTargets(const std::string& list) {
  if (list.empty() || list == "all") {
    return {std::begin(kAllLoraModules), std::end(kAllLoraModules)};
  }
  std::set<LoraModule> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    if (comma > start) {
      out.insert(parseLoraModule(list.substr(start, comma - start)));
    }
    start = comma + 1;
  }
  if (out.empty()) {
    throw std::invalid_argument("no LoRA targets in '" + list + "'");
  }
  return out;
}

double LoraConfig::scale() const {
  return useRslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / rank;
}

void LoraConfig::validate() const {
  if (rank < 1 || rank > kMaxLoraRank) {
    throw std::invalid_argument("lora rank must be 1.." + std::to_string(kMaxLoraRank) + ", got " +
                                std::to_string(rank));
  }
  if (!(alpha > 0)) {
    throw std::invalid_argument("lora alpha must be > 0");
  }
  if (!(dropout >= 0 && dropout < 1)) {
    throw std::invalid_argument("lora dropout must be in [0, 1)");
  }
  if (targets.empty()) {
    throw std::invalid_argument("lora targets are empty");
  }
}

std::int64_t LoraAdapter::parameterCount() const {
  std::int64_t n = 0;
  for (const LoraWeights& w : weights) {
    n += static_cast<std::int64_t>(w.a.size() + w.b.size());
  }
  return n;
}

const LoraWeights* LoraAdapter::find(int layer, LoraModule module) const {
  for (const LoraWeights& w : weights) {
    if (w.site.layer == layer && w.site.module == module) {
      return &w;
    }
  }
  return nullptr;
}

LoraAdapter createLoraAdapter(const LoraConfig& config, const std::vector<LoraSite>& sites,
                              std::uint64_t seed) {
  config.validate();
  LoraAdapter adapter{config, {}};
  for (const LoraSite& site : sites) {
    if (!config.targets.count(site.module) ||
        (config.layers && !config.layers->count(site.layer))) {
      continue;
    }
    LoraWeights w{
        site, std::vector<float>(static_cast<std::size_t>(config.rank * site.inFeatures)),
        std::vector<float>(static_cast<std::size_t>(site.outFeatures * config.rank), 0.0f)};
    const double bound = 1.0 / std::sqrt(static_cast<double>(site.inFeatures));
    const std::uint64_t stream =
        static_cast<std::uint64_t>(site.layer) * 16 + static_cast<std::uint64_t>(site.module);
    for (std::size_t i = 0; i < w.a.size(); ++i) {
      w.a[i] = static_cast<float>((2.0 * uniformFloat(seed, stream, i) - 1.0) * bound);
    }
    adapter.weights.push_back(std::move(w));
  }
  return adapter;
}

std::string peftKey(const LoraSite& site, bool isA) {
  return "base_model.model.model.layers." + std::to_string(site.layer) + "." +
         modulePath(site.module) + (isA ? ".lora_A.weight" : ".lora_B.weight");
}

void requireFiniteAdapter(const LoraAdapter& adapter, const std::string& what) {
  for (const LoraWeights& w : adapter.weights) {
    for (const bool isA : {true, false}) {
      const std::vector<float>& values = isA ? w.a : w.b;
      const auto bad =
          std::find_if(values.begin(), values.end(), [](float v) { return !std::isfinite(v); });
      if (bad != values.end()) {
        throw std::invalid_argument(
            what + ": " + peftKey(w.site, isA) + " element " +
            std::to_string(bad - values.begin()) + " is " + std::to_string(*bad) +
            " (not finite); a NaN or infinite adapter is not exported. Export an earlier "
            "checkpoint with --checkpoint N");
      }
    }
  }
}

}  // namespace lorascope::train

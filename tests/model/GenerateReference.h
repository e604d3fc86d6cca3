// GenerateReference.h — the greedy-generate references of scripts/reference/generate.py
// (tests/model/data/<case>/generate.json, transformers' fp32 CPU generate) and the one greedy
// loop both generate tests run over model/KvCache's decoder. Qt-free: the GPU test uses it too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/KvCache.h"

namespace lorascope::test {

struct GenerateCase {
  std::string name;
  std::filesystem::path dir;
  std::vector<std::int32_t> prompt;
  std::vector<std::int32_t> ids;   // transformers' new tokens
  std::vector<double> margins;     // top-1 minus top-2 logit at each step
  std::vector<float> firstLogits;  // the first step's (vocab) logits
  std::string adapter;             // adapter folder name inside dir, "" when none
  std::vector<std::int32_t> adapterIds;
  std::vector<double> adapterMargins;
};

// Every case folder of `dataDir` that has a generate.json, by name.
inline std::vector<GenerateCase> loadGenerateCases(const std::filesystem::path& dataDir) {
  std::vector<GenerateCase> cases;
  for (const auto& entry : std::filesystem::directory_iterator(dataDir)) {
    const std::filesystem::path file = entry.path() / "generate.json";
    if (!std::filesystem::exists(file))
      continue;
    std::ifstream in(file);
    const nlohmann::json j = nlohmann::json::parse(in);
    GenerateCase c;
    c.name = entry.path().filename().string();
    c.dir = entry.path();
    c.prompt = j.at("prompt_ids").get<std::vector<std::int32_t>>();
    c.ids = j.at("ids").get<std::vector<std::int32_t>>();
    c.margins = j.at("top2_margins").get<std::vector<double>>();
    c.firstLogits = j.at("first_logits").get<std::vector<float>>();
    if (j.contains("adapter")) {
      c.adapter = j.at("adapter").get<std::string>();
      c.adapterIds = j.at("adapter_ids").get<std::vector<std::int32_t>>();
      c.adapterMargins = j.at("adapter_top2_margins").get<std::vector<double>>();
    }
    cases.push_back(std::move(c));
  }
  std::sort(cases.begin(), cases.end(),
            [](const GenerateCase& a, const GenerateCase& b) { return a.name < b.name; });
  return cases;
}

// Greedy ids from `decoder` after `prompt`: `count` tokens, the argmax of each step (the first of
// equal maxima), stopping after an id in `eos`. `firstLogits` receives the first step's logits.
inline std::vector<std::int32_t> greedyIds(model::CachedDecoder& decoder,
                                           const std::vector<std::int32_t>& prompt,
                                           std::size_t count, const std::vector<std::int32_t>& eos,
                                           std::vector<float>* firstLogits = nullptr) {
  std::vector<float> logits = decoder.feed(prompt);
  if (firstLogits != nullptr)
    *firstLogits = logits;
  std::vector<std::int32_t> out;
  while (out.size() < count) {
    const auto id =
        static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    out.push_back(id);
    if (std::find(eos.begin(), eos.end(), id) != eos.end() || out.size() == count)
      break;
    logits = decoder.feed(std::vector<std::int32_t>{id});
  }
  return out;
}

// The first step at which `got` departs from `want` where the reference's margin says the step
// is decided (margin ≥ minMargin), or −1 when none does. After a tolerated departure (a near tie)
// the rest is a different continuation and is not compared.
inline int firstDecidedMismatch(const std::vector<std::int32_t>& got,
                                const std::vector<std::int32_t>& want,
                                const std::vector<double>& margins, double minMargin) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (i >= got.size() || got[i] != want[i]) {
      return i < margins.size() && margins[i] >= minMargin ? static_cast<int>(i) : -1;
    }
  }
  return got.size() == want.size() ? -1 : static_cast<int>(want.size());
}

}  // namespace lorascope::test

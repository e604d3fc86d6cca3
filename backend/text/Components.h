// Components.h — the steps of a tokenizer.json pipeline, built from their JSON objects:
// normalizers, pre-tokenizers, decoders and post-processors. Each factory throws TextError
// naming the source file and the component for anything it does not support.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/TextError.h"

namespace lorascope::text {

using Json = nlohmann::json;

// A stretch of text on its way to the model. `atStart` marks the piece that begins at offset 0
// of the input (Metaspace's prepend_scheme "first" prepends only there).
struct Piece {
  std::string text;
  bool atStart = false;
};

using NormalizeFn = std::function<void(std::string& text)>;
using PreTokenizeFn = std::function<void(std::vector<Piece>& pieces)>;
using DecodeFn = std::function<void(std::vector<std::string>& tokens)>;
// Adds the post-processor's special tokens around the ids of one sequence.
using PostProcessFn = std::function<void(std::vector<std::int32_t>& ids)>;

// Each returns an empty function for a JSON null (no such step). `describe` gets a short name.
// `depth` counts nested Sequences; more than kMaxSequenceDepth is rejected (no real file nests
// more than two, and a hostile file must not exhaust the stack).
constexpr int kMaxSequenceDepth = 16;
NormalizeFn makeNormalizer(const Json& spec, const std::string& source, std::string& describe,
                           int depth = 0);
PreTokenizeFn makePreTokenizer(const Json& spec, const std::string& source, std::string& describe,
                               int depth = 0);
DecodeFn makeDecoder(const Json& spec, const std::string& source, std::string& describe,
                     int depth = 0);
PostProcessFn makePostProcessor(const Json& spec, const std::string& source, std::string& describe,
                                int depth = 0);
// TextError when `depth` exceeds kMaxSequenceDepth.
void checkSequenceDepth(int depth, const std::string& where);

// A Replace step (normalizer or decoder): spec {pattern: {String|Regex}, content}.
std::function<void(std::string&)> makeReplace(const Json& spec, const std::string& where);

// JSON access with errors that name the file and the field.
const Json& requireField(const Json& object, const char* key, const std::string& where);
std::string stringField(const Json& object, const char* key, const std::string& where);
bool boolField(const Json& object, const char* key, bool fallback, const std::string& where);

// The steps of a Sequence component: make(stepSpec, name) for each entry of spec[key], null
// steps left out; `describe` becomes "Sequence[a,b]".
template <typename Fn, typename Make>
std::vector<Fn> sequenceSteps(const Json& spec, const char* key, const std::string& where,
                              std::string& describe, Make make) {
  const Json& steps = requireField(spec, key, where);
  if (!steps.is_array()) {
    throw TextError(where + ": '" + key + "' must be an array");
  }
  std::vector<Fn> fns;
  std::string names;
  for (const Json& step : steps) {
    std::string name;
    Fn fn = make(step, name);
    names += (names.empty() ? "" : ",") + name;
    if (fn) {
      fns.push_back(std::move(fn));
    }
  }
  describe = "Sequence[" + names + "]";
  return fns;
}

}  // namespace lorascope::text

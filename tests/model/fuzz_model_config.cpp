// fuzz_model_config.cpp — libFuzzer target: any byte string as config.json. The parser must
// accept it or throw ModelError (UnsupportedModelError included), and an accepted config must
// give finite rope frequencies of head_dim/2 entries.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/ModelConfig.h"
#include "model/ModelError.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto config = lorascope::model::parseModelConfigText(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz/config.json");
    if (config.headDim <= 4096) {  // keep each run fast; larger dims are legal but slow
      const auto inv = lorascope::model::ropeInverseFrequencies(config);
      if (inv.size() != static_cast<std::size_t>(config.headDim / 2)) {
        __builtin_trap();
      }
    }
  } catch (const lorascope::model::ModelError&) {
  }
  return 0;
}

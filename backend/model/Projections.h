// model/Projections.h — the seven projections of a Llama/Qwen2/Mistral decoder layer and every
// name they go by, in one table: the short name of the CLI's --targets ("q"), the module name of
// PEFT's target_modules ("q_proj"), and the path inside a layer of the checkpoint's tensor names
// ("self_attn.q_proj"). The weights loader, the expected-tensor layout, the demo model, LoRA's
// targets and the CLI's reports all read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace lorascope::model {

// In PEFT's target order (the order adapters and their tensors are listed in).
enum class Projection { Q, K, V, O, Gate, Up, Down };

struct ProjectionNames {
  Projection projection;
  const char* shortName;  // "q"
  const char* name;       // "q_proj"
  const char* path;       // "self_attn.q_proj"
};

inline constexpr ProjectionNames kProjectionNames[] = {
    {Projection::Q, "q", "q_proj", "self_attn.q_proj"},
    {Projection::K, "k", "k_proj", "self_attn.k_proj"},
    {Projection::V, "v", "v_proj", "self_attn.v_proj"},
    {Projection::O, "o", "o_proj", "self_attn.o_proj"},
    {Projection::Gate, "gate", "gate_proj", "mlp.gate_proj"},
    {Projection::Up, "up", "up_proj", "mlp.up_proj"},
    {Projection::Down, "down", "down_proj", "mlp.down_proj"},
};
inline constexpr std::size_t kProjectionCount = std::size(kProjectionNames);

inline constexpr Projection kAllProjections[] = {Projection::Q,   Projection::K,    Projection::V,
                                                 Projection::O,   Projection::Gate, Projection::Up,
                                                 Projection::Down};

// The projections that read one input, in the order a layer's forward pass runs them: q, k and
// v read h1; o the attention; gate and up h2; down the SwiGLU product. The training graph's LoRA
// groups (Note [LoRA groups] in train/TrainGraph.cpp) and the memory model's.
inline constexpr std::initializer_list<Projection> kInputGroups[] = {
    {Projection::Q, Projection::K, Projection::V},
    {Projection::O},
    {Projection::Gate, Projection::Up},
    {Projection::Down}};

constexpr bool projectionTableIsDense() {
  for (std::size_t i = 0; i < kProjectionCount; ++i) {
    if (static_cast<std::size_t>(kProjectionNames[i].projection) != i ||
        kAllProjections[i] != kProjectionNames[i].projection) {
      return false;
    }
  }
  return std::size(kAllProjections) == kProjectionCount;
}
static_assert(projectionTableIsDense(), "kProjectionNames lists every Projection in order");

constexpr const ProjectionNames& namesOf(Projection projection) {
  return kProjectionNames[static_cast<std::size_t>(projection)];
}

// "model.layers.<layer>.self_attn.q_proj.<suffix>", the checkpoint's name of a projection tensor
// (suffix "weight" or "bias").
inline std::string projectionTensorName(std::int64_t layer, Projection projection,
                                        std::string_view suffix) {
  return "model.layers." + std::to_string(layer) + "." + namesOf(projection).path + "." +
         std::string(suffix);
}

}  // namespace lorascope::model

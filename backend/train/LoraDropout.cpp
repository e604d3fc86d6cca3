// train/LoraDropout.cpp — dropout masks from Philox streams keyed by (step, micro-batch, layer,
// module).
#include "train/LoraDropout.h"

#include "train/Philox.h"  // defines: philox4x32 (the words behind uniformFloat)

namespace lorascope::train {

std::uint64_t dropoutStream(const DropoutKey& key, int layer, LoraModule module) {
  constexpr std::uint64_t kDropoutTag = std::uint64_t{1} << 63;
  return kDropoutTag | ((static_cast<std::uint64_t>(key.step) & 0x7FFFFFFFu) << 32) |
         ((static_cast<std::uint64_t>(key.microBatch) & 0xFFFu) << 20) |
         ((static_cast<std::uint64_t>(layer) & 0xFFFFu) << 4) |
         (static_cast<std::uint64_t>(module) & 0xFu);
}

std::vector<float> dropoutMask(const DropoutKey& key, int layer, LoraModule module, double p,
                               std::int64_t count) {
  const std::uint64_t stream = dropoutStream(key, layer, module);
  const auto keep = static_cast<float>(1.0 / (1.0 - p));
  const auto threshold = static_cast<float>(p);
  std::vector<float> mask(static_cast<std::size_t>(count));
  // Element i is uniformFloat(seed, stream, i): word i mod 4 of Philox block i / 4, 24 bits.
  for (std::size_t block = 0; block * 4 < mask.size(); ++block) {
    const auto words = philox4x32(key.seed, stream, block);
    for (std::size_t lane = 0; lane < 4 && block * 4 + lane < mask.size(); ++lane) {
      const float u = static_cast<float>(words[lane] >> 8) * (1.0f / 16777216.0f);
      mask[block * 4 + lane] = u < threshold ? 0.0f : keep;
    }
  }
  return mask;
}

}  // namespace lorascope::train

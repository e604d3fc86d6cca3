// train/LoraDropout.cpp — dropout masks from Philox streams keyed by (step, micro-batch, layer,
// module).
#include "train/LoraDropout.h"

#include "compute/HostOptimizer.h"  // defines: host::dropoutMask (Backend::dropoutMask's CPU twin)

namespace lorascope::train {

std::uint32_t dropoutStreamHigh(std::int64_t step) {
  constexpr std::uint32_t kDropoutTag = std::uint32_t{1} << 31;
  return kDropoutTag | (static_cast<std::uint32_t>(step) & 0x7FFFFFFFu);
}

std::uint32_t dropoutStreamLow(const DropoutKey& key, int layer, LoraModule module) {
  return ((static_cast<std::uint32_t>(key.microBatch) & 0xFFFu) << 20) |
         ((static_cast<std::uint32_t>(layer) & 0xFFFFu) << 4) |
         (static_cast<std::uint32_t>(module) & 0xFu);
}

std::uint64_t dropoutStream(const DropoutKey& key, int layer, LoraModule module) {
  return (static_cast<std::uint64_t>(dropoutStreamHigh(key.step)) << 32) |
         dropoutStreamLow(key, layer, module);
}

std::vector<float> dropoutMask(const DropoutKey& key, int layer, LoraModule module, double p,
                               std::int64_t count) {
  std::vector<float> mask(static_cast<std::size_t>(count));
  compute::host::dropoutMask(mask.data(), count, key.seed, dropoutStream(key, layer, module), p);
  return mask;
}

}  // namespace lorascope::train

// train/LoraDropout.cpp — dropout masks from Philox streams keyed by (step, micro-batch, layer,
// module).
#include "train/LoraDropout.h"

#include "compute/HostOptimizer.h"  // defines: host::dropoutMask (Backend::dropoutMask's CPU twin)

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
  std::vector<float> mask(static_cast<std::size_t>(count));
  compute::host::dropoutMask(mask.data(), count, key.seed, dropoutStream(key, layer, module), p);
  return mask;
}

}  // namespace lorascope::train

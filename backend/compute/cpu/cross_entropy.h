// cpu/cross_entropy.h — softmax cross-entropy per row over logits (fp32).
#pragma once

#include <cstdint>
#include <span>

namespace lorascope::compute::cpu {

// logits (rows, vocab), targets (rows; kIgnoreTarget = skip) -> losses (rows), logsumexp (rows).
// Throws ShapeError naming the row and the target when a target is outside [0, vocab).
void crossEntropyForward(const float* logits, std::int64_t vocab,
                         std::span<const std::int32_t> targets, float* losses, float* logsumexp);

}  // namespace lorascope::compute::cpu

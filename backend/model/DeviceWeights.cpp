// model/DeviceWeights.cpp — copying frozen weights to a backend, tensor by tensor.
#include "model/DeviceWeights.h"

#include <cstddef>
#include <span>
#include <vector>

#include "compute/Convert.h"         // defines: widenToFloat
#include "memory/DeviceAllocator.h"  // defines: OwnerScope

namespace lorascope::model {
namespace {

using compute::DType;
using compute::Tensor;

// Every tensor field of the weights, in graph order; lm_head last so that a tied one can take
// the embedding's placed tensor.
template <typename Weights, typename Visit>
void forEachTensor(Weights& w, Visit&& visit) {
  visit(w.embed);
  for (auto& l : w.layers) {
    for (auto* t : {&l.inputNorm, &l.q, &l.k, &l.v, &l.qBias, &l.kBias, &l.vBias, &l.o, &l.oBias,
                    &l.postNorm, &l.gate, &l.up, &l.down, &l.gateBias, &l.upBias, &l.downBias}) {
      visit(*t);
    }
  }
  visit(w.finalNorm);
  visit(w.lmHead);
}

Tensor placeOne(compute::Backend& backend, const Tensor& t) {
  if (t.dtype() == DType::BF16) {
    return backend.uploadRaw(std::span(static_cast<const std::byte*>(t.data()), t.bytes()),
                             DType::BF16, t.shape());
  }
  if (t.dtype() == DType::F32) {
    return backend.upload(std::span(t.as<float>(), static_cast<std::size_t>(t.numel())),
                          DType::BF16, t.shape());
  }
  std::vector<float> widened(static_cast<std::size_t>(t.numel()));
  compute::widenToFloat(t.data(), t.dtype(), 0, t.numel(), widened.data());
  return backend.upload(widened, DType::BF16, t.shape());
}

}  // namespace

ModelWeights placeWeights(compute::Backend& backend, const ModelWeights& weights,
                          const PlaceProgress& progress) {
  const compute::Device device = backend.capabilities().device;
  const bool tied = weights.lmHead.defined() && weights.lmHead.data() == weights.embed.data();
  std::uint64_t totalBytes = 0;
  forEachTensor(weights, [&](const Tensor& t) {
    if (t.defined() && t.device() != device && !(tied && &t == &weights.lmHead)) {
      totalBytes += t.bytes();
    }
  });

  const memory::OwnerScope owner(memory::Owner::Weights);
  ModelWeights placed = weights;
  std::uint64_t doneBytes = 0;
  forEachTensor(placed, [&](Tensor& t) {
    if (!t.defined() || t.device() == device) {
      return;
    }
    if (tied && &t == &placed.lmHead) {
      t = placed.embed;
      return;
    }
    doneBytes += t.bytes();
    t = placeOne(backend, t);
    if (progress) {
      progress(doneBytes, totalBytes);
    }
  });
  return placed;
}

ModelWeights roundedAsOnGpu(compute::Backend& cpu, const ModelWeights& weights) {
  const bool tied = weights.lmHead.defined() && weights.lmHead.data() == weights.embed.data();
  ModelWeights rounded = weights;
  forEachTensor(rounded, [&](Tensor& t) {
    if (!t.defined() || t.dtype() == DType::BF16) {
      return;
    }
    t = tied && &t == &rounded.lmHead ? rounded.embed : placeOne(cpu, t);
  });
  return rounded;
}

}  // namespace lorascope::model

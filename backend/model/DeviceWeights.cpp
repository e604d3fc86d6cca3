// model/DeviceWeights.cpp — copying frozen weights to a backend, tensor by tensor.
#include "model/DeviceWeights.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "compute/Bf16.h"            // defines: floatToBf16
#include "compute/Convert.h"         // defines: widenToFloat
#include "compute/Nf4.h"             // defines: nf4::quantize, nf4::storageBytes
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
    for (auto* t :
         {&l.inputNorm, &l.q,     &l.k,     &l.v,        &l.qBias,    &l.kBias,      &l.vBias,
          &l.o,         &l.oBias, &l.qNorm, &l.kNorm,    &l.postNorm, &l.preMlpNorm, &l.postMlpNorm,
          &l.gate,      &l.up,    &l.down,  &l.gateBias, &l.upBias,   &l.downBias}) {
      visit(*t);
    }
  }
  visit(w.finalNorm);
  visit(w.lmHead);
}

bool isProjection(const LayerWeights& l, const Tensor& t) {
  for (const Tensor* p : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) {
    if (&t == p) {
      return true;
    }
  }
  return false;
}

Tensor placeQuantized(compute::Backend& backend, const Tensor& t) {
  std::vector<std::byte> packed(compute::nf4::storageBytes(t.numel()));
  compute::nf4::quantize(t.data(), t.dtype(), t.numel(), packed.data());
  return backend.uploadRaw(packed, DType::NF4, t.shape());
}

Tensor placeOne(compute::Backend& backend, const Tensor& t) {
  if (t.dtype() == DType::BF16) {
    return backend.uploadRaw(std::span(static_cast<const std::byte*>(t.data()), t.bytes()),
                             DType::BF16, t.shape());
  }
  if (t.dtype() == DType::F32) {
    // Vectors (norm weights, biases) stay f32: they are tiny, and Gemma's 1 + weight would lose
    // its low bits in bf16. Matrices go to bf16 like the activations.
    return backend.upload(std::span(t.as<float>(), static_cast<std::size_t>(t.numel())),
                          t.rank() == 1 ? DType::F32 : DType::BF16, t.shape());
  }
  std::vector<float> widened(static_cast<std::size_t>(t.numel()));
  compute::widenToFloat(t.data(), t.dtype(), 0, t.numel(), widened.data());
  return backend.upload(widened, DType::BF16, t.shape());
}

}  // namespace

ModelWeights placeWeights(compute::Backend& backend, const ModelWeights& weights,
                          const PlaceProgress& progress, WeightQuantization quantization,
                          LoraFold fold) {
  const compute::Device device = backend.capabilities().device;
  const bool tied = weights.lmHead.defined() && weights.lmHead.data() == weights.embed.data();
  std::uint64_t totalBytes = 0;
  const bool quantize = quantization == WeightQuantization::Nf4;
  const auto quantized = [&](const ModelWeights& w, const Tensor& t) {
    return quantize && std::any_of(w.layers.begin(), w.layers.end(),
                                   [&](const LayerWeights& l) { return isProjection(l, t); });
  };
  forEachTensor(weights, [&](const Tensor& t) {
    if (t.defined() && (t.device() != device || quantized(weights, t)) &&
        !(tied && &t == &weights.lmHead)) {
      totalBytes += t.bytes();
    }
  });

  const memory::OwnerScope owner(memory::Owner::Weights);
  ModelWeights placed = weights;
  std::uint64_t doneBytes = 0;
  if (device == compute::Device::Gpu && !quantize) {
    // The parts into the rows of one bf16 tensor, each becoming a view of it (undefined, the parts
    // as they were, unless all are 2-D host tensors of one width). With `reserve` (LoraFold) the
    // tensor has that many more zero rows and columns: `folded` is all of it, the parts and the
    // stack column views of its top left.
    const auto stack = [&](std::span<Tensor* const> parts, std::int64_t reserve, Tensor& folded) {
      if (std::any_of(parts.begin(), parts.end(), [&](const Tensor* t) {
            return !t->defined() || t->device() == device || t->rank() != 2 ||
                   t->dim(1) != parts.front()->dim(1);
          })) {
        return Tensor();
      }
      const std::int64_t width = parts.front()->dim(1);
      std::int64_t rows = 0;
      for (const Tensor* t : parts) {
        rows += t->dim(0);
      }
      Tensor stacked;
      if (keepsFoldReserve(reserve)) {
        // Row by row into a zeroed host matrix, widened and rounded like the upload below.
        const std::int64_t wide = width + reserve;
        std::vector<std::uint16_t> host(static_cast<std::size_t>((rows + reserve) * wide), 0);
        std::vector<float> row(static_cast<std::size_t>(width));
        std::int64_t r = 0;
        for (const Tensor* t : parts) {
          for (std::int64_t i = 0; i < t->dim(0); ++i, ++r) {
            std::uint16_t* into = host.data() + r * wide;
            if (t->dtype() == DType::BF16) {
              std::copy_n(t->as<std::uint16_t>() + i * width, width, into);
            } else {
              compute::widenToFloat(t->data(), t->dtype(), i * width, width, row.data());
              std::transform(row.begin(), row.end(), into, compute::floatToBf16);
            }
          }
        }
        folded = backend.empty(DType::BF16, {rows + reserve, wide});
        backend.copyIn(std::as_bytes(std::span(host)), folded);
        stacked = folded.rows(0, rows).columns(0, width);
      } else if (std::all_of(parts.begin(), parts.end(),
                             [](const Tensor* t) { return t->dtype() == DType::BF16; })) {
        stacked = backend.empty(DType::BF16, {rows, width});
        std::int64_t first = 0;
        for (const Tensor* t : parts) {
          Tensor into = stacked.rows(first, t->dim(0));
          backend.copyIn(std::span(static_cast<const std::byte*>(t->data()), t->bytes()), into);
          first += t->dim(0);
        }
      } else {  // widened side by side on the host, rounded to bf16 by the upload (as placeOne)
        std::vector<float> widened(static_cast<std::size_t>(rows * width));
        std::int64_t offset = 0;
        for (const Tensor* t : parts) {
          compute::widenToFloat(t->data(), t->dtype(), 0, t->numel(), widened.data() + offset);
          offset += t->numel();
        }
        stacked = backend.upload(widened, DType::BF16, {rows, width});
      }
      std::int64_t first = 0;
      for (Tensor* t : parts) {
        doneBytes += t->bytes();
        const std::int64_t count = t->dim(0);
        *t = stacked.rows(first, count);
        first += count;
      }
      if (progress) {
        progress(doneBytes, totalBytes);
      }
      return stacked;
    };
    // Note [stacked q/k/v] and Note [stacked gate/up] (train/TrainGraph.cpp): a layer's q, k and v
    // (LayerWeights::qkv), and its gate and up (LayerWeights::gateUp).
    for (LayerWeights& l : placed.layers) {
      const std::array<Tensor*, 3> qkv{&l.q, &l.k, &l.v};
      l.qkv = stack(qkv, fold.qkv, l.qkvFolded);
      const std::array<Tensor*, 2> gateUp{&l.gate, &l.up};
      l.gateUp = stack(gateUp, fold.gateUp, l.gateUpFolded);
    }
  }
  forEachTensor(placed, [&](Tensor& t) {
    const bool toQuantize = t.defined() && quantized(placed, t);
    if (!t.defined() || (t.device() == device && !toQuantize)) {
      return;
    }
    if (tied && &t == &placed.lmHead) {
      t = placed.embed;
      return;
    }
    doneBytes += t.bytes();
    t = toQuantize ? placeQuantized(backend, t) : placeOne(backend, t);
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

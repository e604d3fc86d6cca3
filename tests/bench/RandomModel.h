// tests/bench/RandomModel.h — a model of a real model's shape with random bf16 weights, built
// directly on a backend (no files), and random token data: what the benchmark programs train.
// Weights are uniform with std 1/√in (norms 1, biases ±0.02); speed and memory do not depend on
// the values.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <thread>
#include <vector>

#include "compute/Backend.h"
#include "model/DeviceWeights.h"  // defines: LoraFold
#include "model/ModelFolder.h"    // defines: ModelWeights
#include "train/Batching.h"       // defines: TokenizedExample

namespace lorascope::bench {

// splitmix64: a counter-based generator, so chunk k of tensor t has the same values whatever
// thread makes it.
inline std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// bf16 bits of a value, rounding to nearest even (values here are finite).
inline std::uint16_t toBf16(float value) {
  std::uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<std::uint16_t>(bits >> 16);
}

// A (rows, cols) bf16 tensor, uniform on [−bound, bound], generated in 1 Mi-element chunks by
// every core, uploaded as raw bf16.
inline compute::Tensor randomTensor(compute::Backend& backend, std::uint64_t seed,
                                    compute::Shape shape, float bound) {
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::size_t count = 1;
  for (std::int64_t d : shape) {
    count *= static_cast<std::size_t>(d);
  }
  std::vector<std::uint16_t> bits(count);
  const std::size_t chunks = (count + kChunk - 1) / kChunk;
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> workers;
  for (unsigned w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      for (std::size_t c = w; c < chunks; c += threads) {
        std::uint64_t state = mix(seed * 0x100000001b3ULL + c);
        for (std::size_t i = c * kChunk; i < std::min(count, (c + 1) * kChunk); ++i) {
          state = mix(state);
          const float unit = static_cast<float>(state >> 40) * 0x1.0p-24f;  // [0, 1)
          bits[i] = toBf16((2.0f * unit - 1.0f) * bound);
        }
      }
    });
  }
  for (std::thread& t : workers) {
    t.join();
  }
  return backend.uploadRaw(std::as_bytes(std::span(bits)), compute::DType::BF16, shape);
}

// `fold`: on a GPU, q/k/v and gate/up placed with the LoRA rows and columns model::placeWeights
// keeps for a run (LoraFold; Note [the LoRA term in the inner dimension] in train/TrainGraph.cpp).
inline model::ModelWeights randomWeights(compute::Backend& backend, const model::ModelConfig& c,
                                         model::LoraFold fold = {}) {
  std::uint64_t seed = 1;
  const bool gpu = backend.capabilities().device == compute::Device::Gpu;
  // `dense` as the top left of a zeroed matrix `reserve` rows and columns larger (kept in
  // `folded`), or as it is.
  const auto withReserve = [&](const compute::Tensor& dense, std::int64_t reserve,
                               compute::Tensor& folded) {
    if (!gpu || !model::keepsFoldReserve(reserve)) {
      return dense;
    }
    const compute::Shape shape{dense.dim(0) + reserve, dense.dim(1) + reserve};
    const std::vector<std::uint16_t> zeros(static_cast<std::size_t>(compute::numelOf(shape)), 0);
    folded = backend.uploadRaw(std::as_bytes(std::span(zeros)), compute::DType::BF16, shape);
    compute::Tensor into = folded.rows(0, dense.dim(0)).columns(0, dense.dim(1));
    backend.copyMatrices(std::array<compute::MatrixCopy, 1>{{{&dense, &into}}});
    return into;
  };
  // Uniform on ±√3/√in has std 1/√in.
  const auto linear = [&](std::int64_t out, std::int64_t in) {
    return randomTensor(backend, seed++, {out, in}, std::sqrt(3.0f / static_cast<float>(in)));
  };
  const auto bias = [&](std::int64_t n) { return randomTensor(backend, seed++, {n}, 0.02f); };
  const std::vector<std::uint16_t> ones(static_cast<std::size_t>(c.hiddenSize), toBf16(1.0f));
  const auto norm = [&] {
    return backend.uploadRaw(std::as_bytes(std::span(ones)), compute::DType::BF16, {c.hiddenSize});
  };
  model::ModelWeights w;
  w.embed = linear(c.vocabSize, c.hiddenSize);
  w.lmHead = w.embed;  // tied, as in both real models
  w.finalNorm = norm();
  const std::int64_t q = c.numHeads * c.headDim;
  const std::int64_t kv = c.numKvHeads * c.headDim;
  for (std::int64_t l = 0; l < c.numLayers; ++l) {
    model::LayerWeights layer;
    layer.inputNorm = norm();
    layer.postNorm = norm();
    // q, k and v as the rows of one tensor, as model::placeWeights stacks a run's on a GPU
    // (LayerWeights::qkv, Note [stacked q/k/v]).
    const compute::Tensor qkv =
        withReserve(linear(q + 2 * kv, c.hiddenSize), fold.qkv, layer.qkvFolded);
    layer.q = qkv.rows(0, q);
    layer.k = qkv.rows(q, kv);
    layer.v = qkv.rows(q + kv, kv);
    if (gpu) {
      layer.qkv = qkv;
    }
    if (c.qkvBias) {
      layer.qBias = bias(q);
      layer.kBias = bias(kv);
      layer.vBias = bias(kv);
    }
    layer.o = linear(c.hiddenSize, q);
    // gate and up the same way (LayerWeights::gateUp, Note [stacked gate/up]).
    const compute::Tensor gateUp =
        withReserve(linear(2 * c.intermediateSize, c.hiddenSize), fold.gateUp, layer.gateUpFolded);
    layer.gate = gateUp.rows(0, c.intermediateSize);
    layer.up = gateUp.rows(c.intermediateSize, c.intermediateSize);
    if (gpu) {
      layer.gateUp = gateUp;
    }
    layer.down = linear(c.hiddenSize, c.intermediateSize);
    w.layers.push_back(std::move(layer));
  }
  return w;
}

// Random token sequences of exactly `seq` tokens: `count` of them. Every position is a label but
// the first `promptPercent`% of each sequence, which are ignored (−100) as a prompt is when a run
// trains on the responses alone.
inline std::vector<train::TokenizedExample> randomData(const model::ModelConfig& config,
                                                       std::int64_t count, std::int64_t seq,
                                                       int promptPercent = 0) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<std::int32_t> token(
      0, static_cast<std::int32_t>(config.vocabSize - 1));
  std::vector<train::TokenizedExample> data(static_cast<std::size_t>(count));
  for (auto& example : data) {
    example.ids.resize(static_cast<std::size_t>(seq));
    for (std::int32_t& id : example.ids) {
      id = token(rng);
    }
    example.labels = example.ids;
    std::fill_n(example.labels.begin(), seq * promptPercent / 100, compute::kIgnoreTarget);
  }
  return data;
}

}  // namespace lorascope::bench

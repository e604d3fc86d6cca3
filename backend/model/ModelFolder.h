// ModelFolder.h — a Hugging Face model folder opened for LoRA training: config.json plus
// safetensors weights (model.safetensors, or shards listed by model.safetensors.index.json),
// memory-mapped and checked tensor by tensor against the config. Nothing is read but headers.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compute/Tensor.h"
#include "model/ModelConfig.h"
#include "model/Safetensors.h"

namespace lorascope::model {

// Frozen weights of one decoder layer, as stored (bf16/f16/f32), on the CPU (mapped). Gemma's
// norm weights are the exception: the loader holds 1 + weight in f32 (ModelConfig's
// normWeightPlusOne), so that every family's RMSNorm is y = x·rstd·weight.
struct LayerWeights {
  compute::Tensor inputNorm;            // (H)
  compute::Tensor q, k, v;              // (heads·hd, H), (kv·hd, H), (kv·hd, H)
  compute::Tensor qBias, kBias, vBias;  // (heads·hd), (kv·hd), (kv·hd); undefined when absent
  compute::Tensor o;                    // (H, heads·hd)
  compute::Tensor oBias;                // (H); undefined when absent
  compute::Tensor postNorm;             // (H) post_attention_layernorm
  compute::Tensor qNorm, kNorm;         // (hd) q_norm, k_norm (Qwen3, Gemma 3); else undefined
  // (H) Gemma's pre_feedforward_layernorm and post_feedforward_layernorm; else undefined
  compute::Tensor preMlpNorm, postMlpNorm;
  compute::Tensor gate, up;                    // (I, H)
  compute::Tensor down;                        // (H, I)
  compute::Tensor gateBias, upBias, downBias;  // (I), (I), (H); undefined when absent
  // q, k and v in one (heads·hd + 2·kv·hd, H) bf16 tensor whose rows they view: how placeWeights
  // puts them on a GPU unquantised, so that their input gradient is one GEMM (Note [stacked
  // q/k/v] in train/TrainGraph.cpp); else undefined. gate and up the same way, (2·I, H) (Note
  // [stacked gate/up]).
  compute::Tensor qkv;
  compute::Tensor gateUp;
  // With model::placeWeights' LoraFold, qkv and gateUp are the top-left column views of these,
  // R rows and columns larger, kept for the trainer's LoRA weights; else undefined.
  compute::Tensor qkvFolded;
  compute::Tensor gateUpFolded;
};

struct ModelWeights {
  compute::Tensor embed;  // (V, H)
  std::vector<LayerWeights> layers;
  compute::Tensor finalNorm;  // (H)
  compute::Tensor lmHead;     // (V, H); the same storage as embed when tied
};

// One tensor as stored, for reports (inspect-model).
struct StoredTensor {
  std::string name;
  compute::DType dtype = compute::DType::F32;
  compute::Shape shape;
  std::string file;  // the safetensors file holding it
};

// A stored tensor holding NaN or ±inf (ModelFolder::findNonFiniteWeights).
struct NonFiniteTensor {
  std::string name;
  std::string file;
  std::int64_t count = 0;        // elements that are NaN or infinite
  std::int64_t firstIndex = -1;  // the first of them, in storage order
};

class ModelFolder {
 public:
  // Opens `dir`: a folder, or a Hugging Face model id found offline in the hub cache
  // (model/HfCache.h). Throws ModelError naming the file at fault: config.json missing a field, no
  // weights file, a malformed header, a shard the index names but that is absent, a tensor that
  // is missing or whose shape differs from the config's (expected vs found).
  static ModelFolder open(const std::string& dir);

  const std::string& dir() const { return dir_; }  // the folder (an id's snapshot folder)
  const std::optional<std::string>& modelId() const { return modelId_; }  // when opened by id
  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const std::vector<StoredTensor>& tensors() const { return tensors_; }  // graph order
  std::vector<std::string> files() const;  // the safetensors files, in name order
  std::uint64_t weightBytes() const;       // bytes of the tensors the graph uses, as stored
  // Reads every tensor the graph uses in full (as stored: bf16, f16 or f32) and lists those
  // holding NaN or ±inf, which would make every loss NaN. Reads all the weights: seconds per GB.
  std::vector<NonFiniteTensor> findNonFiniteWeights() const;

 private:
  std::string dir_;
  std::optional<std::string> modelId_;
  ModelConfig config_;
  std::map<std::string, std::shared_ptr<const SafetensorsFile>> files_;  // by path
  ModelWeights weights_;
  std::vector<StoredTensor> tensors_;
};

}  // namespace lorascope::model

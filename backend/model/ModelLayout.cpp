// ModelLayout.cpp — expected tensor names and shapes of the Llama/Qwen2/Mistral graph.
#include "model/ModelLayout.h"

#include <tuple>
#include <utility>

namespace lorascope::model {

std::vector<ExpectedTensor> expectedTensors(const ModelConfig& c) {
  const std::int64_t hidden = c.hiddenSize;
  const std::int64_t qDim = c.numHeads * c.headDim;
  const std::int64_t kvDim = c.numKvHeads * c.headDim;
  const std::int64_t inter = c.intermediateSize;
  std::vector<ExpectedTensor> out;
  out.push_back({"model.embed_tokens.weight", {c.vocabSize, hidden}});
  for (std::int64_t i = 0; i < c.numLayers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    out.push_back({p + "input_layernorm.weight", {hidden}});
    for (const auto& [proj, rows] :
         {std::pair{"q_proj", qDim}, std::pair{"k_proj", kvDim}, std::pair{"v_proj", kvDim}}) {
      out.push_back({p + "self_attn." + proj + ".weight", {rows, hidden}});
      if (c.qkvBias) {
        out.push_back({p + "self_attn." + proj + ".bias", {rows}});
      }
    }
    out.push_back({p + "self_attn.o_proj.weight", {hidden, qDim}});
    if (c.oBias) {
      out.push_back({p + "self_attn.o_proj.bias", {hidden}});
    }
    out.push_back({p + "post_attention_layernorm.weight", {hidden}});
    for (const auto& [proj, rows, cols] :
         {std::tuple{"gate_proj", inter, hidden}, std::tuple{"up_proj", inter, hidden},
          std::tuple{"down_proj", hidden, inter}}) {
      out.push_back({p + "mlp." + proj + ".weight", {rows, cols}});
      if (c.mlpBias) {
        out.push_back({p + "mlp." + proj + ".bias", {rows}});
      }
    }
  }
  out.push_back({"model.norm.weight", {hidden}});
  if (!c.tieWordEmbeddings) {
    out.push_back({"lm_head.weight", {c.vocabSize, hidden}});
  }
  return out;
}

std::string describeShapeSource(const ModelConfig& c) {
  return "config.json says vocab_size " + std::to_string(c.vocabSize) + ", hidden_size " +
         std::to_string(c.hiddenSize) + ", intermediate_size " +
         std::to_string(c.intermediateSize) + ", heads " + std::to_string(c.numHeads) + "/" +
         std::to_string(c.numKvHeads) + " kv, head_dim " + std::to_string(c.headDim);
}

ParameterCounts countParameters(const ModelConfig& c) {
  ParameterCounts counts;
  for (const ExpectedTensor& t : expectedTensors(c)) {
    const std::int64_t n = compute::numelOf(t.shape);
    counts.total += n;
    if (t.name == "model.embed_tokens.weight") {
      counts.embedding = n;
    } else if (t.name == "lm_head.weight") {
      counts.lmHead = n;
    } else if (t.name.rfind("model.layers.0.", 0) == 0) {
      counts.perLayer += n;
    }
  }
  return counts;
}

}  // namespace lorascope::model

// ModelLayout.cpp — expected tensor names and shapes of the Llama/Qwen2/Mistral graph.
#include "model/ModelLayout.h"

#include "model/Projections.h"

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
    // A projection's weight (rows, cols) and, when the config has one, its bias (rows).
    const auto projection = [&](Projection proj, std::int64_t rows, std::int64_t cols, bool bias) {
      out.push_back({projectionTensorName(i, proj, "weight"), {rows, cols}});
      if (bias) {
        out.push_back({projectionTensorName(i, proj, "bias"), {rows}});
      }
    };
    projection(Projection::Q, qDim, hidden, c.qkvBias);
    projection(Projection::K, kvDim, hidden, c.qkvBias);
    projection(Projection::V, kvDim, hidden, c.qkvBias);
    projection(Projection::O, hidden, qDim, c.oBias);
    out.push_back({p + "post_attention_layernorm.weight", {hidden}});
    projection(Projection::Gate, inter, hidden, c.mlpBias);
    projection(Projection::Up, inter, hidden, c.mlpBias);
    projection(Projection::Down, hidden, inter, c.mlpBias);
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

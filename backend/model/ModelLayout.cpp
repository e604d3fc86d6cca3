// ModelLayout.cpp — expected tensor names and shapes of the decoder graph (every family).
#include "model/ModelLayout.h"

#include "model/Projections.h"

#include <vector>

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
    if (c.qkNorm) {
      out.push_back({p + "self_attn.q_norm.weight", {c.headDim}});
      out.push_back({p + "self_attn.k_norm.weight", {c.headDim}});
    }
    out.push_back({p + "post_attention_layernorm.weight", {hidden}});
    if (c.sandwichNorms) {
      out.push_back({p + "pre_feedforward_layernorm.weight", {hidden}});
      out.push_back({p + "post_feedforward_layernorm.weight", {hidden}});
    }
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

std::string describeGraphFeatures(const ModelConfig& c) {
  std::vector<std::string> parts;
  const auto number = [](double v) {
    std::string text = std::to_string(v);
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') {
      text.pop_back();
    }
    return text;
  };
  if (c.qkvBias) {
    parts.emplace_back("q/k/v bias");
  }
  if (c.qkNorm) {
    parts.emplace_back("q/k norms");
  }
  if (c.mlpActivation == MlpActivation::GeluTanh) {
    parts.emplace_back("GeGLU (gelu_pytorch_tanh)");
  }
  if (c.normWeightPlusOne) {
    parts.emplace_back("(1 + w) RMSNorm");
  }
  if (c.sandwichNorms) {
    parts.emplace_back("pre/post feed-forward norms");
  }
  if (c.embeddingScale != 1.0) {
    parts.push_back("embeddings ×√" + std::to_string(c.hiddenSize));
  }
  if (c.slidingWindow > 0) {
    std::int64_t sliding = 0;
    for (const bool s : c.slidingLayers) {
      sliding += s ? 1 : 0;
    }
    parts.push_back("sliding window " + std::to_string(c.slidingWindow) + " on " +
                    std::to_string(sliding) + " of " + std::to_string(c.numLayers) + " layers");
  }
  if (c.localRope) {
    parts.push_back("local rope_theta " + number(c.localRope->theta));
  }
  if (c.attentionLogitSoftcap > 0.0) {
    parts.push_back("attention scores soft-capped at " + number(c.attentionLogitSoftcap));
  }
  if (c.finalLogitSoftcap > 0.0) {
    parts.push_back("logits soft-capped at " + number(c.finalLogitSoftcap));
  }
  std::string out;
  for (const std::string& p : parts) {
    out += (out.empty() ? "" : ", ") + p;
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

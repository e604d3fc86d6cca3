// ReferenceShapes.cpp — the values of the two models' config.json files.
#include "model/ReferenceShapes.h"

namespace lorascope::model {

ModelConfig qwen25HalfBShape() {
  ModelConfig c;
  c.family = Family::Qwen2;
  c.modelType = "qwen2";
  c.vocabSize = 151936;
  c.hiddenSize = 896;
  c.intermediateSize = 4864;
  c.numLayers = 24;
  c.numHeads = 14;
  c.numKvHeads = 2;
  c.headDim = 64;
  c.rmsNormEps = 1e-6;
  c.rope.theta = 1e6;
  c.tieWordEmbeddings = true;
  c.qkvBias = true;
  c.maxPositionEmbeddings = 32768;
  c.storedDtype = "bfloat16";
  return c;
}

ModelConfig llama32OneBShape() {
  ModelConfig c;
  c.family = Family::Llama;
  c.modelType = "llama";
  c.vocabSize = 128256;
  c.hiddenSize = 2048;
  c.intermediateSize = 8192;
  c.numLayers = 16;
  c.numHeads = 32;
  c.numKvHeads = 8;
  c.headDim = 64;
  c.rmsNormEps = 1e-5;
  c.rope = {500000.0, RopeScalingType::Llama3, 32.0, 1.0, 4.0, 8192};
  c.tieWordEmbeddings = true;
  c.maxPositionEmbeddings = 131072;
  c.storedDtype = "bfloat16";
  return c;
}

std::optional<ModelConfig> referenceShape(std::string_view name) {
  if (name == "qwen2.5-0.5b") {
    return qwen25HalfBShape();
  }
  if (name == "llama-3.2-1b") {
    return llama32OneBShape();
  }
  return std::nullopt;
}

}  // namespace lorascope::model

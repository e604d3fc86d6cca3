// cli/cmd_inspect_model.cpp — `lorascope-train inspect-model DIR [--json] [--batch N] [--seq N]
// [--rank R] [--checkpointing] [--quantize none|nf4] [--check]`: architecture, parameter counts,
// stored dtypes and the memory LoRA training needs at a batch × seq and rank
// (model/MemoryEstimate.h), with the 4-bit (NF4) footprint of the weights beside the stored one.
// Reads config.json and the safetensors headers only (mmap), so it answers at once even for a model
// of many gigabytes; --check also reads every weight and lists the tensors holding NaN or ±inf
// (exit 1 when there are any).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "cli/Commands.h"
#include "common/Format.h"
#include "job/CliArgs.h"
#include "job/Generation.h"  // defines: refuseRunAsModel
#include "model/MemoryEstimate.h"
#include "model/ModelFolder.h"
#include "model/ModelLayout.h"
#include "model/Projections.h"
#include "model/WeightQuantization.h"  // defines: WeightQuantization, placedWeightBytes

namespace lorascope::cli {
namespace {

using common::formatBytes;

// The run the memory estimate is for.
struct Plan {
  std::int64_t batch = 1;
  std::int64_t seq = 512;
  std::int64_t rank = 16;
  bool checkpointing = false;
  model::WeightQuantization quantization = model::WeightQuantization::None;
};

std::int64_t positiveOption(const job::CliArgs& args, const std::string& name,
                            std::int64_t fallback, std::int64_t max) {
  const std::optional<std::string> text = args.value(name);
  if (!text) {
    return fallback;
  }
  std::int64_t value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size() || value <= 0 || value > max) {
    throw job::UsageError("--" + name + " must be an integer in [1, " + std::to_string(max) +
                          "], got '" + *text + "'");
  }
  return value;
}

std::string numberText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

std::string ropeText(const model::RopeConfig& rope) {
  std::string text = "rope theta " + numberText(rope.theta);
  if (rope.scaling == model::RopeScalingType::Linear) {
    text += ", linear scaling x" + numberText(rope.factor);
  } else if (rope.scaling == model::RopeScalingType::Llama3) {
    text += ", llama3 scaling x" + numberText(rope.factor) + " (original " +
            std::to_string(rope.originalMaxPositionEmbeddings) + " positions)";
  }
  return text;
}

// "1.24 B", "60.8 M", "32.9 K": a parameter count at a glance.
std::string countText(std::int64_t count) {
  char text[32];
  const auto value = static_cast<double>(count);
  if (count >= 1'000'000'000) {
    std::snprintf(text, sizeof text, "%.2f B", value / 1e9);
  } else if (count >= 1'000'000) {
    std::snprintf(text, sizeof text, "%.1f M", value / 1e6);
  } else {
    std::snprintf(text, sizeof text, "%.1f K", value / 1e3);
  }
  return text;
}

nlohmann::json toJson(const model::ModelFolder& folder, const model::ParameterCounts& params,
                      const std::map<std::string, std::int64_t>& dtypeTensors, const Plan& plan,
                      const model::TrainingMemory& m) {
  const model::ModelConfig& c = folder.config();
  nlohmann::json dtypes = nlohmann::json::object();
  for (const auto& [name, count] : dtypeTensors) {
    dtypes[name] = count;
  }
  nlohmann::json targets = nlohmann::json::array();  // the estimate adapts every projection
  for (const model::ProjectionNames& projection : model::kProjectionNames) {
    targets.push_back(projection.name);
  }
  return {
      {"dir", folder.dir()},
      {"model_type", c.modelType},
      {"family", model::familyName(c.family)},
      {"graph_features", model::describeGraphFeatures(c)},
      {"layers", c.numLayers},
      {"hidden_size", c.hiddenSize},
      {"intermediate_size", c.intermediateSize},
      {"heads", c.numHeads},
      {"kv_heads", c.numKvHeads},
      {"head_dim", c.headDim},
      {"vocab_size", c.vocabSize},
      {"tie_word_embeddings", c.tieWordEmbeddings},
      {"rope_theta", c.rope.theta},
      {"files", folder.files()},
      {"weights_bytes_stored", folder.weightBytes()},
      {"weights_bytes_nf4",
       model::placedWeightBytes(folder, compute::Device::Gpu, model::WeightQuantization::Nf4)},
      {"tensor_dtypes", dtypes},
      {"parameters",
       {{"total", params.total},
        {"embedding", params.embedding},
        {"per_layer", params.perLayer},
        {"lm_head", params.lmHead}}},
      {"lora_training",
       {{"batch", plan.batch},
        {"seq", plan.seq},
        {"rank", plan.rank},
        {"targets", targets},
        {"activation_checkpointing", plan.checkpointing},
        {"quantize", model::quantizationName(plan.quantization)},
        {"dequantize_bytes", m.dequantizeBytes},
        {"lora_parameters", m.loraParameters},
        {"weights_bytes", m.weightsBytes},
        {"lora_bytes", m.loraBytes},
        {"lora_grad_bytes", m.loraGradBytes},
        {"optimizer_bytes", m.optimizerBytes},
        {"activation_bytes", m.savedBytes},
        {"loss_bytes", m.lossBytes},
        {"backward_bytes", m.backwardBytes},
        {"total_bytes", m.peakBytes}}},
  };
}

void printText(const model::ModelFolder& folder, const model::ParameterCounts& params,
               const std::map<std::string, std::int64_t>& dtypeTensors, const Plan& plan,
               const model::TrainingMemory& m) {
  const model::ModelConfig& c = folder.config();
  const std::string features = model::describeGraphFeatures(c);
  std::cout << "model       " << folder.dir() << " (" << c.modelType << ")\n"
            << "family      " << model::familyName(c.family)
            << (features.empty() ? "" : ": " + features) << "\n"
            << "shape       " << c.numLayers << " layers, hidden " << c.hiddenSize << ", MLP "
            << c.intermediateSize << ", heads " << c.numHeads << " (" << c.numKvHeads
            << " KV, head_dim " << c.headDim << "), vocab " << c.vocabSize << "\n"
            << "            " << ropeText(c.rope)
            << (c.tieWordEmbeddings ? ", lm_head tied to the embedding" : ", separate lm_head")
            << "\n"
            << "parameters  " << countText(params.total) << " (embedding "
            << countText(params.embedding) << ", per layer " << countText(params.perLayer)
            << ", lm_head " << (params.lmHead ? countText(params.lmHead) : "tied") << ")\n"
            << "weights     " << formatBytes(folder.weightBytes()) << " in "
            << folder.files().size() << " file(s):";
  for (const auto& [name, count] : dtypeTensors) {
    std::cout << " " << count << " " << name << " tensors";
  }
  std::cout << "\n4-bit       "
            << formatBytes(model::placedWeightBytes(folder, compute::Device::Gpu,
                                                    model::WeightQuantization::Nf4))
            << " on a GPU with --quantize nf4 (q, k, v, o, gate, up, down in NF4 with double "
               "quantisation, the rest bf16)";
  std::cout << "\nLoRA training, batch " << plan.batch << " x seq " << plan.seq << ", rank "
            << plan.rank << " on q,k,v,o,gate,up,down, activation checkpointing "
            << (plan.checkpointing ? "on" : "off")
            << (plan.quantization == model::WeightQuantization::Nf4 ? ", base weights nf4" : "")
            << " (estimate of the step's peak, bf16):\n"
            << "  frozen weights      " << formatBytes(m.weightsBytes) << "\n"
            << "  LoRA parameters     " << countText(m.loraParameters) << ": weights "
            << formatBytes(m.loraBytes) << ", grads " << formatBytes(m.loraGradBytes)
            << ", AdamW moments " << formatBytes(m.optimizerBytes) << "\n"
            << "  saved activations   " << formatBytes(m.savedBytes) << "\n"
            << "  transient           " << formatBytes(std::max(m.lossBytes, m.backwardBytes))
            << " (the larger of the loss " << formatBytes(m.lossBytes) << " and one layer's "
            << "backward " << formatBytes(m.backwardBytes) << ")\n"
            << (m.dequantizeBytes > 0 ? "  nf4 dequantisation  " + formatBytes(m.dequantizeBytes) +
                                            " (the largest projection in bf16, one at a time)\n"
                                      : std::string())
            << "  peak                " << formatBytes(m.peakBytes) << "\n";
}

}  // namespace

const job::CommandSpec& inspectModelCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "inspect-model",
      .operands = "DIR",
      .summary =
          "A model folder's architecture, parameters, dtypes and the memory LoRA training needs.",
      .options =
          {
              {.name = "json",
               .type = OptionType::Bool,
               .help = "Print JSON.",
               .defaultText = "false"},
              {.name = "batch",
               .type = OptionType::Integer,
               .help = "Micro-batch of the memory estimate.",
               .defaultText = "1",
               .min = 1,
               .max = 4096,
               .unit = "sequences"},
              {.name = "seq",
               .type = OptionType::Integer,
               .help = "Sequence length of the memory estimate.",
               .defaultText = "512",
               .min = 1,
               .max = 1 << 20,
               .unit = "tokens"},
              {.name = "rank",
               .type = OptionType::Integer,
               .help = "LoRA rank of the memory estimate.",
               .defaultText = "16",
               .min = 1,
               .max = 4096},
              {.name = "checkpointing",
               .type = OptionType::Bool,
               .help = "Activation checkpointing in the memory estimate.",
               .defaultText = "false"},
              {.name = "quantize",
               .type = OptionType::Choice,
               .help = "Base weights of the memory estimate: as stored (none) or the projections "
                       "in NF4 (nf4, as train --quantize nf4 holds them on a GPU).",
               .defaultText = "none",
               .choices = {"none", "nf4"}},
              {.name = "check",
               .type = OptionType::Bool,
               .help = "Read every weight and list the tensors holding NaN or infinite values "
                       "(exit 1 when there are any).",
               .defaultText = "false"},
          },
  };
  return command;
}

int runInspectModel(const Args& args) {
  const job::CliArgs parsed(args, inspectModelCommand());
  if (parsed.positional().size() != 1) {
    throw job::UsageError("expected one model folder: inspect-model DIR [--json]");
  }
  job::refuseRunAsModel(parsed.positional()[0], "inspect-model", "inspect that model");
  const model::ModelFolder folder = model::ModelFolder::open(parsed.positional()[0]);
  const model::ParameterCounts params = model::countParameters(folder.config());
  std::map<std::string, std::int64_t> dtypeTensors;
  for (const model::StoredTensor& t : folder.tensors()) {
    ++dtypeTensors[compute::dtypeName(t.dtype)];
  }
  const Plan plan{positiveOption(parsed, "batch", 1, 4096),
                  positiveOption(parsed, "seq", 512, 1 << 20),
                  positiveOption(parsed, "rank", 16, 4096), parsed.has("checkpointing"),
                  model::parseQuantization(parsed.value("quantize").value_or("none"))
                      .value_or(model::WeightQuantization::None)};
  model::TrainingShape shape;
  shape.weightsBytes =
      plan.quantization == model::WeightQuantization::Nf4
          ? model::placedWeightBytes(folder, compute::Device::Gpu, plan.quantization)
          : folder.weightBytes();
  shape.nf4Workspace = plan.quantization == model::WeightQuantization::Nf4;
  shape.loraRank = plan.rank;
  shape.activationCheckpointing = plan.checkpointing;
  const model::TrainingMemory memory =
      model::estimateTrainingMemory(folder.config(), shape, plan.batch * plan.seq);
  std::optional<std::vector<model::NonFiniteTensor>> nonFinite;
  if (parsed.has("check")) {
    nonFinite = folder.findNonFiniteWeights();
  }
  if (parsed.has("json")) {
    nlohmann::json report = toJson(folder, params, dtypeTensors, plan, memory);
    if (nonFinite) {
      report["non_finite_tensors"] = nlohmann::json::array();
      for (const model::NonFiniteTensor& t : *nonFinite) {
        report["non_finite_tensors"].push_back({{"name", t.name},
                                                {"file", t.file},
                                                {"count", t.count},
                                                {"first_index", t.firstIndex}});
      }
    }
    std::cout << report.dump(2) << "\n";
  } else {
    printText(folder, params, dtypeTensors, plan, memory);
    if (nonFinite && nonFinite->empty()) {
      std::cout << "check       all " << folder.tensors().size()
                << " tensors read: every value is finite\n";
    } else if (nonFinite) {
      std::cout << "check       " << nonFinite->size()
                << " tensor(s) hold NaN or infinite values (training on them gives a NaN loss):\n";
      for (const model::NonFiniteTensor& t : *nonFinite) {
        std::cout << "  " << t.name << " (" << t.file << "): " << t.count
                  << " value(s), the first at element " << t.firstIndex << "\n";
      }
    }
  }
  return nonFinite && !nonFinite->empty() ? 1 : 0;
}

}  // namespace lorascope::cli

// job/TrainRunConfig.cpp — `train` options ↔ TrainConfig ↔ config.json.
#include "job/TrainRunConfig.h"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "compute/BuildInfo.h"
#include "job/RunDevice.h"       // defines: checkDeviceOption
#include "train/RunDirectory.h"  // defines: fnv1a64

namespace lorascope::job {
using nlohmann::json;

namespace {

std::int64_t parseCount(const std::string& name, const std::string& text, std::int64_t min) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value < min) {
    throw UsageError("--" + name + " needs an integer ≥ " + std::to_string(min) + ", got '" + text +
                     "'");
  }
  return value;
}

double parseReal(const std::string& name, const std::string& text) {
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) {
    throw UsageError("--" + name + " needs a number, got '" + text + "'");
  }
  return value;
}

bool parseBool(const std::string& name, const std::string& text) {
  if (text == "true" || text == "1" || text == "on") {
    return true;
  }
  if (text == "false" || text == "0" || text == "off") {
    return false;
  }
  throw UsageError("--" + name + " needs true or false, got '" + text + "'");
}

using Setter = std::function<void(TrainRunSettings&, const std::string& name, const std::string&)>;

const std::map<std::string, Setter>& setters() {
  static const std::map<std::string, Setter> table = {
      {"steps", [](auto& s, auto& n, auto& v) { s.train.maxSteps = parseCount(n, v, 1); }},
      {"epochs",
       [](auto& s, auto& n, auto& v) {
         s.train.epochs = parseCount(n, v, 1);
         s.train.maxSteps = 0;
       }},
      {"batch-size",
       [](auto& s, auto& n, auto& v) {
         s.autoMicroBatch = v == "auto";
         if (!s.autoMicroBatch) {
           s.train.microBatchSize = parseCount(n, v, 1);
         }
       }},
      {"memory-margin",
       [](auto& s, auto& n, auto& v) {
         s.memoryMargin = parseReal(n, v);
         if (!(s.memoryMargin >= 0.0 && s.memoryMargin < 0.9)) {
           throw UsageError(
               "--memory-margin is the fraction of free memory kept back, in [0, "
               "0.9), got " +
               v);
         }
       }},
      {"grad-accum",
       [](auto& s, auto& n, auto& v) { s.train.gradAccumulation = parseCount(n, v, 1); }},
      {"max-seq-len", [](auto& s, auto& n, auto& v) { s.train.maxSeqLen = parseCount(n, v, 2); }},
      {"lr", [](auto& s, auto& n, auto& v) { s.train.adamw.learningRate = parseReal(n, v); }},
      {"weight-decay",
       [](auto& s, auto& n, auto& v) { s.train.adamw.weightDecay = parseReal(n, v); }},
      {"max-grad-norm", [](auto& s, auto& n, auto& v) { s.train.maxGradNorm = parseReal(n, v); }},
      {"non-finite-steps",
       [](auto& s, auto& n, auto& v) { s.train.nonFiniteStepLimit = parseCount(n, v, 1); }},
      {"schedule",
       [](auto& s, auto&, auto& v) {
         try {
           s.train.schedule = train::parseScheduleKind(v);
         } catch (const std::exception&) {
           throw UsageError("--schedule must be constant, linear or cosine, got '" + v + "'");
         }
       }},
      {"warmup", [](auto& s, auto& n, auto& v) { s.train.warmupSteps = parseCount(n, v, 0); }},
      {"lora-r", [](auto& s, auto& n,
                    auto& v) { s.train.lora.rank = static_cast<int>(parseCount(n, v, 1)); }},
      {"lora-alpha", [](auto& s, auto& n, auto& v) { s.train.lora.alpha = parseReal(n, v); }},
      {"lora-dropout", [](auto& s, auto& n, auto& v) { s.train.lora.dropout = parseReal(n, v); }},
      {"rslora", [](auto& s, auto& n, auto& v) { s.train.lora.useRslora = parseBool(n, v); }},
      {"targets",
       [](auto& s, auto&, auto& v) {
         try {
           s.train.lora.targets = train::parseLoraTargets(v);
         } catch (const std::invalid_argument& e) {
           throw UsageError(std::string("--targets: ") + e.what());
         }
       }},
      {"seed", [](auto& s, auto& n,
                  auto& v) { s.train.seed = static_cast<std::uint64_t>(parseCount(n, v, 0)); }},
      {"shuffle", [](auto& s, auto& n, auto& v) { s.train.shuffle = parseBool(n, v); }},
      {"packing", [](auto& s, auto& n, auto& v) { s.train.packing = parseBool(n, v); }},
      {"activation-checkpointing",
       [](auto& s, auto& n, auto& v) { s.train.activationCheckpointing = parseBool(n, v); }},
      {"checkpoint-every",
       [](auto& s, auto& n, auto& v) { s.checkpointEvery = parseCount(n, v, 0); }},
      {"keep-checkpoints",
       [](auto& s, auto& n, auto& v) {
         s.keepCheckpoints = static_cast<int>(parseCount(n, v, 0));
       }},
      {"device",
       [](auto& s, auto&, auto& v) {
         checkDeviceOption(v);
         s.device = v;
       }},
  };
  return table;
}

}  // namespace

const std::set<std::string>& trainValueOptions() {
  static const std::set<std::string> names = [] {
    std::set<std::string> out;
    for (const auto& [name, setter] : setters()) {
      out.insert(name);
    }
    return out;
  }();
  return names;
}

TrainRunSettings defaultSettings(bool demo) {
  TrainRunSettings s;
  s.train.lora.rank = 8;
  s.train.lora.alpha = 16;
  s.train.adamw.learningRate = 2e-4;
  s.train.schedule = train::ScheduleKind::Linear;
  s.train.microBatchSize = 4;
  s.train.maxSeqLen = 1024;
  if (demo) {
    // The demo's frozen model is random: a high rate moves the adapter visibly within a minute.
    s.train.adamw.learningRate = 3e-3;
    s.train.schedule = train::ScheduleKind::Cosine;
    s.train.warmupSteps = 3;
    s.train.microBatchSize = 8;
    s.train.maxSteps = 60;
    s.train.maxSeqLen = 128;
    s.checkpointEvery = 20;
  }
  return s;
}

void applyOptions(TrainRunSettings& settings, const std::map<std::string, std::string>& options) {
  for (const auto& [name, value] : options) {
    const auto it = setters().find(name);
    if (it == setters().end()) {
      throw UsageError("unknown option --" + name);
    }
    it->second(settings, name, value);
  }
  try {
    settings.train.validate();
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
}

json settingsToJson(const TrainRunSettings& s) {
  json targets = json::array();
  for (train::LoraModule m : s.train.lora.targets) {
    targets.push_back(train::shortName(m));
  }
  const train::TrainConfig& t = s.train;
  return {{"lora",
           {{"r", t.lora.rank},
            {"alpha", t.lora.alpha},
            {"dropout", t.lora.dropout},
            {"use_rslora", t.lora.useRslora},
            {"targets", targets}}},
          {"adamw",
           {{"lr", t.adamw.learningRate},
            {"beta1", t.adamw.beta1},
            {"beta2", t.adamw.beta2},
            {"epsilon", t.adamw.epsilon},
            {"weight_decay", t.adamw.weightDecay}}},
          {"schedule", train::toString(t.schedule)},
          {"warmup_steps", t.warmupSteps},
          {"max_steps", t.maxSteps},
          {"epochs", t.epochs},
          {"micro_batch_size", t.microBatchSize},
          {"grad_accumulation", t.gradAccumulation},
          {"max_seq_len", t.maxSeqLen},
          {"max_grad_norm", t.maxGradNorm},
          {"non_finite_step_limit", t.nonFiniteStepLimit},
          {"seed", t.seed},
          {"shuffle", t.shuffle},
          {"packing", t.packing},
          {"activation_checkpointing", t.activationCheckpointing},
          {"checkpoint_every", s.checkpointEvery},
          {"keep_checkpoints", s.keepCheckpoints},
          {"device", s.device},
          {"auto_micro_batch", s.autoMicroBatch},
          {"memory_margin", s.memoryMargin}};
}

TrainRunSettings settingsFromJson(const json& j, const std::string& file) {
  try {
    TrainRunSettings s;
    train::TrainConfig& t = s.train;
    const json& lora = j.at("lora");
    t.lora.rank = lora.at("r").get<int>();
    t.lora.alpha = lora.at("alpha").get<double>();
    t.lora.dropout = lora.at("dropout").get<double>();
    t.lora.useRslora = lora.at("use_rslora").get<bool>();
    t.lora.targets.clear();
    for (const json& m : lora.at("targets")) {
      t.lora.targets.insert(train::parseLoraModule(m.get<std::string>()));
    }
    const json& adamw = j.at("adamw");
    t.adamw = {adamw.at("lr").get<double>(), adamw.at("beta1").get<double>(),
               adamw.at("beta2").get<double>(), adamw.at("epsilon").get<double>(),
               adamw.at("weight_decay").get<double>()};
    t.schedule = train::parseScheduleKind(j.at("schedule").get<std::string>());
    t.warmupSteps = j.at("warmup_steps").get<std::int64_t>();
    t.maxSteps = j.at("max_steps").get<std::int64_t>();
    t.epochs = j.at("epochs").get<std::int64_t>();
    t.microBatchSize = j.at("micro_batch_size").get<std::int64_t>();
    t.gradAccumulation = j.at("grad_accumulation").get<std::int64_t>();
    t.maxSeqLen = j.at("max_seq_len").get<std::int64_t>();
    t.maxGradNorm = j.at("max_grad_norm").get<double>();
    // Absent from runs made before non-finite steps were skipped.
    t.nonFiniteStepLimit = j.value("non_finite_step_limit", std::int64_t{3});
    t.seed = j.at("seed").get<std::uint64_t>();
    t.shuffle = j.at("shuffle").get<bool>();
    t.packing = j.at("packing").get<bool>();
    t.activationCheckpointing = j.at("activation_checkpointing").get<bool>();
    s.checkpointEvery = j.at("checkpoint_every").get<std::int64_t>();
    s.keepCheckpoints = j.at("keep_checkpoints").get<int>();
    s.device = j.at("device").get<std::string>();
    // Absent from runs made before --batch-size auto existed.
    s.autoMicroBatch = j.value("auto_micro_batch", false);
    s.memoryMargin = j.value("memory_margin", 0.10);
    t.validate();
    return s;
  } catch (const std::exception& e) {
    throw UsageError(file + ": \"training\" does not hold valid settings: " + e.what());
  }
}

json newRunConfig(const std::string& modelPath, const std::string& dataPath, bool demo,
                  const TrainRunSettings& settings) {
  const std::time_t now = std::time(nullptr);
  char created[32];
  std::strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return {{"model_path", std::filesystem::absolute(modelPath).lexically_normal().string()},
          {"data_path", std::filesystem::absolute(dataPath).lexically_normal().string()},
          {"data_fingerprint", fileFingerprint(dataPath)},
          {"demo", demo},
          {"training", settingsToJson(settings)},
          {"versions", {{"lorascope", compute::buildInfo().version}, {"run_format", 1}}},
          {"created", created}};
}

std::string fileFingerprint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UsageError(path + ": cannot be read");
  }
  std::uint64_t hash = train::kFnv1a64Offset;
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) {
    hash = train::fnv1a64(std::string_view(buffer, static_cast<std::size_t>(in.gcount())), hash);
  }
  return train::fnv1a64Text(hash);
}

}  // namespace lorascope::job

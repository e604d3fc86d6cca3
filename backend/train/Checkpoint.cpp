// train/Checkpoint.cpp — checkpoint folders: PEFT adapter, AdamW moments, trainer state.
#include "train/Checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include <nlohmann/json.hpp>

#include "common/DurableFile.h"
#include "common/JsonReader.h"
#include "common/OsError.h"
#include "model/ModelError.h"
#include "model/Safetensors.h"
#include "train/CheckpointError.h"
#include "train/PeftExport.h"
#include "train/RunDirectory.h"  // defines: fnv1a64, fnv1a64Text
#include "train/SafetensorsWriter.h"

namespace lorascope::train {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kFirstMomentSuffix = ".exp_avg";
constexpr const char* kSecondMomentSuffix = ".exp_avg_sq";

// The fields of a run file (common/JsonReader.h), failures naming the file.
common::JsonReader fieldsOf(const json& doc, const std::string& file) {
  return common::JsonReader(
      doc, "", [file](const std::string& problem) { throw CheckpointError(file, problem); });
}

std::vector<float> readF32(const model::SafetensorsFile& file, const std::string& name,
                           const compute::Shape& shape) {
  const model::SafetensorsEntry* entry = file.find(name);
  if (entry == nullptr) {
    throw CheckpointError(file.path(), "tensor '" + name + "' is missing");
  }
  if (entry->dtype != compute::DType::F32 || entry->shape != shape) {
    throw CheckpointError(file.path(), "tensor '" + name + "' is " +
                                           compute::dtypeName(entry->dtype) +
                                           compute::shapeToString(entry->shape) + ", expected f32" +
                                           compute::shapeToString(shape) + " like the adapter");
  }
  const compute::Tensor t = file.tensor(*entry);
  const float* data = t.as<float>();
  return std::vector<float>(data, data + t.numel());
}

// The files whose checksums lorascope_state.json records (it is written last, after them).
constexpr const char* kChecksummedFiles[] = {kAdapterWeightsFile, kAdapterConfigFile,
                                             kOptimizerFile};
constexpr std::int64_t kMaxMicroBatch = 1 << 20;

std::string fileChecksum(const fs::path& path) {
  return fnv1a64Text(fnv1a64(readRunFile(path)));
}

// Of the state file itself: its JSON without the "checksum" field, as dumped (keys sorted).
std::string documentChecksum(json doc) {
  doc.erase("checksum");
  return fnv1a64Text(fnv1a64(doc.dump()));
}

bool allFinite(const std::vector<float>& values) {
  return std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); });
}

// Files whose checksum the state file records must still have it (checkpoints written
// before checksums existed record none and are read as they are).
void verifyFileChecksums(const json& doc, const fs::path& dir, const std::string& stateFile) {
  if (!doc.contains("files")) {
    return;
  }
  const json& files = doc.at("files");
  for (const char* name : kChecksummedFiles) {
    const fs::path path = dir / name;
    if (!files.is_object() || !files.contains(name) || !files.at(name).is_string()) {
      throw CheckpointError(stateFile, std::string("records no checksum of ") + name);
    }
    const std::string actual = fileChecksum(path);
    if (actual != files.at(name).get<std::string>()) {
      throw CheckpointError(common::pathText(path),
                            "checksum " + actual + " differs from " +
                                files.at(name).get<std::string>() + " recorded in " +
                                common::pathText(common::pathFromUtf8(stateFile).filename()) +
                                ": the file "
                                "changed after the checkpoint was written "
                                "(a bit flip, a partial copy?)");
    }
  }
}

json toJson(const MicroBatchChange& c) {
  return {{"step", c.step},
          {"micro_batch", c.microBatch},
          {"accumulation", c.accumulation},
          {"reason", c.reason}};
}

}  // namespace

std::vector<LoraMoments> zeroMoments(const LoraAdapter& adapter) {
  std::vector<LoraMoments> out;
  for (const LoraWeights& w : adapter.weights) {
    out.push_back({std::vector<float>(w.a.size(), 0.0f), std::vector<float>(w.a.size(), 0.0f),
                   std::vector<float>(w.b.size(), 0.0f), std::vector<float>(w.b.size(), 0.0f)});
  }
  return out;
}

void writeCheckpointFiles(const fs::path& dir, const TrainerState& state,
                          const std::string& configHash, const std::string& baseModel) {
  if (state.moments.size() != state.adapter.weights.size()) {
    throw std::invalid_argument("checkpoint: " + std::to_string(state.moments.size()) +
                                " moment sets for " + std::to_string(state.adapter.weights.size()) +
                                " adapted projections");
  }
  writePeftAdapter(dir, state.adapter, baseModel);

  std::vector<TensorToWrite> moments;
  const std::int64_t r = state.adapter.config.rank;
  for (std::size_t i = 0; i < state.moments.size(); ++i) {
    const LoraSite& site = state.adapter.weights[i].site;
    const LoraMoments& m = state.moments[i];
    const compute::Shape shapeA = {r, site.inFeatures};
    const compute::Shape shapeB = {site.outFeatures, r};
    const std::string keyA = peftKey(site, true);
    const std::string keyB = peftKey(site, false);
    moments.push_back(f32TensorToWrite(keyA + kFirstMomentSuffix, shapeA, m.firstA));
    moments.push_back(f32TensorToWrite(keyA + kSecondMomentSuffix, shapeA, m.secondA));
    moments.push_back(f32TensorToWrite(keyB + kFirstMomentSuffix, shapeB, m.firstB));
    moments.push_back(f32TensorToWrite(keyB + kSecondMomentSuffix, shapeB, m.secondB));
  }
  writeSafetensors(dir / kOptimizerFile, moments,
                   {{"format", "lorascope-adamw"}, {"step", std::to_string(state.step)}});

  json history = json::array();
  for (const MicroBatchChange& c : state.microBatchHistory) {
    history.push_back(toJson(c));
  }
  json files = json::object();
  for (const char* name : kChecksummedFiles) {
    files[name] = fileChecksum(dir / name);
  }
  json doc = {
      {"format_version", kTrainerStateFormatVersion},
      {"step", state.step},
      {"epoch", state.epoch},
      {"data_cursor", state.dataCursor},
      {"rng", {{"algorithm", "philox4x32-10"}, {"seed", state.seed}, {"offset", state.rngOffset}}},
      {"tokens_seen", state.tokensSeen},
      {"micro_batch_history", history},
      {"config_hash", configHash},
      {"files", files}};
  doc["checksum"] = documentChecksum(doc);
  common::writeFileDurably(dir / kStateFile, doc.dump(2) + "\n");
}

fs::path checkpointStateFile(const fs::path& dir) {
  const fs::path current = dir / kStateFile;
  if (fs::exists(current))
    return current;
  const fs::path legacy = dir / kHfTrainerStateFile;
  if (fs::exists(legacy)) {
    // Hugging Face's trainer_state.json has no format_version; ours before the rename had one.
    const json doc = json::parse(readRunFile(legacy), nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded() || !doc.is_object() || doc.contains("format_version"))
      return legacy;
  }
  return current;
}

std::string checkpointConfigHash(const fs::path& dir) {
  const fs::path path = checkpointStateFile(dir);
  const json doc = readRunJson(path);
  return fieldsOf(doc, common::pathText(path)).string("config_hash");
}

TrainerState readCheckpoint(const fs::path& dir,
                            const std::optional<std::string>& expectedConfigHash) {
  const fs::path statePath = checkpointStateFile(dir);
  const std::string stateFile = common::pathText(statePath);
  const json doc = readRunJson(statePath);
  // Checkpoints written before checksums existed have neither field and are read as they are.
  if (doc.contains("checksum") &&
      (!doc.at("checksum").is_string() || doc.at("checksum") != documentChecksum(doc))) {
    throw CheckpointError(stateFile, "its checksum does not match its contents (" +
                                         documentChecksum(doc) + " vs recorded " +
                                         doc.at("checksum").dump() +
                                         "): the file changed after it was written");
  }
  const common::JsonReader fields = fieldsOf(doc, stateFile);
  const std::int64_t version = fields.integer("format_version");
  if (version != kTrainerStateFormatVersion) {
    throw CheckpointError(stateFile, "format_version " + std::to_string(version) + " is not the " +
                                         std::to_string(kTrainerStateFormatVersion) +
                                         " this build reads (written by another version?)");
  }
  const std::string hash = fields.string("config_hash");
  if (expectedConfigHash && hash != *expectedConfigHash) {
    throw CheckpointError(stateFile, "config hash " + hash +
                                         " differs from the run's config.json (" +
                                         *expectedConfigHash +
                                         "): the run's settings changed since this checkpoint; "
                                         "restore config.json or start a new run");
  }
  TrainerState state;
  state.step = fields.integer("step");
  state.epoch = fields.integer("epoch");
  state.dataCursor = fields.integer("data_cursor");
  state.tokensSeen = fields.integer("tokens_seen");
  const common::JsonReader rng = fields.object("rng");
  state.seed = rng.unsignedInteger("seed");
  state.rngOffset = rng.unsignedInteger("offset");
  if (state.step < 0 || state.epoch < 0 || state.dataCursor < 0 || state.tokensSeen < 0) {
    throw CheckpointError(stateFile,
                          "step, epoch, data_cursor and tokens_seen must not be negative");
  }
  for (std::size_t i = 0; i < fields.array("micro_batch_history").size(); ++i) {
    const common::JsonReader c = fields.element("micro_batch_history", i);
    const MicroBatchChange change{c.integer("step"), c.integer("micro_batch"),
                                  c.integer("accumulation"), c.stringOr("reason", "")};
    // A micro-batch of 0 divided by zero (SIGFPE) and a negative one crashed a resume.
    if (change.microBatch < 1 || change.microBatch > kMaxMicroBatch || change.accumulation < 1 ||
        change.accumulation > kMaxMicroBatch || change.step < 0 || change.step > state.step ||
        (!state.microBatchHistory.empty() && change.step < state.microBatchHistory.back().step)) {
      throw CheckpointError(stateFile, "micro_batch_history entry " + c.value().dump() +
                                           " is impossible (micro_batch and accumulation ≥ 1, "
                                           "steps ascending up to the checkpoint's step)");
    }
    state.microBatchHistory.push_back(change);
  }

  state.adapter = readPeftAdapter(dir).adapter;
  const fs::path optimizerPath = dir / kOptimizerFile;
  if (!fs::exists(optimizerPath)) {
    throw CheckpointError(common::pathText(optimizerPath),
                          "is missing (an incomplete checkpoint?)");
  }
  std::unique_ptr<model::SafetensorsFile> optimizer;
  try {
    optimizer = std::make_unique<model::SafetensorsFile>(common::pathText(optimizerPath));
  } catch (const model::ModelError& e) {
    throw CheckpointError(common::pathText(optimizerPath), e.what());
  }
  const std::int64_t r = state.adapter.config.rank;
  for (const LoraWeights& w : state.adapter.weights) {
    const compute::Shape shapeA = {r, w.site.inFeatures};
    const compute::Shape shapeB = {w.site.outFeatures, r};
    const std::string keyA = peftKey(w.site, true);
    const std::string keyB = peftKey(w.site, false);
    state.moments.push_back({readF32(*optimizer, keyA + kFirstMomentSuffix, shapeA),
                             readF32(*optimizer, keyA + kSecondMomentSuffix, shapeA),
                             readF32(*optimizer, keyB + kFirstMomentSuffix, shapeB),
                             readF32(*optimizer, keyB + kSecondMomentSuffix, shapeB)});
  }
  if (optimizer->header().tensors.size() != 4 * state.adapter.weights.size()) {
    throw CheckpointError(common::pathText(optimizerPath),
                          "holds " + std::to_string(optimizer->header().tensors.size()) +
                              " tensors but the adapter needs " +
                              std::to_string(4 * state.adapter.weights.size()) +
                              " (moments of another adapter?)");
  }
  // After the structural checks, whose messages are more specific; a flipped bit in a weight or
  // a moment passes those and is caught here.
  verifyFileChecksums(doc, dir, stateFile);
  try {
    requireFiniteAdapter(state.adapter, common::pathText(dir / kAdapterWeightsFile));
  } catch (const std::invalid_argument& e) {
    throw CheckpointError(common::pathText(dir / kAdapterWeightsFile), e.what());
  }
  for (const LoraMoments& m : state.moments) {
    if (!allFinite(m.firstA) || !allFinite(m.secondA) || !allFinite(m.firstB) ||
        !allFinite(m.secondB)) {
      throw CheckpointError(common::pathText(optimizerPath),
                            "holds AdamW moments that are not finite");
    }
  }
  return state;
}

}  // namespace lorascope::train

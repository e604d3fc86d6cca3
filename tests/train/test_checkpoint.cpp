// test_checkpoint.cpp — run files: the safetensors writer against the strict reader, checkpoint
// folders round-tripping the trainer state bit for bit, refusal of changed configs and
// mismatched or damaged files, keep-last-K rotation, metrics.jsonl with a torn last line, and a
// run resumed from disk continuing exactly as the uninterrupted one; Hugging Face's
// trainer_state.json (log_history) and TensorBoard event files beside metrics.jsonl, and
// checkpoints of the older layout (our state in trainer_state.json) still resuming.
#include "TempDir.h"
#include "TestRunner.h"

#include <unistd.h>

#include <cmath>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "TrainTestUtil.h"
#include "common/OsError.h"   // defines: pathText
#include "common/Platform.h"  // defines: currentProcessId
#include "compute/Bf16.h"
#include "compute/BuildInfo.h"
#include "model/Safetensors.h"
#include "train/CheckpointError.h"
#include "train/HfLogs.h"
#include "train/Merge.h"  // defines: floatToF16
#include "train/PeftExport.h"
#include "train/RunDirectory.h"
#include "train/SafetensorsWriter.h"
#include "train/TfEvents.h"
#include "train/TrainLoop.h"

using namespace lorascope;
using namespace lorascope::test;
using train::CheckpointError;
using train::RunDirectory;
using train::TrainerState;
namespace fs = std::filesystem;

namespace {

std::vector<float> philoxValues(std::size_t n, std::uint64_t stream) {
  std::vector<float> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = train::uniformFloat(77, stream, i) * 2.0f - 1.0f;
  return out;
}

// A state with every field set to something that is not a default.
TrainerState richState(const model::ModelConfig& config, std::int64_t step) {
  train::LoraConfig lora;
  lora.rank = 4;
  lora.alpha = 12.5;
  lora.dropout = 0.05;
  lora.useRslora = true;
  lora.targets = train::parseLoraTargets("q,v,down");
  TrainerState s;
  s.adapter = adapterWithNonZeroB(config, lora, 5);
  s.moments = train::zeroMoments(s.adapter);
  std::uint64_t stream = 1;
  for (train::LoraMoments& m : s.moments) {
    m.firstA = philoxValues(m.firstA.size(), stream++);
    m.secondA = philoxValues(m.secondA.size(), stream++);
    m.firstB = philoxValues(m.firstB.size(), stream++);
    m.secondB = philoxValues(m.secondB.size(), stream++);
  }
  s.step = step;
  s.epoch = 2;
  s.dataCursor = 17;
  s.seed = 0xfedcba9876543210ull;
  s.rngOffset = 12345;
  s.tokensSeen = 987654;
  s.microBatchHistory = {{0, 4, 2, "start"}, {3, 2, 4, "oom"}};
  return s;
}

bool sameState(const TrainerState& a, const TrainerState& b) {
  if (a.step != b.step || a.epoch != b.epoch || a.dataCursor != b.dataCursor || a.seed != b.seed ||
      a.rngOffset != b.rngOffset || a.tokensSeen != b.tokensSeen ||
      a.microBatchHistory != b.microBatchHistory ||
      a.adapter.weights.size() != b.adapter.weights.size() ||
      a.moments.size() != b.moments.size()) {
    return false;
  }
  const train::LoraConfig& ca = a.adapter.config;
  const train::LoraConfig& cb = b.adapter.config;
  if (ca.rank != cb.rank || ca.alpha != cb.alpha || ca.dropout != cb.dropout ||
      ca.useRslora != cb.useRslora || ca.targets != cb.targets || ca.layers != cb.layers) {
    return false;
  }
  for (std::size_t i = 0; i < a.adapter.weights.size(); ++i) {
    const train::LoraWeights& wa = a.adapter.weights[i];
    const train::LoraWeights& wb = b.adapter.weights[i];
    if (wa.site.layer != wb.site.layer || wa.site.module != wb.site.module ||
        wa.site.inFeatures != wb.site.inFeatures || wa.site.outFeatures != wb.site.outFeatures ||
        !bitIdentical(wa.a, wb.a) || !bitIdentical(wa.b, wb.b) ||
        !bitIdentical(a.moments[i].firstA, b.moments[i].firstA) ||
        !bitIdentical(a.moments[i].secondA, b.moments[i].secondA) ||
        !bitIdentical(a.moments[i].firstB, b.moments[i].firstB) ||
        !bitIdentical(a.moments[i].secondB, b.moments[i].secondB)) {
      return false;
    }
  }
  return true;
}

nlohmann::json runConfig() {
  return {{"model_path", kModelDataDir + "/llama_f32_legacy_rope"},
          {"data_path",
           std::string(lstest::sourcePath("tests/train/data")) + "/../../data/data/chat.jsonl"},
          {"lora", {{"r", 4}}},
          {"versions", {{"lorascope", "test"}}}};
}

std::string readText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void writeText(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

train::StepMetrics metricsOf(std::int64_t step) {
  train::StepMetrics m;
  m.step = step;
  m.loss = 1.0 / 3.0 + static_cast<double>(step);
  m.learningRate = 2e-4 * static_cast<double>(step);
  m.gradNorm = 0.1 * static_cast<double>(step);
  m.tokensPerS = 1234.5;
  m.microBatch = 2;
  m.accumulation = 4;
  m.seconds = 0.25;
  m.tokens = 100;
  m.predictedTokens = 80;
  return m;
}

}  // namespace

lstest::TempDir tmp_;
fs::path path(const std::string& name) {
  return fs::path(tmp_.path()) / name;
}

TEST_CASE(safetensorsRoundTripThroughTheStrictReader) {
  const std::vector<float> f32 = {1.5f, -2.0f, 3.25f, 0.0f, 1e-30f, -7.0f};
  const std::vector<std::uint16_t> bf16 = {compute::floatToBf16(1.0f), compute::floatToBf16(-3.0f),
                                           compute::floatToBf16(0.5f)};
  const std::vector<std::uint16_t> f16 = {train::floatToF16(1.0f), train::floatToF16(-0.5f)};
  const std::vector<train::TensorToWrite> tensors = {
      {"z.half", compute::DType::F16, {2}, std::as_bytes(std::span(f16)), {}},
      {"b.brain", compute::DType::BF16, {3}, std::as_bytes(std::span(bf16)), {}},
      train::f32TensorToWrite("a.matrix", {2, 3}, f32),
      {"c.produced",
       compute::DType::F32,
       {1},
       {},
       [] {
         const float v = 42.0f;
         const auto* p = reinterpret_cast<const std::byte*>(&v);
         return std::vector<std::byte>(p, p + 4);
       }},
      train::f32TensorToWrite("d.empty", {0, 4}, {}),
  };
  const fs::path file = path("round.safetensors");
  train::writeSafetensors(file, tensors, {{"format", "pt"}});
  const model::SafetensorsFile read(file.string());
  COMPARE(read.header().tensors.size(), tensors.size());
  COMPARE(read.header().dataOffsetBytes % 8, std::uint64_t{0});  // data 8-byte aligned
  const auto* a = read.find("a.matrix");
  VERIFY(a != nullptr);
  COMPARE(a->shape, (compute::Shape{2, 3}));
  VERIFY(std::memcmp(read.tensor(*a).data(), f32.data(), 24) == 0);
  COMPARE(read.tensor(*read.find("c.produced")).as<float>()[0], 42.0f);
  const auto* b = read.find("b.brain");
  COMPARE(b->dtype, compute::DType::BF16);
  VERIFY(std::memcmp(read.tensor(*b).data(), bf16.data(), 6) == 0);
  COMPARE(read.find("z.half")->dtype, compute::DType::F16);
  COMPARE(read.tensor(*read.find("z.half")).as<std::uint16_t>()[1], std::uint16_t{0xB800});
  // Reference layout: __metadata__ first, F32 tensors before BF16 before F16, then by name.
  const std::string bytes = readText(file);
  const std::string header = bytes.substr(8, read.header().dataOffsetBytes - 8);
  VERIFY(header.rfind("{\"__metadata__\":{\"format\":\"pt\"},\"a.matrix\":{\"dtype\":\"F32\"", 0) ==
         0);
  VERIFY(header.find("\"a.matrix\"") < header.find("\"c.produced\""));
  VERIFY(header.find("\"d.empty\"") < header.find("\"b.brain\""));
  VERIFY(header.find("\"b.brain\"") < header.find("\"z.half\""));
  const std::size_t lastBrace = header.find_last_not_of(' ');
  COMPARE(header[lastBrace], '}');
  VERIFY(header.size() - lastBrace - 1 < 8);  // space padding only up to the alignment
  VERIFY(!fs::exists(file.string() + ".tmp-" + std::to_string(::getpid())));
}

TEST_CASE(safetensorsWriterRejectsBadTensors) {
  const std::vector<float> three = {1, 2, 3};
  const std::vector<train::TensorToWrite> wrongSize = {train::f32TensorToWrite("w", {2, 2}, three)};
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] { train::writeSafetensors(path("bad.safetensors"), wrongSize, {}); },
      "'w' has 12 bytes"));
  const std::vector<train::TensorToWrite> twice = {train::f32TensorToWrite("w", {3}, three),
                                                   train::f32TensorToWrite("w", {3}, three)};
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] { train::writeSafetensors(path("bad.safetensors"), twice, {}); }, "appears twice"));
  VERIFY(!fs::exists(path("bad.safetensors")));
  VERIFY(throwsNaming<std::runtime_error>(
      [&] {
        train::writeSafetensors(path("no/such/dir/x.safetensors"),
                                std::vector{train::f32TensorToWrite("w", {3}, three)}, {});
      },
      "no/such/dir/x.safetensors"));
}

TEST_CASE(f16RoundingMatchesIeee) {
  COMPARE(train::floatToF16(1.0f), std::uint16_t{0x3C00});
  COMPARE(train::floatToF16(-2.0f), std::uint16_t{0xC000});
  COMPARE(train::floatToF16(0.1f), std::uint16_t{0x2E66});
  COMPARE(train::floatToF16(65504.0f), std::uint16_t{0x7BFF});
  COMPARE(train::floatToF16(65519.0f), std::uint16_t{0x7BFF});
  COMPARE(train::floatToF16(65520.0f), std::uint16_t{0x7C00});  // ties to even: overflow
  COMPARE(train::floatToF16(std::ldexp(1.0f, -24)), std::uint16_t{0x0001});
  COMPARE(train::floatToF16(std::ldexp(1.0f, -25)), std::uint16_t{0x0000});     // tie to even 0
  COMPARE(train::floatToF16(std::ldexp(3.0f, -25)), std::uint16_t{0x0002});     // 1.5 → 2
  COMPARE(train::floatToF16(std::ldexp(1023.5f, -24)), std::uint16_t{0x0400});  // → min normal
  COMPARE(train::floatToF16(1.0f + std::ldexp(1.0f, -11)), std::uint16_t{0x3C00});  // tie → even
  COMPARE(train::floatToF16(1.0f + std::ldexp(3.0f, -11)), std::uint16_t{0x3C02});
  COMPARE(train::floatToF16(std::numeric_limits<float>::infinity()), std::uint16_t{0x7C00});
  COMPARE(train::floatToF16(std::nanf("")) & 0x7E00, 0x7E00);
}

TEST_CASE(checkpointRoundTripIsBitExact) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const RunDirectory run = RunDirectory::create(path("roundtrip"), runConfig());
  const TrainerState saved = richState(folder.config(), 7);
  const fs::path dir = run.saveCheckpoint(saved, 3);
  COMPARE(dir, path("roundtrip") / "checkpoints" / "step-7");
  for (const char* file : {"adapter_model.safetensors", "adapter_config.json",
                           "optimizer.safetensors", "lorascope_state.json", "trainer_state.json"}) {
    VERIFY2(fs::exists(dir / file), file);
  }
  const RunDirectory reopened = RunDirectory::open(path("roundtrip"));
  COMPARE(reopened.configHash(), run.configHash());
  const TrainerState loaded = reopened.loadCheckpoint();
  VERIFY(sameState(saved, loaded));
  VERIFY(sameState(saved, reopened.loadCheckpoint(7)));
  // The final adapter is a plain PEFT folder.
  run.saveFinalAdapter(saved.adapter);
  run.saveFinalAdapter(saved.adapter);  // replacing an older one
  VERIFY(fs::exists(run.finalAdapterDir() / "adapter_model.safetensors"));
  COMPARE(fs::path(run.finalAdapterDir()).filename().string(), std::string("adapter"));
}

TEST_CASE(resumeRefusesAChangedConfig) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const RunDirectory run = RunDirectory::create(path("changed"), runConfig());
  run.saveCheckpoint(richState(folder.config(), 3), 0);
  nlohmann::json edited = runConfig();
  edited["lora"]["r"] = 8;
  writeText(path("changed") / "config.json", edited.dump(2));
  VERIFY(
      throwsNaming<CheckpointError>([&] { RunDirectory::open(path("changed")).loadCheckpoint(); },
                                    "differs from the run's config.json"));
  // Versions do not take part in the hash: a newer LoRAscope may resume.
  edited = runConfig();
  edited["versions"]["lorascope"] = "newer";
  writeText(path("changed") / "config.json", edited.dump(2));
  COMPARE(RunDirectory::open(path("changed")).loadCheckpoint().step, std::int64_t{3});
  VERIFY(throwsNaming<CheckpointError>(
      [&] { RunDirectory::open(path("changed")).loadCheckpoint(4); }, "available: 3"));
}

TEST_CASE(resumeRefusesMismatchedOrDamagedFiles) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const RunDirectory run = RunDirectory::create(path("damaged"), runConfig());
  const TrainerState state = richState(folder.config(), 5);
  const fs::path dir = run.saveCheckpoint(state, 0);
  const fs::path optimizer = dir / "optimizer.safetensors";
  const std::string good = readText(optimizer);

  // Moments shaped unlike the adapter (another rank).
  TrainerState other = state;
  other.adapter.config.rank = 2;
  for (train::LoraWeights& w : other.adapter.weights) {
    w.a.resize(w.a.size() / 2);
    w.b.resize(w.b.size() / 2);
  }
  other.moments = train::zeroMoments(other.adapter);
  const fs::path scratch = path("scratch");
  fs::create_directories(scratch);
  train::writeCheckpointFiles(scratch, other, run.configHash(), "m");
  // Its bytes written over the run's (not fs::copy_file: with overwrite_existing, the mingw
  // build's libstdc++ 12 refuses an existing target under Wine, "File exists").
  writeText(optimizer, readText(scratch / "optimizer.safetensors"));
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); }, "expected f32[4,"));

  // Truncated optimizer file.
  writeText(optimizer, good.substr(0, good.size() - 10));
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); }, "optimizer.safetensors"));
  writeText(optimizer, good);

  // Missing adapter file.
  fs::rename(dir / "adapter_model.safetensors", path("moved.safetensors"));
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); },
                                       "adapter_model.safetensors: is missing"));
  fs::rename(path("moved.safetensors"), dir / "adapter_model.safetensors");

  // Malformed lorascope_state.json.
  const std::string stateText = readText(dir / "lorascope_state.json");
  writeText(dir / "lorascope_state.json", stateText.substr(0, stateText.size() / 2));
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); },
                                       "lorascope_state.json: is not a well-formed JSON object"));
  writeText(dir / "lorascope_state.json", stateText);
  COMPARE(run.loadCheckpoint().step, std::int64_t{5});
}

// A run under C:\Users\Łukasz\日本, its model and dataset there too and given as UTF-8 text (as the
// command line and config.json give them), with a file of the user's under such a name in its
// folders: it is created, checkpointed and resumed, and errors name its files as UTF-8 text (on
// Windows, path::string() throws for these names and a narrow string path goes through ANSI).
TEST_CASE(runUnderNonAsciiNamesResumesAndNamesItsFiles) {
  lstest::TempDir tmp;
  const fs::path home = tmp.nonAsciiFolder();
  fs::copy(fs::path(kModelDataDir) / "llama_f32_legacy_rope", home / "model",
           fs::copy_options::recursive);
  fs::copy_file(fs::path(lstest::sourcePath("tests/train/data")) / "../../data/data/chat.jsonl",
                home / "chat.jsonl");
  nlohmann::json config = runConfig();
  config["model_path"] = lstest::utf8Text(home / "model");
  config["data_path"] = lstest::utf8Text(home / "chat.jsonl");
  const model::ModelFolder folder = model::ModelFolder::open(lstest::utf8Text(home / "model"));
  const fs::path runDir = home / "run";
  const RunDirectory run = RunDirectory::create(runDir, config);
  const TrainerState saved = richState(folder.config(), 7);
  const fs::path step = run.saveCheckpoint(saved, 1);
  const fs::path userFile = fs::path(u8"\u65e5\u672c-notes.txt");
  writeText(runDir / userFile, "the user's own file");
  writeText(runDir / "checkpoints" / userFile, "the user's own file");
  const RunDirectory reopened = RunDirectory::open(runDir);
  COMPARE(reopened.checkpointSteps(), (std::vector<std::int64_t>{7}));
  VERIFY(sameState(saved, reopened.loadCheckpoint()));
  reopened.saveFinalAdapter(saved.adapter);
  VERIFY(fs::exists(reopened.finalAdapterDir() / "adapter_model.safetensors"));
  const lstest::Message card{readText(reopened.finalAdapterDir() / "README.md")};
  VERIFY2(card.contains("| Dataset | chat.jsonl |") && card.contains(lstest::kNonAsciiUser) &&
              card.contains(lstest::kNonAsciiSub),
          card.text.c_str());

  // One writer at a time: `run` holds the folder, so a second create or a writer's open is
  // refused naming this process (issue 31 item 3); readers (`reopened`) are not.
  const std::string holder = "is in use: pid " + std::to_string(common::currentProcessId());
  VERIFY(throwsNaming<CheckpointError>([&] { RunDirectory::create(runDir, config); },
                                       lstest::utf8Text(runDir) + ": " + holder));
  VERIFY(throwsNaming<CheckpointError>(
      [&] { RunDirectory::open(runDir, RunDirectory::Access::Write); }, holder));
  VERIFY(
      throwsNaming<CheckpointError>([&] { RunDirectory::open(home / "elsewhere"); },
                                    lstest::utf8Text(home / "elsewhere" / "config.json") +
                                        ": is missing: " + lstest::utf8Text(home / "elsewhere")));
  fs::remove(step / "optimizer.safetensors");
  VERIFY(throwsNaming<CheckpointError>(
      [&] { reopened.loadCheckpoint(7); },
      lstest::utf8Text(step / "optimizer.safetensors") + ": is missing"));
  writeText(runDir / "metrics.jsonl", "{\"step\": \"not a step\"}\n");
  VERIFY(throwsNaming<CheckpointError>(
      [&] { runs::readStepRecords(runDir / "metrics.jsonl"); },
      lstest::utf8Text(runDir / "metrics.jsonl") + ":1: malformed metrics line"));
}

TEST_CASE(microBatchZeroOrNegativeInTrainerStateIsRefusedNotACrash) {
  // Issue 20 item 4: micro_batch 0 or negative in the state file crashed `train --resume`
  // (SIGFPE, SIGSEGV). Edited without its checksum, so that the values themselves are checked.
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const RunDirectory run = RunDirectory::create(path("microbatch"), runConfig());
  const fs::path dir = run.saveCheckpoint(richState(folder.config(), 5), 0);
  const std::string good = readText(dir / "lorascope_state.json");
  for (const int bad : {0, -3}) {
    nlohmann::json doc = nlohmann::json::parse(good);
    doc.erase("checksum");
    doc["micro_batch_history"][1]["micro_batch"] = bad;
    writeText(dir / "lorascope_state.json", doc.dump(2));
    VERIFY(
        throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); }, "micro_batch_history entry"));
  }
  nlohmann::json doc = nlohmann::json::parse(good);
  doc.erase("checksum");
  doc["tokens_seen"] = -1;
  writeText(dir / "lorascope_state.json", doc.dump(2));
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); }, "must not be negative"));
  // With its checksum, any edit is caught as such.
  doc = nlohmann::json::parse(good);
  doc["micro_batch_history"][1]["micro_batch"] = 0;
  writeText(dir / "lorascope_state.json", doc.dump(2));
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); },
                                       "checksum does not match its contents"));
  writeText(dir / "lorascope_state.json", good);
  COMPARE(run.loadCheckpoint().step, std::int64_t{5});
}

TEST_CASE(bitFlipOrNanAdapterIsDetectedAndResumeFallsBackToTheNewestIntact) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const RunDirectory run = RunDirectory::create(path("bitflip"), runConfig());
  run.saveCheckpoint(richState(folder.config(), 4), 0);
  const fs::path newest = run.saveCheckpoint(richState(folder.config(), 8), 0);
  const fs::path adapter = newest / "adapter_model.safetensors";
  const std::string good = readText(adapter);
  std::string flipped = good;
  flipped[flipped.size() - 3] = static_cast<char>(flipped[flipped.size() - 3] ^ 0x04);
  writeText(adapter, flipped);
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(8); }, "differs from fnv1a64:"));
  std::string note;
  const TrainerState fallback =
      run.loadCheckpoint(std::nullopt, [&](const std::string& text) { note = text; });
  COMPARE(fallback.step, std::int64_t{4});
  VERIFY2(note.find("resuming from checkpoint step-4, the newest intact one; skipped: step-8") !=
              std::string::npos,
          note.c_str());
  VERIFY2(note.find("a bit flip") != std::string::npos, note.c_str());

  // A NaN adapter with matching checksums (written by a bug, not flipped) is refused as such.
  TrainerState nan = richState(folder.config(), 8);
  nan.adapter.weights[0].a[0] = std::numeric_limits<float>::quiet_NaN();
  const fs::path scratch = path("nan_scratch");
  fs::create_directories(scratch);
  VERIFY(throwsNaming<std::invalid_argument>(
      [&] { train::writeCheckpointFiles(scratch, nan, run.configHash(), "m"); }, "not finite"));
  writeText(adapter, good);
  COMPARE(run.loadCheckpoint().step, std::int64_t{8});
  // Every checkpoint damaged: the error names each.
  writeText(adapter, flipped);
  writeText(path("bitflip") / "checkpoints" / "step-4" / "optimizer.safetensors", "x");
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); },
                                       "holds no intact checkpoint to resume from: step-8"));
}

TEST_CASE(checkpointWithoutChecksumsStillResumes) {
  // Checkpoints written before checksums existed have no "files" and no "checksum".
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const RunDirectory run = RunDirectory::create(path("old_format"), runConfig());
  const TrainerState saved = richState(folder.config(), 6);
  const fs::path dir = run.saveCheckpoint(saved, 0);
  nlohmann::json doc = nlohmann::json::parse(readText(dir / "lorascope_state.json"));
  VERIFY(doc.contains("files") && doc.contains("checksum"));
  doc.erase("files");
  doc.erase("checksum");
  writeText(dir / "lorascope_state.json", doc.dump(2));
  VERIFY(sameState(run.loadCheckpoint(), saved));
}

TEST_CASE(failedRunBeforeItsFirstCheckpointLeavesAReusableFolder) {
  // Issue 20 item 6: such a folder could be neither reused ("exists ... resume it") nor resumed
  // ("holds no complete checkpoint").
  const fs::path dir = path("early_kill");
  {
    const RunDirectory run = RunDirectory::create(dir, runConfig());
    run.appendMetrics(metricsOf(1));  // a step ran, then the process died before a checkpoint
  }
  fs::create_directories(dir / ".adapter.tmp-999999999");  // a writer that is gone
  VERIFY(throwsNaming<CheckpointError>([&] { RunDirectory::open(dir).loadCheckpoint(); },
                                       "Start it again with the same train command"));
  VERIFY(!fs::exists(dir / ".adapter.tmp-999999999"));  // open() swept it
  {
    const RunDirectory again = RunDirectory::create(dir, runConfig());
    VERIFY(!fs::exists(dir / "metrics.jsonl"));
    VERIFY(runs::readStepRecords(again.dir() / "metrics.jsonl").empty());
    // Once it holds a checkpoint, it is a run to resume, not to overwrite.
    const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
    again.saveCheckpoint(richState(folder.config(), 2), 0);
  }
  VERIFY(throwsNaming<CheckpointError>([&] { RunDirectory::create(dir, runConfig()); },
                                       "resume it with --resume"));
  // A bad model or data path is refused before any folder is made.
  nlohmann::json badModel = runConfig();
  badModel["model_path"] = path("no_such_model").string();
  VERIFY(throwsNaming<CheckpointError>([&] { RunDirectory::create(path("typo"), badModel); },
                                       "not a model folder (check --model)"));
  nlohmann::json runAsModel = runConfig();  // a run's config.json is no model's
  runAsModel["model_path"] = lstest::utf8Text(dir);
  VERIFY(throwsNaming<CheckpointError>(
      [&] { RunDirectory::create(path("typo"), runAsModel); },
      "is a LoRAscope run, not a model folder (check --model): --resume " + lstest::utf8Text(dir) +
          " continues that run; its model is " + runConfig().at("model_path").get<std::string>()));
  nlohmann::json badData = runConfig();
  badData["data_path"] = path("no_such.jsonl").string();
  VERIFY(throwsNaming<CheckpointError>([&] { RunDirectory::create(path("typo"), badData); },
                                       "check --data"));
  VERIFY(!fs::exists(path("typo")));
}

TEST_CASE(aRunGoesOnlyIntoANewEmptyOrRunFolder) {
  // Issue 31 item 1: `--out` wrote config.json into the model's folder and into /etc.
  const fs::path model = fs::path(kModelDataDir) / "llama_f32_legacy_rope";
  const fs::path etc = path("etc_stand_in");
  fs::create_directories(etc / "ssl");
  writeText(etc / "passwd", "root:x:0:0\n");
  writeText(etc / "hosts", "127.0.0.1 localhost\n");
  VERIFY(throwsNaming<CheckpointError>(
      [&] { RunDirectory::create(etc, runConfig()); },
      lstest::utf8Text(etc) + ": is not empty and is not a LoRAscope run: it holds hosts, "
                              "passwd, ssl. A run goes only into a new or empty folder"));
  COMPARE(readText(etc / "passwd"), std::string("root:x:0:0\n"));
  VERIFY(!fs::exists(etc / "config.json") && !fs::exists(etc / "checkpoints"));
  // The model's folder (its config.json is no run's), and a folder inside it, by name.
  const std::string modelConfig = readText(model / "config.json");
  VERIFY(throwsNaming<CheckpointError>([&] { RunDirectory::create(model, runConfig()); },
                                       "is the model's folder"));
  VERIFY(throwsNaming<CheckpointError>(
      [&] { train::checkOutputFolder(model / "runs" / "new", model); }, "is inside the model's"));
  COMPARE(readText(model / "config.json"), modelConfig);
  VERIFY(!fs::exists(model / "runs"));
  // A file is no folder; many names are counted, and control characters are not printed.
  writeText(path("a_file"), "x");
  VERIFY(throwsNaming<CheckpointError>([&] { train::checkOutputFolder(path("a_file"), model); },
                                       "exists and is not a folder"));
  const fs::path crowded = path("crowded");
  fs::create_directories(crowded);
  for (int i = 0; i < 8; ++i)
    writeText(crowded / ("f" + std::to_string(i)), "");
  VERIFY(throwsNaming<CheckpointError>([&] { train::checkOutputFolder(crowded, model); },
                                       "f0, f1, f2, f3, f4 and 3 more"));
  if (common::kOsFamily == common::OsFamily::Posix) {  // Windows names hold no newline
    writeText(crowded / "a\nb", "");
    VERIFY(throwsNaming<CheckpointError>([&] { train::checkOutputFolder(crowded, model); },
                                         "holds a?b, f0, f1, f2, f3 and 4 more"));
  }
  // New, empty, holding only a lock (a run killed as it began), or a run: accepted.
  train::checkOutputFolder(path("not_yet"), model);
  fs::create_directories(path("empty_one"));
  train::checkOutputFolder(path("empty_one"), model);
  writeText(path("empty_one") / "run.lock", "pid=1\n");
  RunDirectory::create(path("empty_one"), runConfig());
  train::checkOutputFolder(path("empty_one"), model);
}

TEST_CASE(keepsTheLastKCheckpoints) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const RunDirectory run = RunDirectory::create(path("rotate"), runConfig());
  // Leftovers of a crash in the middle of a checkpoint are ignored and swept.
  fs::create_directories(path("rotate") / "checkpoints" / ".step-9.tmp-1");
  TrainerState s = richState(folder.config(), 0);
  for (std::int64_t step = 1; step <= 5; ++step) {
    s.step = step;
    run.saveCheckpoint(s, 2);
  }
  COMPARE(run.checkpointSteps(), (std::vector<std::int64_t>{4, 5}));
  VERIFY(!fs::exists(path("rotate") / "checkpoints" / ".step-9.tmp-1"));
  COMPARE(run.loadCheckpoint().step, std::int64_t{5});
  s.step = 5;  // saving the same step again replaces it
  run.saveCheckpoint(s, 2);
  COMPARE(run.checkpointSteps(), (std::vector<std::int64_t>{4, 5}));
  VERIFY(throwsNaming<CheckpointError>(
      [&] { RunDirectory::create(path("empty"), runConfig()).loadCheckpoint(); },
      "holds no complete checkpoint"));
}

TEST_CASE(metricsToleratesATornLastLine) {
  const RunDirectory run = RunDirectory::create(path("metrics"), runConfig());
  for (std::int64_t step = 1; step <= 3; ++step)
    run.appendMetrics(metricsOf(step));
  const fs::path file = path("metrics") / "metrics.jsonl";
  const std::string complete = readText(file);
  writeText(file, complete + "{\"step\": 4, \"loss\": 0.");  // a crash mid-line
  const auto read = runs::readStepRecords(file);
  COMPARE(read.size(), std::size_t{3});
  COMPARE(read[2].step, std::int64_t{3});
  VERIFY(read[0].loss == metricsOf(1).loss);  // doubles round-trip exactly
  COMPARE(read[1].accumulation, std::int64_t{4});
  COMPARE(read[2].predictedTokens, std::int64_t{80});

  run.truncateMetricsAfter(2);  // a resume from step 2 drops later lines and the torn tail
  COMPARE(runs::readStepRecords(file).size(), std::size_t{2});
  run.appendMetrics(metricsOf(3));
  COMPARE(runs::readStepRecords(file).back().step, std::int64_t{3});

  writeText(file, "{\"step\": 1}\n" + complete);  // a bad line that is not the last
  VERIFY(throwsNaming<CheckpointError>([&] { runs::readStepRecords(file); }, "metrics.jsonl:1"));
}

TEST_CASE(createRefusesAnExistingRun) {
  // A run with a checkpoint (one without is reusable:
  // failedRunBeforeItsFirstCheckpointLeavesAReusableFolder).
  RunDirectory::create(path("twice"), runConfig())
      .saveCheckpoint(richState(openFixture("llama_f32_legacy_rope").config(), 1), 0);
  VERIFY(throwsNaming<CheckpointError>([&] { RunDirectory::create(path("twice"), runConfig()); },
                                       "already holds a run"));
  VERIFY(throwsNaming<CheckpointError>([&] { RunDirectory::open(path("nothing-here")); },
                                       "is not a LoRAscope run folder"));
  VERIFY_THROWS_EXCEPTION(std::invalid_argument,
                          RunDirectory::create(path("nomodel"), nlohmann::json::object()));
}

TEST_CASE(resumeFromDiskIsBitIdentical) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto backend = compute::createCpuBackend();
  std::vector<train::TokenizedExample> data;
  std::uint64_t index = 0;
  for (int e = 0; e < 10; ++e) {
    train::TokenizedExample ex;
    for (int t = 0; t < 6 + e % 5; ++t) {
      ex.ids.push_back(static_cast<std::int32_t>(train::uniformBelow(3, 1, index, 300)));
      ex.labels.push_back(t < 2 ? -100 : ex.ids.back());
    }
    data.push_back(std::move(ex));
  }
  train::TrainConfig config;
  config.lora.rank = 4;
  config.lora.dropout = 0.1;
  config.adamw.learningRate = 1e-2;
  config.schedule = train::ScheduleKind::Cosine;
  config.warmupSteps = 1;
  config.microBatchSize = 2;
  config.gradAccumulation = 2;
  config.epochs = 2;
  config.maxSeqLen = 12;

  train::TrainLoop uninterrupted(*backend, folder.config(), folder.weights(), data, config);
  std::vector<double> losses;
  uninterrupted.run([&](const train::StepMetrics& m) { losses.push_back(m.loss); });

  const RunDirectory run = RunDirectory::create(path("resume"), runConfig());
  {
    train::TrainLoop first(*backend, folder.config(), folder.weights(), data, config);
    for (int i = 0; i < 4; ++i)
      run.appendMetrics(first.step());
    run.saveCheckpoint(first.state(), 2);
    run.appendMetrics(first.step());  // a step after the checkpoint, lost by the "crash"
  }
  const RunDirectory reopened = RunDirectory::open(path("resume"));
  train::TrainerState state = reopened.loadCheckpoint();
  reopened.truncateMetricsAfter(state.step);
  train::TrainLoop resumed(*backend, folder.config(), folder.weights(), data, config,
                           std::move(state));
  resumed.run([&](const train::StepMetrics& m) { reopened.appendMetrics(m); });
  const auto metrics = runs::readStepRecords(path("resume") / "metrics.jsonl");
  COMPARE(metrics.size(), losses.size());
  for (std::size_t i = 0; i < losses.size(); ++i) {
    COMPARE(metrics[i].step, static_cast<std::int64_t>(i + 1));
    VERIFY2(metrics[i].loss == losses[i], "step " + std::to_string(i + 1));
  }
  for (std::size_t i = 0; i < uninterrupted.state().adapter.weights.size(); ++i) {
    VERIFY(bitIdentical(resumed.state().adapter.weights[i].a,
                        uninterrupted.state().adapter.weights[i].a));
    VERIFY(bitIdentical(resumed.state().adapter.weights[i].b,
                        uninterrupted.state().adapter.weights[i].b));
    VERIFY(
        bitIdentical(resumed.state().moments[i].secondA, uninterrupted.state().moments[i].secondA));
  }
}

TEST_CASE(hfTrainerStateHoldsLogHistory) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  nlohmann::json config = runConfig();
  config["training"] = {
      {"max_steps", 40}, {"epochs", 3}, {"micro_batch_size", 2}, {"checkpoint_every", 10}};
  const RunDirectory run = RunDirectory::create(path("hf"), config);
  for (std::int64_t step = 1; step <= 3; ++step)
    run.appendMetrics(metricsOf(step));
  const fs::path checkpoint = run.saveCheckpoint(richState(folder.config(), 2), 3);
  for (const fs::path& file :
       {path("hf") / "trainer_state.json", checkpoint / "trainer_state.json"}) {
    const std::string text = readText(file);
    // transformers' save_to_json: indent 2, sorted keys.
    VERIFY2(text.rfind("{\n  \"best_metric\": null,\n  \"best_model_checkpoint\": null,", 0) == 0,
            text.c_str());
    const auto doc = nlohmann::json::parse(text);
    VERIFY(!doc.contains("format_version"));
    COMPARE(doc.at("global_step").get<std::int64_t>(), std::int64_t{2});
    COMPARE(doc.at("max_steps").get<std::int64_t>(), std::int64_t{40});
    COMPARE(doc.at("num_train_epochs").get<std::int64_t>(), std::int64_t{3});
    COMPARE(doc.at("save_steps").get<std::int64_t>(), std::int64_t{10});
    COMPARE(doc.at("train_batch_size").get<std::int64_t>(), std::int64_t{2});
    COMPARE(doc.at("num_input_tokens_seen").get<std::int64_t>(), std::int64_t{987654});
    const auto& history = doc.at("log_history");
    COMPARE(history.size(), std::size_t{2});  // steps after the checkpoint are not in it
    for (std::size_t i = 0; i < 2; ++i) {
      const train::StepMetrics m = metricsOf(static_cast<std::int64_t>(i + 1));
      COMPARE(history[i].at("step").get<std::int64_t>(), m.step);
      VERIFY(history[i].at("loss").get<double>() == m.loss);
      VERIFY(history[i].at("learning_rate").get<double>() == m.learningRate);
      VERIFY(history[i].at("grad_norm").get<double>() == m.gradNorm);
      VERIFY(history[i].at("epoch").is_number_float());
    }
  }
}

TEST_CASE(checkpointsOfTheOldLayoutStillResume) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  const RunDirectory run = RunDirectory::create(path("old"), runConfig());
  const TrainerState saved = richState(folder.config(), 7);
  const fs::path dir = run.saveCheckpoint(saved, 3);
  // Before lorascope_state.json, our state (format_version 1) was trainer_state.json.
  fs::rename(dir / "lorascope_state.json", dir / "trainer_state.json");
  VERIFY(readText(dir / "trainer_state.json").find("\"format_version\"") != std::string::npos);
  VERIFY(sameState(saved, RunDirectory::open(path("old")).loadCheckpoint()));
  COMPARE(train::checkpointConfigHash(dir), run.configHash());
  // Hugging Face's trainer_state.json alone is not our state: the error names ours.
  writeText(dir / "trainer_state.json", "{\"global_step\": 7, \"log_history\": []}");
  VERIFY(throwsNaming<CheckpointError>([&] { run.loadCheckpoint(); }, "lorascope_state.json"));
}

TEST_CASE(tensorboardEventsMirrorMetrics) {
  COMPARE(train::crc32c("123456789"), std::uint32_t{0xe3069283});  // the CRC-32C check value
  const RunDirectory run = RunDirectory::create(path("tb"), runConfig());
  for (std::int64_t step = 1; step <= 3; ++step)
    run.appendMetrics(metricsOf(step));
  const fs::path file = train::tfEventsPath(path("tb"));
  VERIFY2(file.filename().string().rfind("events.out.tfevents.", 0) == 0,
          lorascope::common::pathText(file));
  VERIFY(fs::exists(file));
  auto events = train::readTfEvents(file);
  COMPARE(events.size(), std::size_t{4});
  COMPARE(events[0].fileVersion, std::string("brain.Event:2"));
  for (std::int64_t step = 1; step <= 3; ++step) {
    const train::TfEvent& e = events[static_cast<std::size_t>(step)];
    COMPARE(e.step, step);
    VERIFY(e.wallTime > 1.7e9);
    COMPARE(e.scalars.size(), std::size_t{5});
    COMPARE(e.scalars[0].first, std::string("train/loss"));
    COMPARE(e.scalars[0].second, static_cast<float>(metricsOf(step).loss));
    COMPARE(e.scalars[1].first, std::string("train/learning_rate"));
    COMPARE(e.scalars[1].second, static_cast<float>(metricsOf(step).learningRate));
  }
  // A resume from step 2 drops the later event; the file continues without repeating a step.
  run.truncateMetricsAfter(2);
  COMPARE(train::readTfEvents(file).size(), std::size_t{3});
  run.appendMetrics(metricsOf(3));
  events = train::readTfEvents(file);
  COMPARE(events.size(), std::size_t{4});
  COMPARE(events.back().step, std::int64_t{3});
  COMPARE(train::tfEventsPath(path("tb")), file);  // one file per run folder
}

TEST_CASE(tensorboardEventsRejectDamage) {
  const RunDirectory run = RunDirectory::create(path("tbbad"), runConfig());
  run.appendMetrics(metricsOf(1));
  const fs::path file = train::tfEventsPath(path("tbbad"));
  const std::string good = readText(file);
  // A torn last record (a crash mid-write) is skipped.
  const std::string record = train::tfRecord(train::encodeTfEvent(train::tfEventOf(metricsOf(2))));
  writeText(file, good + record.substr(0, record.size() - 3));
  COMPARE(train::readTfEvents(file).size(), std::size_t{2});
  // A flipped byte inside a record is a CRC error naming the file and the record.
  std::string damaged = good;
  damaged[damaged.size() - 10] ^= 0x01;
  writeText(file, damaged);
  VERIFY(throwsNaming<CheckpointError>([&] { train::readTfEvents(file); },
                                       "data's CRC does not match"));
}

TEST_CASE(finalAdapterHasModelCardAndModelId) {
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  nlohmann::json config = runConfig();
  config["model_id"] = "test-org/tiny-llama";  // --model given as a Hugging Face id
  writeText(path("alpaca_en.jsonl"), "{\"instruction\": \"Hi\", \"output\": \"Hello\"}\n");
  config["data_path"] = path("alpaca_en.jsonl").string();
  const RunDirectory run = RunDirectory::create(path("card"), config);
  COMPARE(run.baseModelName(), std::string("test-org/tiny-llama"));
  COMPARE(run.baseModel(), kModelDataDir + "/llama_f32_legacy_rope");  // still the folder
  for (std::int64_t step = 1; step <= 3; ++step)
    run.appendMetrics(metricsOf(step));
  const TrainerState state = richState(folder.config(), 3);
  const fs::path checkpoint = run.saveCheckpoint(state, 3);
  run.saveFinalAdapter(state.adapter);
  for (const fs::path& dir : {checkpoint, run.finalAdapterDir()}) {
    const auto adapterConfig = nlohmann::json::parse(readText(dir / "adapter_config.json"));
    COMPARE(adapterConfig.at("base_model_name_or_path").get<std::string>(),
            std::string("test-org/tiny-llama"));
  }
  const std::string card = readText(run.finalAdapterDir() / "README.md");
  const std::string version = compute::buildInfo().version;
  for (const std::string& expected :
       {std::string("---\nbase_model: \"test-org/tiny-llama\"\nlibrary_name: peft\n"),
        std::string("- \"base_model:adapter:test-org/tiny-llama\"\n"),
        std::string("| LoRA rank (r) | 4 |"), std::string("| LoRA alpha | 12.5 |"),
        std::string("| LoRA dropout | 0.05 |"), std::string("| rsLoRA | yes |"),
        std::string("| Target modules | q_proj, v_proj, down_proj |"),
        std::string("| Dataset | alpaca_en.jsonl |"), std::string("| Optimizer steps | 3 |"),
        std::string("| Final training loss | 3.3333 |"), std::string("| Tokens trained | 240 |"),
        "### Framework versions\n\n- LoRAscope " + version + "\n"}) {
    VERIFY2(card.find(expected) != std::string::npos, (expected + "\n---\n" + card).c_str());
  }
  // An export of an earlier checkpoint describes that checkpoint.
  fs::create_directories(path("card-export"));
  run.writeModelCard(path("card-export"), state.adapter, 2);
  VERIFY(readText(path("card-export") / "README.md").find("| Optimizer steps | 2 |") !=
         std::string::npos);
  VERIFY(readText(path("card-export") / "README.md").find("| Final training loss | 2.3333 |") !=
         std::string::npos);
}

// gpu_train.cpp — whole-step checks of the GPU trainer against the CPU one. Qt-free, so it builds
// and runs on the device machine; each case is its own CTest test (label gpu):
//   gpu_train weights  weights placed on the GPU: bf16 bytes as stored, f32 rounded to bf16, the
//                      tied lm_head shared, every block freed with them
//   gpu_train parity   50 optimizer steps on the GPU follow the CPU run (tiny Llama and tiny
//                      Qwen2, bf16 weights, so both sides compute on the same numbers), with the
//                      vendor GEMM and with the built-in one
//   gpu_train documents --packing documents: 30 steps of examples packed apart (RoPE positions
//                      from each example's start, the masked attention kernels forward and
//                      backward) on the GPU follow the CPU run, for the tiny Llama and Qwen2,
//                      eagerly and in graph mode (the replays reading each step's documents);
//                      with half of each example a prompt, the captured lm-head gathering each
//                      step's predicted rows
//   gpu_train resume   a GPU run checkpointed at step 15 and resumed on a fresh backend continues
//                      the uninterrupted run's curve
//   gpu_train mirror   the state mirror's snapshot (TrainLoop::snapshotState): taken at a step
//                      boundary and downloaded on the side stream while the next step runs, it
//                      holds that step's state exactly; its device copies are freed once it lands
//   gpu_train export   the adapter of a GPU run passes the CPU tests' PEFT and merge checks
//   gpu_train move     GPU → CPU → GPU at step boundaries: the curve continues, the CPU leg is
//                      bit for bit a CPU run resumed from the same state, device memory is freed
//   gpu_train engine   the engine job's CPU-fallback toggle moves a --device gpu demo run to the
//                      CPU and back; the confirmations say so and metrics.jsonl records each step's
//                      device
//   gpu_train toggles  the engine job's serialize, blocking, GEMM and allocator-policy toggles on a
//                      GPU run; the snapshot shows the arena and every block's owner
//   gpu_train qlora    --quantize nf4 on the GPU: the tiny Llama's projections placed as NF4, 20
//                      steps from the reference adapter follow scripts/reference/qlora_curve.py's
//                      NF4 curve (bf16 weights), with the vendor GEMM and with the built-in one
//   gpu_train families Qwen3, Mistral (sliding window), Gemma 2 and Gemma 3: 20 steps on the GPU
//                      from lora_training.py's adapter and data follow the CPU run on the same
//                      bf16-rounded weights; the distance to PyTorch's fp32 curve is reported
//   gpu_train graph    whole-step graph mode: 50 steps captured and replayed follow the eager
//                      run within 1e-3; switching to eager and back and a micro-batch change at
//                      step boundaries; an injected fault in a replay and in a capture each
//                      leave graph mode, say so, and run the step eagerly on the same curve
// Exit: 0 all checks passed, 1 a check failed, 77 no GPU (SKIP with the reason).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "GpuOrSkip.h"
#include "LoraReference.h"
#include "TestPaths.h"
#include "TrainExamples.h"
#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/Errors.h"
#include "engine/Engine.h"
#include "job/EngineJob.h"  // defines: createTrainingJob
#include "memory/DeviceAllocator.h"
#include "model/DeviceWeights.h"
#include "model/Forward.h"
#include "model/ModelFolder.h"
#include "runtime/LaunchControl.h"
#include "train/Merge.h"
#include "train/PeftExport.h"
#include "train/RunDirectory.h"
#include "train/StateCodec.h"
#include "train/StepGraphs.h"
#include "train/TrainLoop.h"

using namespace lorascope;
namespace fs = std::filesystem;
using compute::GemmImplementation;

namespace {

const std::string kModelDataDir = lstest::sourcePath("tests/model/data");

// Losses of a GPU run (bf16 activations, fp32 accumulation) against the fp32 CPU run: at most
// this fraction of the CPU loss apart at every step. bf16 keeps 8 significant bits (relative
// rounding 2^-9 ≈ 0.2% per op); over two layers and 50 AdamW steps the curves stay well inside 1%.
constexpr double kLossTolerance = 1e-2;
// Two GPU runs of the same state (resume, the GPU leg after a move back) use the same kernels in
// the same order; they are expected to agree to rounding noise at most.
constexpr double kSameDeviceTolerance = 1e-5;

class Checks {
 public:
  void expect(bool ok, const std::string& what) {
    std::printf("%-4s %s\n", ok ? "ok" : "FAIL", what.c_str());
    std::fflush(stdout);
    failed_ += ok ? 0 : 1;
  }
  int failed() const { return failed_; }

 private:
  int failed_ = 0;
};

model::ModelFolder openFixture(const std::string& name) {
  return model::ModelFolder::open(kModelDataDir + "/" + name);
}

std::string format(const char* pattern, double a, double b = 0, double c = 0) {
  char text[256];
  std::snprintf(text, sizeof text, pattern, a, b, c);
  return text;
}

// A temporary folder removed when the case ends.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() /
              ("lorascope-gpu_train-" + name + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// 40 examples, 4 per step: 10 steps per epoch, so 50 steps cross four epoch boundaries (shuffle).
// Dropout is on, so the device's dropout masks are part of what is compared.
train::TrainConfig runConfig(std::int64_t steps) {
  train::TrainConfig c;
  c.lora.rank = 8;
  c.lora.alpha = 16;
  c.lora.dropout = 0.05;
  c.adamw.learningRate = 5e-3;
  c.adamw.weightDecay = 0.01;
  c.schedule = train::ScheduleKind::Cosine;
  c.warmupSteps = 5;
  c.microBatchSize = 2;
  c.gradAccumulation = 2;
  c.maxSteps = steps;
  c.maxSeqLen = 16;
  c.seed = 7;
  return c;
}

std::vector<train::TokenizedExample> runData() {
  return test::syntheticExamples(40, 11);
}

// runData() with the first half of each example's labels a prompt (no target).
std::vector<train::TokenizedExample> promptHalfData() {
  std::vector<train::TokenizedExample> out = runData();
  for (train::TokenizedExample& e : out) {
    std::fill(e.labels.begin(), e.labels.begin() + static_cast<std::ptrdiff_t>(e.labels.size() / 2),
              compute::kIgnoreTarget);
  }
  return out;
}

std::vector<double> runSteps(train::TrainLoop& loop, std::int64_t steps) {
  std::vector<double> losses;
  for (std::int64_t i = 0; i < steps && !loop.finished(); ++i) {
    losses.push_back(loop.step().loss);
  }
  return losses;
}

std::vector<double> cpuLosses(const model::ModelFolder& folder, std::int64_t steps) {
  auto cpu = compute::createCpuBackend();
  train::TrainLoop loop(*cpu, folder.config(), folder.weights(), runData(), runConfig(steps));
  return runSteps(loop, steps);
}

struct Deviation {
  double maxRelative = 0.0;
  std::size_t worstStep = 0;  // 1-based
  std::size_t identical = 0;  // steps equal bit for bit
};

Deviation compareLosses(const std::vector<double>& got, const std::vector<double>& want) {
  Deviation d;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const double relative = std::fabs(got[i] - want[i]) / std::fabs(want[i]);
    if (relative > d.maxRelative) {
      d.maxRelative = relative;
      d.worstStep = i + 1;
    }
    d.identical += got[i] == want[i] ? 1 : 0;
  }
  return d;
}

void expectCurve(Checks& checks, const std::string& what, const std::vector<double>& got,
                 const std::vector<double>& want, double tolerance) {
  const Deviation d = compareLosses(got, want);
  checks.expect(got.size() == want.size() && d.maxRelative <= tolerance,
                what +
                    format(": %.0f steps, max |Δloss|/loss %.3g at step %.0f", double(got.size()),
                           d.maxRelative, double(d.worstStep)) +
                    format(" (tolerance %.3g; %.0f steps bit-identical; first loss %.6f)",
                           tolerance, double(d.identical), got.empty() ? 0.0 : got[0]));
}

std::uint64_t allocatedBytes(compute::Backend& backend) {
  return backend.deviceMemoryUse().value_or(compute::DeviceMemoryUse{}).allocatedBytes;
}

// --- weights --------------------------------------------------------------------------------

std::vector<std::pair<std::string, const compute::Tensor*>> namedWeights(
    const model::ModelWeights& w) {
  std::vector<std::pair<std::string, const compute::Tensor*>> out{{"embed", &w.embed}};
  for (std::size_t i = 0; i < w.layers.size(); ++i) {
    const model::LayerWeights& l = w.layers[i];
    const std::string p = "layers." + std::to_string(i) + ".";
    for (const auto& [name, t] :
         std::vector<std::pair<const char*, const compute::Tensor*>>{{"input_norm", &l.inputNorm},
                                                                     {"q", &l.q},
                                                                     {"k", &l.k},
                                                                     {"v", &l.v},
                                                                     {"q_bias", &l.qBias},
                                                                     {"k_bias", &l.kBias},
                                                                     {"v_bias", &l.vBias},
                                                                     {"o", &l.o},
                                                                     {"o_bias", &l.oBias},
                                                                     {"post_norm", &l.postNorm},
                                                                     {"gate", &l.gate},
                                                                     {"up", &l.up},
                                                                     {"down", &l.down},
                                                                     {"gate_bias", &l.gateBias},
                                                                     {"up_bias", &l.upBias},
                                                                     {"down_bias", &l.downBias}}) {
      if (t->defined()) {
        out.emplace_back(p + name, t);
      }
    }
  }
  out.emplace_back("final_norm", &w.finalNorm);
  out.emplace_back("lm_head", &w.lmHead);
  return out;
}

void caseWeights(Checks& checks) {
  auto gpu = test::requireGpu();
  auto cpu = compute::createCpuBackend();
  const std::uint64_t baseline = allocatedBytes(*gpu);
  for (const char* name :
       {"llama_bf16_sharded_tied", "qwen2_bf16_sharded_linear_rope", "qwen2_f32_tied"}) {
    const model::ModelFolder folder = openFixture(name);
    const model::ModelWeights& host = folder.weights();
    const bool tied = folder.config().tieWordEmbeddings;
    std::uint64_t doneBytes = 0, totalBytes = 0, placedBytes = 0;
    {
      const model::ModelWeights placed =
          model::placeWeights(*gpu, host, [&](std::uint64_t done, std::uint64_t total) {
            doneBytes = done;
            totalBytes = total;
          });
      bool onGpu = true, bitsKept = true;
      std::string firstMismatch;
      const auto hostList = namedWeights(host), placedList = namedWeights(placed);
      for (std::size_t i = 0; i < hostList.size(); ++i) {
        const compute::Tensor& h = *hostList[i].second;
        const compute::Tensor& d = *placedList[i].second;
        // Stored f32 vectors (norm weights, biases) stay f32 on the GPU (Gemma's 1 + w keeps its
        // low bits); every other weight is bf16 there.
        const bool keptF32 = h.dtype() == compute::DType::F32 && h.rank() == 1;
        onGpu = onGpu && d.device() == compute::Device::Gpu &&
                d.dtype() == (keptF32 ? compute::DType::F32 : compute::DType::BF16) &&
                d.shape() == h.shape();
        if (!(tied && hostList[i].first == "lm_head")) {
          placedBytes += d.bytes();
        }
        // Stored bf16 comes back exactly, f32 matrices as their nearest bf16, f32 vectors exactly.
        std::vector<float> want = cpu->download(h);
        if (!keptF32) {
          for (float& x : want) {
            x = compute::roundToBf16(x);
          }
        }
        const std::vector<float> got = gpu->download(d);
        if (std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) != 0 &&
            firstMismatch.empty()) {
          bitsKept = false;
          firstMismatch = hostList[i].first;
        }
      }
      const std::string what = std::string(name) + ": ";
      checks.expect(
          onGpu, what + "every weight is a GPU tensor of its stored shape (bf16; f32 vectors f32)");
      checks.expect(bitsKept, what +
                                  "device values are the stored ones (matrices rounded to bf16)" +
                                  (firstMismatch.empty() ? "" : " (not " + firstMismatch + ")"));
      // Note [stacked q/k/v]: each layer's q, k and v are consecutive rows of its qkv tensor.
      const bool stacked =
          std::all_of(placed.layers.begin(), placed.layers.end(), [](const model::LayerWeights& l) {
            const auto* base = static_cast<const std::byte*>(l.qkv.data());
            return l.qkv.defined() && l.q.data() == base && l.k.data() == base + l.q.bytes() &&
                   l.v.data() == base + l.q.bytes() + l.k.bytes() &&
                   l.qkv.bytes() == l.q.bytes() + l.k.bytes() + l.v.bytes();
          });
      checks.expect(stacked, what + "each layer's q, k and v are the rows of one stacked tensor");
      checks.expect((placed.lmHead.data() == placed.embed.data()) == tied,
                    what + (tied ? "tied lm_head shares the embedding's device storage"
                                 : "untied lm_head has its own device storage"));
      checks.expect(doneBytes == totalBytes && totalBytes > 0,
                    what + format("progress reached %.0f of %.0f stored bytes", double(doneBytes),
                                  double(totalBytes)));
      checks.expect(allocatedBytes(*gpu) >= baseline + placedBytes,
                    what + format("allocator holds ≥ the %.0f bytes placed (%.0f)",
                                  double(placedBytes), double(allocatedBytes(*gpu) - baseline)));
    }
    checks.expect(allocatedBytes(*gpu) == baseline,
                  std::string(name) + ": every block is freed with the placed weights");
  }
}

// --- parity ---------------------------------------------------------------------------------

// The metrics of up to `steps` steps (fewer when the run finishes), saying where a step left graph
// mode.
std::vector<train::StepMetrics> stepMetrics(train::TrainLoop& loop, std::int64_t steps) {
  std::vector<train::StepMetrics> out;
  for (std::int64_t i = 0; i < steps && !loop.finished(); ++i) {
    out.push_back(loop.step());
    if (!out.back().graphFallback.empty()) {
      std::printf("note step %lld: %s\n", static_cast<long long>(out.back().step),
                  out.back().graphFallback.c_str());
    }
  }
  return out;
}

std::vector<double> lossesOf(const std::vector<train::StepMetrics>& metrics) {
  std::vector<double> losses;
  for (const train::StepMetrics& m : metrics) {
    losses.push_back(m.loss);
  }
  return losses;
}

// Returns false (after saying so) when this build has no such GEMM (AMD without hipBLAS).
bool selectGemm(compute::Backend& gpu, GemmImplementation impl) {
  try {
    gpu.setGemmImplementation(impl);
    return true;
  } catch (const compute::UnsupportedOpError& e) {
    std::printf("note %s GEMM not in this build: %s\n", compute::gemmImplementationName(impl),
                e.what());
    return false;
  }
}

void caseParity(Checks& checks) {
  constexpr std::int64_t kSteps = 50;
  auto gpu = test::requireGpu();
  std::printf("note GPU: %s\n", gpu->capabilities().name.c_str());
  for (const char* name : {"llama_bf16_sharded_tied", "qwen2_bf16_sharded_linear_rope"}) {
    const model::ModelFolder folder = openFixture(name);
    const std::vector<double> reference = cpuLosses(folder, kSteps);
    const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
    for (const GemmImplementation impl :
         {GemmImplementation::Vendor, GemmImplementation::BuiltIn}) {
      if (!selectGemm(*gpu, impl)) {
        continue;
      }
      train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
      expectCurve(checks,
                  std::string(name) + ", " + compute::gemmImplementationName(impl) +
                      " GEMM: GPU vs CPU losses",
                  runSteps(loop, kSteps), reference, kLossTolerance);
    }
    // Without dropout a GPU run pads each micro-batch to a multiple of kGpuSequenceMultiple
    // (Note [sequence buckets]) where the CPU pads to the longest row: the same losses. Its
    // weights are placed as a run's are, the LoRA folded into q/k/v's and gate/up's (Note [the
    // LoRA term in the inner dimension]), on either GEMM.
    train::TrainConfig unmasked = runConfig(kSteps);
    unmasked.lora.dropout = 0.0;
    unmasked.maxSeqLen = 32;
    auto cpu = compute::createCpuBackend();
    train::TrainLoop onCpu(*cpu, folder.config(), folder.weights(), runData(), unmasked);
    const std::vector<train::StepMetrics> want = stepMetrics(onCpu, kSteps);
    const model::ModelWeights folded =
        model::placeWeights(*gpu, folder.weights(), {}, model::WeightQuantization::None,
                            train::loraFoldFor(unmasked.lora));
    checks.expect(
        folded.layers[0].qkvFolded.defined() && folded.layers[0].gateUpFolded.defined(),
        std::string(name) + ": q/k/v and gate/up placed with the LoRA's rows and columns");
    if (selectGemm(*gpu, GemmImplementation::BuiltIn)) {
      train::TrainLoop loop(*gpu, folder.config(), folded, runData(), unmasked);
      expectCurve(checks,
                  std::string(name) + ", no dropout, folded, built-in GEMM: GPU vs CPU losses",
                  runSteps(loop, kSteps), lossesOf(want), kLossTolerance);
    }
    if (selectGemm(*gpu, GemmImplementation::Vendor)) {
      train::TrainLoop loop(*gpu, folder.config(), folded, runData(), unmasked);
      const std::vector<train::StepMetrics> got = stepMetrics(loop, kSteps);
      std::int64_t cpuPositions = 0;
      std::int64_t gpuPositions = 0;
      bool bucketed = got.size() == want.size();
      for (std::size_t i = 0; bucketed && i < got.size(); ++i) {
        cpuPositions += want[i].positions;
        gpuPositions += got[i].positions;
        bucketed =
            got[i].tokens == want[i].tokens && got[i].positions % train::kGpuSequenceMultiple == 0;
      }
      checks.expect(
          bucketed && gpuPositions > cpuPositions,
          std::string(name) +
              format(": each step's micro-batches padded to buckets, %.0f positions "
                     "computed where the CPU computed %.0f, for the same tokens",
                     static_cast<double>(gpuPositions), static_cast<double>(cpuPositions)));
      expectCurve(checks, std::string(name) + ", no dropout, padded to buckets: GPU vs CPU losses",
                  lossesOf(got), lossesOf(want), kLossTolerance);
    }
    // Some of a group's projections adapted (PEFT's q_proj/v_proj, and up alone): the others
    // read the folded input with zero LoRA columns in their rows.
    train::TrainConfig some = unmasked;
    some.lora.targets = {train::LoraModule::Q, train::LoraModule::V, train::LoraModule::Up};
    train::TrainLoop someOnCpu(*cpu, folder.config(), folder.weights(), runData(), some);
    const std::vector<double> someWant = runSteps(someOnCpu, kSteps);
    const model::ModelWeights someFolded = model::placeWeights(
        *gpu, folder.weights(), {}, model::WeightQuantization::None, train::loraFoldFor(some.lora));
    if (selectGemm(*gpu, GemmImplementation::Vendor)) {
      train::TrainLoop loop(*gpu, folder.config(), someFolded, runData(), some);
      expectCurve(checks, std::string(name) + ", q, v and up adapted, folded: GPU vs CPU losses",
                  runSteps(loop, kSteps), someWant, kLossTolerance);
    }
  }
}

// --- documents ------------------------------------------------------------------------------

// Packs of up to 32 tokens hold two to eight of runData's examples; the CPU run is the reference
// that tests/train holds equal to the examples run unpacked.
void caseDocuments(Checks& checks) {
  constexpr std::int64_t kSteps = 30;
  auto gpu = test::requireGpu();
  train::TrainConfig config = runConfig(kSteps);
  config.maxSeqLen = 32;
  config.packing = train::Packing::Documents;
  for (const char* name : {"llama_bf16_sharded_tied", "qwen2_bf16_sharded_linear_rope"}) {
    const model::ModelFolder folder = openFixture(name);
    auto cpu = compute::createCpuBackend();
    train::TrainLoop reference(*cpu, folder.config(), folder.weights(), runData(), config);
    const std::vector<double> want = runSteps(reference, kSteps);
    const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
    train::TrainLoop loop(*gpu, folder.config(), placed, runData(), config);
    checks.expect(loop.sequenceCount() < 20,
                  std::string(name) + format(": 40 examples in %.0f packs",
                                             static_cast<double>(loop.sequenceCount())));
    expectCurve(checks, std::string(name) + ", packing documents: GPU vs CPU losses",
                runSteps(loop, kSteps), want, kLossTolerance);
    // Graph mode: every replay reads its step's document starts and positions, so the replayed
    // steps (each packing other examples than the captured one) follow the same curve.
    train::TrainLoop graphed(*gpu, folder.config(), placed, runData(), config);
    graphed.setStepMode(train::StepMode::Graph);
    const std::vector<train::StepMetrics> metrics = stepMetrics(graphed, kSteps);
    expectCurve(checks, std::string(name) + ", packing documents, graph mode: GPU vs CPU losses",
                lossesOf(metrics), want, kLossTolerance);
    const auto replayed = std::count_if(metrics.begin(), metrics.end(),
                                        [](const auto& m) { return m.graph == "replayed"; });
    checks.expect(
        replayed >= kSteps - 4,
        std::string(name) + format(": %.0f of %.0f steps replayed", static_cast<double>(replayed),
                                   static_cast<double>(kSteps)));
    // Half of each example a prompt, eight rows of 32 positions a step: a captured step's
    // lm-head takes the rows the host lists for it (Note [predicted rows in a graph]), 128 of
    // the 256 positions when that holds every predicted one, and replays gather this step's.
    train::TrainConfig eight = config;
    eight.microBatchSize = 8;
    eight.gradAccumulation = 1;
    train::TrainLoop prompted(*cpu, folder.config(), folder.weights(), promptHalfData(), eight);
    const std::vector<double> promptedWant = runSteps(prompted, kSteps);
    train::TrainLoop gathered(*gpu, folder.config(), placed, promptHalfData(), eight);
    gathered.setStepMode(train::StepMode::Graph);
    const std::vector<train::StepMetrics> gatheredMetrics = stepMetrics(gathered, kSteps);
    expectCurve(checks,
                std::string(name) +
                    ", half prompts, graph mode over the predicted rows: GPU vs "
                    "CPU losses",
                lossesOf(gatheredMetrics), promptedWant, kLossTolerance);
    const auto listed =
        std::count_if(gatheredMetrics.begin(), gatheredMetrics.end(), [](const auto& m) {
          return m.graph == "replayed" &&
                 train::graphPredictedRows(m.predictedTokens, m.positions) > 0;
        });
    checks.expect(
        listed >= kSteps / 3,
        std::string(name) + format(": %.0f replays over listed rows", static_cast<double>(listed)));
  }
}

// --- resume ---------------------------------------------------------------------------------

void caseResume(Checks& checks) {
  constexpr std::int64_t kSteps = 40, kInterruptAt = 15;
  const model::ModelFolder folder = openFixture("llama_bf16_sharded_tied");
  std::vector<double> uninterrupted;
  {
    auto gpu = test::requireGpu();
    const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
    train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
    uninterrupted = runSteps(loop, kSteps);
  }
  TempDir tmp("resume");
  const nlohmann::json config = {{"model_path", folder.dir()}, {"case", "gpu_train resume"}};
  const train::RunDirectory run = train::RunDirectory::create(tmp.path() / "run", config);
  std::vector<double> curve;
  {
    auto gpu = test::requireGpu();
    const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
    train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
    curve = runSteps(loop, kInterruptAt);
    run.saveCheckpoint(loop.state(), 0);
  }  // the process's GPU state is gone: backend, weights, LoRA tensors
  auto gpu = test::requireGpu();
  const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
  train::TrainLoop resumed(*gpu, folder.config(), placed, runData(), runConfig(kSteps),
                           train::RunDirectory::open(tmp.path() / "run").loadCheckpoint());
  checks.expect(resumed.state().step == kInterruptAt, "resumed at the checkpoint's step");
  for (const double loss : runSteps(resumed, kSteps - kInterruptAt)) {
    curve.push_back(loss);
  }
  expectCurve(checks, "GPU run resumed from its step-15 checkpoint vs uninterrupted", curve,
              uninterrupted, kSameDeviceTolerance);
}

// --- mirror ---------------------------------------------------------------------------------

// The largest |a − b| over every A, B and moment of two states of the same adapter.
double maxStateDifference(const train::TrainerState& a, const train::TrainerState& b) {
  double worst = 0.0;
  const auto compare = [&worst](const std::vector<float>& x, const std::vector<float>& y) {
    if (x.size() != y.size()) {
      worst = INFINITY;
      return;
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      worst = std::max(worst, static_cast<double>(std::fabs(x[i] - y[i])));
    }
  };
  for (std::size_t i = 0; i < a.adapter.weights.size(); ++i) {
    compare(a.adapter.weights[i].a, b.adapter.weights[i].a);
    compare(a.adapter.weights[i].b, b.adapter.weights[i].b);
    compare(a.moments[i].firstA, b.moments[i].firstA);
    compare(a.moments[i].secondA, b.moments[i].secondA);
    compare(a.moments[i].firstB, b.moments[i].firstB);
    compare(a.moments[i].secondB, b.moments[i].secondB);
  }
  return worst;
}

void caseMirror(Checks& checks) {
  constexpr std::int64_t kSteps = 8;
  const model::ModelFolder folder = openFixture("llama_bf16_sharded_tied");
  auto gpu = test::requireGpu();
  const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
  train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
  train::TrainLoop twin(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
  loop.step();
  twin.step();

  // The snapshot against a synchronous read of the same step, the next step queued before the
  // snapshot is waited for.
  gpu->synchronize();
  const std::uint64_t before = allocatedBytes(*gpu);
  train::PendingTrainerState first = loop.snapshotState();
  const std::uint64_t copies = allocatedBytes(*gpu) - before;
  const std::vector<std::byte> read = train::encodeTrainerState(loop.state());
  loop.step();
  twin.step();
  const train::TrainerState firstState = first.wait();
  checks.expect(train::encodeTrainerState(firstState) == read,
                "the step-1 snapshot, waited for after step 2 was queued, is byte for byte what "
                "state() read at step 1");
  const auto parameters = static_cast<std::uint64_t>(firstState.adapter.parameterCount());
  checks.expect(copies >= 3 * parameters * sizeof(float),
                format("the snapshot's device copies hold the adapter and both moments (%.0f "
                       "bytes allocated for %.0f parameters)",
                       double(copies), double(parameters)));
  gpu->synchronize();
  checks.expect(allocatedBytes(*gpu) <= before,
                "the device copies are freed once the snapshot has landed");

  // No synchronous read at all: the snapshot of step 2, encoded as the writer encodes it, against
  // the twin's step 2 (the same kernels in the same order), and unlike step 3's state, which ran
  // while it downloaded.
  train::PendingTrainerState second = loop.snapshotState();
  loop.step();
  std::vector<std::byte> encoded;
  second.waitEncoded(encoded);  // as the mirror's writer does: straight from the pinned buffer
  const train::TrainerState secondState = train::decodeTrainerState(encoded);
  const double toTwin = maxStateDifference(secondState, twin.state());
  const double toNext = maxStateDifference(secondState, loop.state());
  checks.expect(secondState.step == 2 && toTwin <= 1e-6 && toNext > 100 * toTwin,
                format("the step-2 snapshot is step 2's state (max |Δ| %.3g to the twin run's "
                       "step 2, %.3g to step 3; step %.0f)",
                       toTwin, toNext, double(secondState.step)));
}

// --- export ---------------------------------------------------------------------------------

bool sameAdapter(const train::LoraAdapter& a, const train::LoraAdapter& b) {
  if (a.weights.size() != b.weights.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.weights.size(); ++i) {
    const train::LoraWeights &x = a.weights[i], &y = b.weights[i];
    if (x.site.layer != y.site.layer || x.site.module != y.site.module || x.a != y.a ||
        x.b != y.b) {
      return false;
    }
  }
  return true;
}

void caseExport(Checks& checks) {
  // The f32 Llama of the CPU PEFT tests: its weights are rounded to bf16 on the GPU, the merge
  // folds the adapter into the stored f32 weights.
  const model::ModelFolder folder = openFixture("llama_f32_legacy_rope");
  auto gpu = test::requireGpu();
  const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
  train::TrainConfig config = runConfig(20);
  config.adamw.learningRate = 2e-2;  // move B well away from zero within 20 steps
  train::TrainLoop loop(*gpu, folder.config(), placed, runData(), config);
  runSteps(loop, 20);
  const train::LoraAdapter adapter = loop.state().adapter;

  TempDir tmp("export");
  train::writePeftAdapter(tmp.path() / "adapter", adapter, folder.dir());
  const train::PeftAdapterFiles read = train::readPeftAdapter(tmp.path() / "adapter");
  checks.expect(sameAdapter(read.adapter, adapter) &&
                    read.adapter.config.rank == adapter.config.rank &&
                    read.adapter.config.alpha == adapter.config.alpha &&
                    read.adapter.config.targets == adapter.config.targets &&
                    read.baseModelNameOrPath == folder.dir(),
                "the PEFT adapter folder reads back exactly (weights, r, alpha, targets, base)");
  bool fits = true;
  try {
    train::checkAdapterFitsModel(read.adapter, folder.config(), "adapter_model.safetensors");
  } catch (const std::exception& e) {
    fits = false;
    std::printf("note %s\n", e.what());
  }
  checks.expect(fits, "the exported adapter fits the base model");

  train::mergeAdapterIntoModel(folder.dir(), read.adapter, tmp.path() / "merged");
  const model::ModelFolder merged = model::ModelFolder::open((tmp.path() / "merged").string());
  std::vector<std::int32_t> ids;
  std::uint64_t index = 0;
  for (int i = 0; i < 18; ++i) {
    ids.push_back(static_cast<std::int32_t>(
        train::uniformBelow(3, 1, index, static_cast<std::uint64_t>(folder.config().vocabSize))));
  }
  const model::ForwardInput input{2, 9, ids, ids};
  auto cpu = compute::createCpuBackend();
  train::TrainGraph cpuGraph(*cpu, folder.config(), folder.weights(), read.adapter);
  const train::LossSum withAdapter = cpuGraph.forwardLoss(input);
  const double adapterLoss = withAdapter.sum / static_cast<double>(withAdapter.predictedTokens);
  const double mergedLoss = *model::forward(*cpu, merged.config(), merged.weights(), input).loss;
  const double baseLoss = *model::forward(*cpu, folder.config(), folder.weights(), input).loss;
  checks.expect(std::fabs(adapterLoss - mergedLoss) < 1e-5,
                format("merged model's loss %.7f equals base + adapter's %.7f (CPU, 1e-5)",
                       mergedLoss, adapterLoss));
  checks.expect(std::fabs(baseLoss - mergedLoss) > 1e-3,
                format("the GPU-trained adapter changes the model (base loss %.6f)", baseLoss));
  train::TrainGraph gpuGraph(*gpu, folder.config(), placed, read.adapter);
  const train::LossSum onGpu = gpuGraph.forwardLoss(input);
  const double gpuLoss = onGpu.sum / static_cast<double>(onGpu.predictedTokens);
  checks.expect(std::fabs(gpuLoss - mergedLoss) <= kLossTolerance * mergedLoss,
                format("GPU loss of base + adapter %.6f follows the merged model's %.6f (%.3g)",
                       gpuLoss, mergedLoss, kLossTolerance));
}

// --- move -----------------------------------------------------------------------------------

// Bytes held by blocks of the run (not the backend's own workspace).
std::uint64_t runBytes(compute::Backend& gpu) {
  const memory::AllocatorStats stats = gpu.deviceAllocator()->stats();
  const auto workspace =
      stats.allocatedBytesByOwner[static_cast<std::size_t>(memory::Owner::Workspace)].current;
  return static_cast<std::uint64_t>(stats.allocatedBytes.current - workspace);
}

void caseMove(Checks& checks) {
  constexpr std::int64_t kLeg = 15, kSteps = 3 * kLeg;
  const model::ModelFolder folder = openFixture("qwen2_bf16_sharded_linear_rope");
  const std::vector<double> reference = cpuLosses(folder, kSteps);
  auto gpu = test::requireGpu();
  auto cpu = compute::createCpuBackend();
  const std::uint64_t baseline = runBytes(*gpu);

  std::optional<model::ModelWeights> placed = model::placeWeights(*gpu, folder.weights());
  train::TrainLoop loop(*gpu, folder.config(), *placed, runData(), runConfig(kSteps));
  std::vector<double> curve = runSteps(loop, kLeg);
  const std::uint64_t reservedOnGpu = gpu->deviceMemoryUse()->reservedBytes;
  const std::uint64_t heldOnGpu = runBytes(*gpu);
  const train::TrainerState atMove = loop.state();

  loop.moveTo(*cpu, folder.weights());
  placed.reset();
  checks.expect(heldOnGpu > baseline && runBytes(*gpu) == baseline,
                format("GPU → CPU at step 15: the run's %.0f device bytes are freed (%.0f left)",
                       double(heldOnGpu - baseline), double(runBytes(*gpu) - baseline)));
  gpu->releaseCachedMemory();
  checks.expect(gpu->deviceMemoryUse()->reservedBytes < reservedOnGpu,
                format("the allocator gives its cache back (reserved %.0f → %.0f bytes)",
                       double(reservedOnGpu), double(gpu->deviceMemoryUse()->reservedBytes)));

  const std::vector<double> cpuLeg = runSteps(loop, kLeg);
  train::TrainLoop resumedOnCpu(*cpu, folder.config(), folder.weights(), runData(),
                                runConfig(kSteps), atMove);
  const Deviation exact = compareLosses(cpuLeg, runSteps(resumedOnCpu, kLeg));
  checks.expect(exact.identical == static_cast<std::size_t>(kLeg),
                "the CPU leg equals, bit for bit, a CPU run resumed from the state at the move");
  curve.insert(curve.end(), cpuLeg.begin(), cpuLeg.end());

  placed = model::placeWeights(*gpu, folder.weights());
  loop.moveTo(*gpu, *placed);
  const std::vector<double> gpuLeg = runSteps(loop, kLeg);
  checks.expect(runBytes(*gpu) > baseline, "CPU → GPU at step 30: the run is on the device again");
  curve.insert(curve.end(), gpuLeg.begin(), gpuLeg.end());
  expectCurve(checks, "GPU → CPU → GPU curve vs a CPU run", curve, reference, kLossTolerance);
}

// --- qlora ----------------------------------------------------------------------------------

// The NF4 reference with every base weight rounded to bf16 (as the GPU holds it) leaves the GPU's
// bf16 activations as the only difference: kLossTolerance, the bound of the parity case. The NF4
// curve lies 5e-2 from the unquantised one, so a run that skipped the quantisation fails.
void caseQlora(Checks& checks) {
  auto gpu = test::requireGpu();
  std::printf("note GPU: %s\n", gpu->capabilities().name.c_str());
  const nlohmann::json ref = test::readReference("qlora_llama_f32");
  const std::string fixture = ref["fixture"].get<std::string>();
  const model::ModelFolder folder = openFixture(fixture);
  const model::ModelWeights placed =
      model::placeWeights(*gpu, folder.weights(), {}, model::WeightQuantization::Nf4);
  bool nf4 = true;
  for (const model::LayerWeights& l : placed.layers) {
    for (const compute::Tensor* t : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) {
      nf4 = nf4 && t->dtype() == compute::DType::NF4 && t->device() == compute::Device::Gpu;
    }
  }
  checks.expect(nf4, "every projection is an NF4 tensor on the GPU");
  train::TrainConfig config = test::referenceTrainConfig(ref);
  config.quantization = model::WeightQuantization::Nf4;
  const train::TrainerState start = test::referenceStart(
      test::kTrainDataDir + "/" + fixture + "/lora_init.safetensors", folder.config(), config);
  const auto reference = ref["losses_nf4_bf16_weights"].get<std::vector<double>>();
  const auto float64 = ref["losses_nf4_float64"].get<std::vector<double>>();
  const auto unquantized = ref["losses_unquantized_float64"].get<std::vector<double>>();
  for (const GemmImplementation impl : {GemmImplementation::Vendor, GemmImplementation::BuiltIn}) {
    if (!selectGemm(*gpu, impl)) {
      continue;
    }
    train::TrainLoop loop(*gpu, folder.config(), placed, test::referenceExamples(ref), config,
                          start);
    const std::vector<double> losses = runSteps(loop, config.maxSteps);
    const std::string what = std::string("nf4, ") + compute::gemmImplementationName(impl) + " GEMM";
    expectCurve(checks, what + ": GPU vs qlora_curve.py's NF4 curve (bf16 weights)", losses,
                reference, kLossTolerance);
    std::printf("note %s: max |Δloss|/loss %.3g against the float64 NF4 curve\n", what.c_str(),
                test::maxRelativeDeviation(losses, float64));
    const double fromUnquantized = test::maxRelativeDeviation(losses, unquantized);
    checks.expect(fromUnquantized > kLossTolerance,
                  what + format(": %.3g from the unquantised curve (> %.3g: NF4 was computed)",
                                fromUnquantized, kLossTolerance));
  }
}

// --- families -------------------------------------------------------------------------------

void caseFamilies(Checks& checks) {
  auto gpu = test::requireGpu();
  auto cpu = compute::createCpuBackend();
  std::printf("note GPU: %s\n", gpu->capabilities().name.c_str());
  for (const char* name : {"qwen3_f32", "mistral_f32_sliding", "gemma2_f32", "gemma3_f32"}) {
    const nlohmann::json ref = test::readReference(name);
    const model::ModelFolder folder = openFixture(name);
    const train::TrainConfig config = test::referenceTrainConfig(ref);
    const train::TrainerState start = test::referenceStart(
        test::kTrainDataDir + "/" + name + "/lora_init.safetensors", folder.config(), config);
    const std::vector<train::TokenizedExample> examples = test::referenceExamples(ref);
    const model::ModelWeights rounded = model::roundedAsOnGpu(*cpu, folder.weights());
    train::TrainLoop onCpu(*cpu, folder.config(), rounded, examples, config, start);
    const std::vector<double> cpuCurve = runSteps(onCpu, config.maxSteps);
    const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
    train::TrainLoop onGpu(*gpu, folder.config(), placed, examples, config, start);
    const std::vector<double> gpuCurve = runSteps(onGpu, config.maxSteps);
    expectCurve(checks, std::string(name) + ": GPU vs CPU on the same bf16 weights", gpuCurve,
                cpuCurve, kLossTolerance);
    std::printf(
        "note %s: max |Δloss|/loss %.3g against PyTorch's fp32 curve (f32 weights)\n", name,
        test::maxRelativeDeviation(gpuCurve, ref["losses_float64"].get<std::vector<double>>()));
  }
}

// --- engine ---------------------------------------------------------------------------------

void caseEngine(Checks& checks) {
  test::requireGpu();  // the job makes its own backend; without a GPU the case skips
  TempDir tmp("engine");
  const nlohmann::json config = {
      {"demo", true},
      {"out", (tmp.path() / "run").string()},
      {"options", {{"device", "gpu"}, {"steps", 5}, {"checkpoint-every", 0}}}};
  const std::unique_ptr<engine::EngineJob> job =
      job::createTrainingJob(config, [](const engine::TimedEvent&) {});
  engine::CancelFlag cancel;
  // Each step is announced, so that a run that dies (the first device run was SIGKILLed after
  // the move to the CPU) shows how far it got.
  const auto step = [&] {
    const std::optional<engine::StepEvent> done = job->runStep(cancel);
    std::printf("note step %lld done, loss %.4f\n",
                done ? static_cast<long long>(done->step) : -1LL, done ? done->loss : 0.0);
    std::fflush(stdout);
  };
  step();
  step();
  const std::string toCpu = job->applyToggle(engine::Toggle::CpuFallback, true);
  checks.expect(toCpu.find(" to cpu") != std::string::npos &&
                    toCpu.find("MiB of device memory released") != std::string::npos,
                "cpu_fallback on after step 2: \"" + toCpu + "\"");
  checks.expect(job->applyToggle(engine::Toggle::CpuFallback, true).empty(),
                "cpu_fallback on again: nothing to move, nothing to report");
  step();
  step();
  const std::string toGpu = job->applyToggle(engine::Toggle::CpuFallback, false);
  checks.expect(toGpu.find("moved the run from cpu") != std::string::npos,
                "cpu_fallback off after step 4: \"" + toGpu + "\"");
  step();
  std::string devices;
  for (const train::StepMetrics& m :
       runs::readStepRecords(tmp.path() / "run" / train::kMetricsFile)) {
    devices += std::string(devices.empty() ? "" : ",") + m.device;
  }
  checks.expect(job->finished() && devices == "gpu,gpu,cpu,cpu,gpu",
                "metrics.jsonl records where each of the 5 steps ran: " + devices);
}

// The live GPU toggles of the engine job: serialize and blocking reach the launch policy, the
// GEMM switches to the built-in kernel, arena mode gives the allocator a planned arena at the
// next step; snapshots carry the owner of every block.
void caseToggles(Checks& checks) {
  test::requireGpu();  // the job makes its own backend; without a GPU the case skips
  TempDir tmp("toggles");
  const nlohmann::json config = {
      {"demo", true},
      {"out", (tmp.path() / "run").string()},
      {"options", {{"device", "gpu"}, {"steps", 4}, {"checkpoint-every", 0}}}};
  const std::unique_ptr<engine::EngineJob> job =
      job::createTrainingJob(config, [](const engine::TimedEvent&) {});
  engine::CancelFlag cancel;
  job->runStep(cancel);
  checks.expect(job->applyToggle(engine::Toggle::Serialize, true).empty() &&
                    job->applyToggle(engine::Toggle::Blocking, true).empty(),
                "serialize and blocking are accepted on a GPU run");
  const runtime::LaunchPolicy policy = runtime::launchControl().policy();
  checks.expect(policy.serialize && policy.blocking, "the launch policy has both set");
  checks.expect(job->applyToggle(engine::Toggle::GemmBackend, "builtin").empty(),
                "gemm_backend builtin is accepted");
  const std::string arena = job->applyToggle(engine::Toggle::AllocatorPolicy, "arena");
  checks.expect(arena.find("arena of") != std::string::npos, "allocator_policy arena: " + arena);
  job->runStep(cancel);
  job->runStep(cancel);
  const std::optional<engine::SnapshotEvent> snapshot = job->snapshot();
  checks.expect(snapshot.has_value(), "a GPU run has a snapshot");
  std::set<std::string> owners;
  bool arenaSegment = false;
  if (snapshot) {
    for (const nlohmann::json& segment : snapshot->snapshot.at("segments")) {
      arenaSegment = arenaSegment || segment.at("pool") == "arena";
      for (const nlohmann::json& block : segment.at("blocks")) {
        if (block.contains("owner")) {
          owners.insert(block.at("owner").get<std::string>());
        }
      }
    }
  }
  checks.expect(arenaSegment, "after the toggle and a step the allocator holds an arena segment");
  for (const char* owner : {"weights", "lora", "grads", "optimizer"}) {
    checks.expect(owners.count(owner) == 1,
                  std::string("the snapshot has blocks owned by ") + owner);
  }
  runtime::launchControl().setPolicy({});
  job->runStep(cancel);
  checks.expect(job->finished(), "the run finishes with serialize, blocking and the built-in GEMM");
}

// --- graph ------------------------------------------------------------------------------------

// Whole-step graph mode (train/StepGraphs.h) against eager steps on the same GPU: 50 steps of the
// parity run (dropout on, two micro-batches per step) with the graph captured at step 2 and
// replayed after; a switch to eager and back, and a micro-batch change (a new shape) in the
// middle; an injected fault in a replay and one in a capture: each leaves graph mode, says so,
// and the step runs eagerly on the same curve.

std::string graphRuns(const std::vector<train::StepMetrics>& metrics, std::size_t first,
                      std::size_t count) {
  std::string runs;
  for (std::size_t i = first; i < std::min(metrics.size(), first + count); ++i) {
    runs += (runs.empty() ? "" : ",") + (metrics[i].graph.empty() ? "eager" : metrics[i].graph);
  }
  return runs;
}

// The engine job with --graph on a GPU demo run: the toggle off and on again at step
// boundaries, confirmed; an injected fault in a replay becomes an incident and graph mode's
// toggle_applied false; the run goes on.
void caseGraphEngine(Checks& checks) {
  TempDir tmp("graph-engine");
  const nlohmann::json config = {
      {"demo", true},
      {"out", (tmp.path() / "run").string()},
      {"options", {{"device", "gpu"}, {"steps", 9}, {"checkpoint-every", 0}, {"graph", true}}}};
  std::vector<engine::TimedEvent> events;
  const std::unique_ptr<engine::EngineJob> job = job::createTrainingJob(
      config, [&events](const engine::TimedEvent& e) { events.push_back(e); });
  engine::CancelFlag cancel;
  job->runStep(cancel);
  job->runStep(cancel);
  job->runStep(cancel);
  const std::string off = job->applyToggle(engine::Toggle::Graph, false);
  checks.expect(off == "eager steps from step 4", "graph off after step 3: \"" + off + "\"");
  job->runStep(cancel);
  const std::string on = job->applyToggle(engine::Toggle::Graph, true);
  checks.expect(on == "graph mode from step 5", "graph on after step 4: \"" + on + "\"");
  // Steps 5 (warm-up) and 6 (captured: the replay is step_graph #1), 7 (#2) faults.
  runtime::launchControl().faults().configure(runtime::parseFaultSpec("oom@step_graph#2"));
  for (int i = 0; i < 5; ++i) {
    job->runStep(cancel);
  }
  job->settle();
  runtime::launchControl().faults().configure({});
  std::string incident;
  bool confirmedOff = false;
  for (const engine::TimedEvent& e : events) {
    if (const auto* i = std::get_if<engine::IncidentEvent>(&e.event)) {
      if (i->what.find("graph mode off") != std::string::npos) {
        incident = i->what + " → " + i->action + " (step " + std::to_string(i->step) + ")";
      }
    }
    if (const auto* t = std::get_if<engine::ToggleAppliedEvent>(&e.event)) {
      confirmedOff = confirmedOff ||
                     (t->toggle == engine::Toggle::Graph && t->value == false && !incident.empty());
    }
  }
  checks.expect(incident.find("step 7") != std::string::npos,
                "the fault in step 7's replay is an incident: " + incident);
  checks.expect(confirmedOff, "and graph mode is confirmed off after it");
  checks.expect(job->finished(), "the run finishes its 9 steps");
}

// runData() with every example 16 tokens long (its tokens repeated): no micro-batch is padded, so
// graph mode's steps have the eager steps' shapes.
std::vector<train::TokenizedExample> fullLengthData() {
  std::vector<train::TokenizedExample> out = runData();
  for (train::TokenizedExample& e : out) {
    const std::size_t n = e.ids.size();
    for (std::size_t t = n; t < 16; ++t) {
      e.ids.push_back(e.ids[t % n]);
      e.labels.push_back(e.ids.back());
    }
  }
  return out;
}

void caseGraph(Checks& checks) {
  constexpr std::int64_t kSteps = 50;
  // With the eager steps' shapes a graph computes what they compute, bit for bit (issue 26 asks
  // within 1e-3; until the optimizer kernels were compiled without FMA contraction, Note
  // [optimizer without FMA] in compute/hip/optimizer.hip, they were 1.15e-3 apart).
  constexpr double kGraphTolerance = 0.0;
  // Padded to 16 positions where eager pads to the micro-batch's longest row, the products'
  // shapes differ, and with them at times the last bit of a rounding, which 50 steps of this tiny
  // model at lr 5e-3 amplify (7e-4 on the H200, 2.1e-3 with the faults below): the bf16
  // tolerance of the parity case.
  constexpr double kPaddedTolerance = kLossTolerance;
  auto gpu = test::requireGpu();
  std::printf("note GPU: %s\n", gpu->capabilities().name.c_str());
  checks.expect(gpu->canCapture(), "the GPU backend can capture");
  const model::ModelFolder folder = openFixture("qwen2_bf16_sharded_linear_rope");
  const model::ModelWeights placed = model::placeWeights(*gpu, folder.weights());
  std::vector<double> eager;
  {
    train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
    eager = runSteps(loop, kSteps);
  }
  {
    train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
    loop.setStepMode(train::StepMode::Graph);
    const std::vector<train::StepMetrics> graph = stepMetrics(loop, kSteps);
    expectCurve(checks, "graph mode vs eager, 50 steps, padded", lossesOf(graph), eager,
                kPaddedTolerance);
    const std::string runs = graphRuns(graph, 0, 4);
    checks.expect(runs == "warm-up,captured,replayed,replayed", "how the first steps ran: " + runs);
    std::size_t replayed = 0;
    for (const train::StepMetrics& m : graph) {
      replayed += m.graph == "replayed" ? 1 : 0;
    }
    checks.expect(replayed == kSteps - 2, format("%.0f of 50 steps replayed", double(replayed)));
  }
  std::vector<double> eagerMicro1;  // the eager run with micro-batch 1 from step 21
  {
    train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
    eagerMicro1 = runSteps(loop, 20);
    loop.setMicroBatchSize(1, "graph case");
    for (const double loss : runSteps(loop, kSteps)) {
      eagerMicro1.push_back(loss);
    }
  }
  {  // toggles at step boundaries
    train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
    loop.setStepMode(train::StepMode::Graph);
    std::vector<train::StepMetrics> mixed = stepMetrics(loop, 10);
    loop.setStepMode(train::StepMode::Eager);  // the graph toggle off: eager from the next step
    for (const auto& m : stepMetrics(loop, 5)) {
      mixed.push_back(m);
    }
    loop.setStepMode(train::StepMode::Graph);  // on again: a new warm-up and capture
    for (const auto& m : stepMetrics(loop, 5)) {
      mixed.push_back(m);
    }
    loop.setMicroBatchSize(1, "graph case");  // another shape: warm-up and capture again
    for (const auto& m : stepMetrics(loop, kSteps)) {
      mixed.push_back(m);
    }
    expectCurve(checks, "graph, eager, graph, micro-batch 1 vs the same eagerly, 50 steps",
                lossesOf(mixed), eagerMicro1, kPaddedTolerance);
    const std::string runs = graphRuns(mixed, 9, 8) + " | " + graphRuns(mixed, 20, 3);
    checks.expect(runs ==
                      "replayed,eager,eager,eager,eager,eager,warm-up,captured | "
                      "warm-up,captured,replayed",
                  "toggled at steps 10, 15 and 20: " + runs);
  }
  {  // an injected fault in the third replay, then one in a capture
    runtime::LaunchControl& control = runtime::launchControl();
    train::TrainLoop loop(*gpu, folder.config(), placed, runData(), runConfig(kSteps));
    loop.setStepMode(train::StepMode::Graph);
    control.faults().configure(runtime::parseFaultSpec("blas@step_graph#3"));
    std::vector<train::StepMetrics> faulted = stepMetrics(loop, 6);
    const train::StepMetrics& hit = faulted[3];  // step 4: the third replay
    checks.expect(hit.graphFallback.find("graph mode off") != std::string::npos &&
                      hit.graphFallback.find("injected") != std::string::npos && hit.graph.empty(),
                  "step 4's replay faulted and ran eagerly: \"" + hit.graphFallback + "\"");
    checks.expect(loop.stepMode() == train::StepMode::Eager && faulted[5].graph.empty(),
                  "graph mode is off after the fault");
    // The adamw launch of step 7 (graph mode on again: a warm-up) is eager; step 8's is captured.
    control.faults().configure(runtime::parseFaultSpec("blas@adamw#2"));
    loop.setStepMode(train::StepMode::Graph);
    for (const auto& m : stepMetrics(loop, kSteps)) {
      faulted.push_back(m);
    }
    control.faults().configure({});
    const train::StepMetrics& captureHit = faulted[7];
    checks.expect(captureHit.graphFallback.find("graph mode off") != std::string::npos &&
                      captureHit.graph.empty(),
                  "step 8's capture faulted and ran eagerly: \"" + captureHit.graphFallback + "\"");
    expectCurve(checks, "graph mode with two faults vs eager, 50 steps", lossesOf(faulted), eager,
                kPaddedTolerance);
  }
  {  // the eager steps' shapes: the same numbers
    train::TrainLoop eagerLoop(*gpu, folder.config(), placed, fullLengthData(), runConfig(kSteps));
    const std::vector<double> want = runSteps(eagerLoop, kSteps);
    train::TrainLoop loop(*gpu, folder.config(), placed, fullLengthData(), runConfig(kSteps));
    loop.setStepMode(train::StepMode::Graph);
    expectCurve(checks, "graph mode vs eager, 50 steps, unpadded, bit for bit",
                lossesOf(stepMetrics(loop, kSteps)), want, kGraphTolerance);
  }
  caseGraphEngine(checks);
}

}  // namespace

int main(int argc, char** argv) {
  const std::map<std::string, std::function<void(Checks&)>> cases = {
      {"weights", caseWeights},   {"parity", caseParity},   {"resume", caseResume},
      {"mirror", caseMirror},     {"export", caseExport},   {"move", caseMove},
      {"engine", caseEngine},     {"toggles", caseToggles}, {"qlora", caseQlora},
      {"families", caseFamilies}, {"graph", caseGraph},     {"documents", caseDocuments}};
  const auto it = argc == 2 ? cases.find(argv[1]) : cases.end();
  if (it == cases.end()) {
    std::fprintf(stderr,
                 "usage: gpu_train "
                 "weights|parity|resume|mirror|export|move|engine|toggles|qlora|families|graph|"
                 "documents\n");
    return 2;
  }
  Checks checks;
  try {
    it->second(checks);
  } catch (const test::NoGpu& none) {
    return test::skipWithoutGpu(std::string("gpu_train ") + argv[1], none.reason);
  } catch (const std::exception& e) {
    checks.expect(false, std::string("gpu_train ") + argv[1] + " threw: " + e.what());
  }
  return checks.failed() == 0 ? 0 : 1;
}

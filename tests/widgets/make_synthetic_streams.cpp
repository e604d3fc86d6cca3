// make_synthetic_streams.cpp — writes the SYNTHETIC event streams the widget tests replay.
//
// They are made here, by formula, not recorded from a trainer (none runs yet): the file names say
// "synthetic" and the app never shows them. Each line is an engine protocol event, encoded by
// engine::encodeEvent, so the tests exercise the same decoding as a real engine's output.
//   make_synthetic_streams <dir>          writes <dir>/synthetic_gpu_run.jsonl and
//                                         <dir>/synthetic_cpu_run.jsonl
//   make_synthetic_streams --check <dir>  exits 1 when the files there differ from what it makes
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numbers>
#include <sstream>
#include <string>

#include "engine/Protocol.h"

using namespace lorascope::engine;

namespace {

constexpr std::uint64_t kMiB = 1024ull * 1024ull;
constexpr std::int64_t kStepIntervalMs = 500;
constexpr std::int64_t kSampleIntervalMs = 250;
constexpr int kSteps = 120;

// Six decimals: the files stay the same whatever libm's last bit says.
double rounded(double v) {
  return std::round(v * 1e6) / 1e6;
}

double lossAt(int step) {  // a decaying curve with a deterministic wiggle
  return rounded(2.6 * std::exp(-step / 60.0) + 0.9 + 0.05 * std::sin(step * 1.7));
}

double learningRateAt(int step) {  // 10 warm-up steps, then cosine decay
  const double peak = 2e-4;
  if (step < 10)
    return rounded(peak * (step + 1) / 10.0);
  return rounded(peak * 0.5 * (1.0 + std::cos(std::numbers::pi * (step - 10) / (kSteps - 10))));
}

nlohmann::json snapshotJson() {
  using nlohmann::json;
  // Segment 1: weights and LoRA, fully used. Segment 2: activations with a free split between.
  // Segment 3: cached and entirely free.
  json weights = {{"address", 0x7f0000000000ull}, {"size", 256 * kMiB},
                  {"requested_size", 256 * kMiB}, {"state", "active_allocated"},
                  {"owner", "weights"},           {"step", 0}};
  json lora = {{"address", 0x7f0010000000ull}, {"size", 64 * kMiB}, {"requested_size", 63 * kMiB},
               {"state", "active_allocated"},  {"owner", "lora"},   {"step", 0}};
  json seg1 = {{"address", 0x7f0000000000ull},          {"total_size", 320 * kMiB},
               {"allocated_size", 320 * kMiB},          {"active_size", 320 * kMiB},
               {"requested_size", 319 * kMiB},          {"segment_type", "large"},
               {"blocks", json::array({weights, lora})}};
  json act = {{"address", 0x7f1000000000ull}, {"size", 96 * kMiB},
              {"requested_size", 90 * kMiB},  {"state", "active_allocated"},
              {"owner", "activations"},       {"step", 117}};
  json split = {{"address", 0x7f1006000000ull},
                {"size", 16 * kMiB},
                {"requested_size", 0},
                {"state", "inactive"}};
  json optim = {{"address", 0x7f1007000000ull}, {"size", 16 * kMiB},
                {"requested_size", 16 * kMiB},  {"state", "active_allocated"},
                {"owner", "optimizer"},         {"step", 1}};
  json seg2 = {{"address", 0x7f1000000000ull},
               {"total_size", 128 * kMiB},
               {"allocated_size", 112 * kMiB},
               {"active_size", 112 * kMiB},
               {"requested_size", 106 * kMiB},
               {"segment_type", "large"},
               {"blocks", json::array({act, split, optim})}};
  json freeBlock = {{"address", 0x7f2000000000ull},
                    {"size", 2 * kMiB},
                    {"requested_size", 0},
                    {"state", "inactive"}};
  json seg3 = {{"address", 0x7f2000000000ull},
               {"total_size", 2 * kMiB},
               {"allocated_size", 0},
               {"active_size", 0},
               {"requested_size", 0},
               {"segment_type", "small"},
               {"blocks", json::array({freeBlock})}};
  return {{"segments", json::array({seg1, seg2, seg3})},
          {"device", {{"name", "synthetic device"}, {"total_bytes", 8192 * kMiB}}}};
}

void writeRun(std::ostream& out, bool gpu) {
  auto emit = [&](std::int64_t t, Event e) { out << encodeEvent({t, std::move(e)}) << '\n'; };
  HelloEvent hello{kProtocolVersion, "0.1.0", gpu ? "hip-amd" : "cpu", {}};
  if (gpu)
    hello.devices.push_back({"synthetic device", "gfx1100", 8192 * kMiB});
  emit(0, hello);
  emit(0, StateEvent{RunState::Starting, 0, "synthetic stream"});
  emit(100, StateEvent{RunState::Running, 0, ""});
  emit(150, LogEvent{LogLevel::Info, "synthetic stream: made by make_synthetic_streams"});
  const std::int64_t endMs = kSteps * kStepIntervalMs;
  for (std::int64_t t = kSampleIntervalMs; t <= endMs; t += kSampleIntervalMs) {
    const double phase = static_cast<double>(t) / 1000.0;
    MemoryEvent m;
    const auto wave = static_cast<std::uint64_t>(rounded(1.0 + std::sin(phase)) * 32.0) * kMiB;
    m.hostRssBytes = 900 * kMiB + wave / 4;
    m.hostAvailableBytes = 12000 * kMiB;
    if (gpu) {
      m.allocatedBytes = 400 * kMiB + wave;
      m.reservedBytes = 450 * kMiB + wave;
      m.largestFreeBytes = 16 * kMiB + wave / 8;
      m.fragmentation = rounded(0.2 + 0.1 * std::sin(phase / 3.0));
      m.driverUsedBytes = *m.reservedBytes + 700 * kMiB;
      m.driverTotalBytes = 8192 * kMiB;
      m.heldOutsideBytes = 700 * kMiB;
      emit(t, m);
      QueueEvent q{{{"compute", static_cast<std::int64_t>(t / kSampleIntervalMs % 7)},
                    {"copy", static_cast<std::int64_t>(t / kSampleIntervalMs % 3)}}};
      emit(t, q);
    } else {
      emit(t, m);  // CPU run: the allocator and driver readings are absent, not zero
    }
    if (t % kStepIntervalMs == 0) {
      const int step = static_cast<int>(t / kStepIntervalMs);
      emit(t,
           StepEvent{step, lossAt(step), learningRateAt(step), rounded(1.0 + 0.01 * step),
                     rounded(gpu ? 5200.0 + 40.0 * std::sin(step) : 310.0 + 3.0 * std::sin(step)),
                     step > 40 && gpu ? 2 : 4, step > 40 && gpu ? 8 : 4});
      if (gpu && step == 40) {
        emit(t + 1, ToggleAppliedEvent{Toggle::Serialize, true, 40});
        emit(t + 2, ToggleAppliedEvent{Toggle::MicroBatch, 2, 40});
      }
      if (step == 50) {
        emit(t + 3, CheckpointEvent{"runs/synthetic/checkpoints/step-50", 50});
      }
      if (gpu && step == 79) {
        emit(t + 4,
             ErrorEvent{"blas", "matmul(q_proj, backward)", 7, "HIPBLAS_STATUS_INTERNAL_ERROR",
                        "switch the GEMM backend to "
                        "built-in",
                        true});
      }
      if (gpu && step == 80) {
        emit(t + 5, IncidentEvent{"engine stopped by a sticky BLAS error at step 79",
                                  "switched to built-in GEMM; resumed from step 79", 80});
        emit(t + 6, ToggleAppliedEvent{Toggle::GemmBackend, "builtin", 80});
        emit(t + 7, LogEvent{LogLevel::Warning, "resumed on the built-in GEMM"});
      }
    }
  }
  if (gpu) {
    emit(endMs + 10, SnapshotEvent{snapshotJson()});
  }
  emit(endMs + 20, CheckpointEvent{"runs/synthetic/checkpoints/step-120", kSteps});
  emit(endMs + 30, StateEvent{RunState::Finished, kSteps, ""});
}

std::string runText(bool gpu) {
  std::ostringstream out;
  writeRun(out, gpu);
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  const bool check = argc == 3 && std::string(argv[1]) == "--check";
  if (argc != 2 && !check) {
    std::fprintf(stderr, "usage: make_synthetic_streams [--check] <dir>\n");
    return 2;
  }
  const std::string dir = argv[argc - 1];
  int status = 0;
  for (bool gpu : {true, false}) {
    const std::string path = dir + (gpu ? "/synthetic_gpu_run.jsonl" : "/synthetic_cpu_run.jsonl");
    const std::string text = runText(gpu);
    if (check) {
      std::ifstream in(path, std::ios::binary);
      std::ostringstream existing;
      existing << in.rdbuf();
      if (existing.str() != text) {
        std::fprintf(stderr, "%s is out of date: rerun make_synthetic_streams %s\n", path.c_str(),
                     dir.c_str());
        status = 1;
      }
    } else {
      std::ofstream(path, std::ios::binary) << text;
    }
  }
  return status;
}

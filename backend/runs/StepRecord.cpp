// runs/StepRecord.cpp — the metrics.jsonl line of a step, written and read.
#include "runs/StepRecord.h"

#include <limits>

#include "common/OsError.h"  // defines: pathText
#include "runs/RunFileError.h"

namespace lorascope::runs {
using nlohmann::json;

json toJson(const StepRecord& m) {
  json out = {{"step", m.step},
              {"loss", m.loss},
              {"lr", m.learningRate},
              {"grad_norm", m.gradNorm},
              {"tokens_per_s", m.tokensPerS},
              {"micro_batch", m.microBatch},
              {"accumulation", m.accumulation},
              {"epoch", m.epoch},
              {"seconds", m.seconds},
              {"cycle_seconds", m.cycleSeconds},
              {"compute_tokens_per_s", m.computeTokensPerS},
              {"tokens", m.tokens},
              {"positions", m.positions},
              {"predicted_tokens", m.predictedTokens},
              {"device", m.device}};
  // JSON has no NaN: a loss or norm that is not finite is written as null, with the reason.
  if (!m.nonFinite.empty()) {
    out["non_finite"] = m.nonFinite;
  }
  if (m.eval) {
    out["eval_loss"] = m.eval->loss;  // null when not finite, as the loss
    out["eval_predicted_tokens"] = m.eval->predictedTokens;
    out["eval_sequences"] = m.eval->sequences;
    out["eval_batches"] = m.eval->batches;
    out["eval_seconds"] = m.eval->seconds;
  }
  return out;
}

namespace {
double numberOrNaN(const json& j, const char* key) {
  const json& v = j.at(key);
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}
}  // namespace

StepRecord stepRecordFromJson(const json& j) {
  StepRecord m;
  m.step = j.at("step").get<std::int64_t>();
  m.loss = numberOrNaN(j, "loss");
  m.learningRate = j.at("lr").get<double>();
  m.gradNorm = numberOrNaN(j, "grad_norm");
  m.nonFinite = j.value("non_finite", std::string());
  m.tokensPerS = j.at("tokens_per_s").get<double>();
  m.microBatch = j.at("micro_batch").get<std::int64_t>();
  m.accumulation = j.at("accumulation").get<std::int64_t>();
  m.epoch = j.value("epoch", std::int64_t{0});
  m.seconds = j.value("seconds", 0.0);
  // Lines written before the step cycle was measured: tokens_per_s was the compute's.
  m.cycleSeconds = j.value("cycle_seconds", m.seconds);
  m.computeTokensPerS = j.value("compute_tokens_per_s", m.tokensPerS);
  m.tokens = j.value("tokens", std::int64_t{0});
  m.predictedTokens = j.value("predicted_tokens", std::int64_t{0});
  m.positions = j.value("positions", std::int64_t{0});  // 0: a line from before it was written
  // Lines written before runs could move between devices were all CPU steps.
  m.device = j.value("device", "cpu") == "gpu" ? "gpu" : "cpu";
  if (j.contains("eval_loss")) {
    EvalRecord eval;
    eval.step = m.step;
    eval.loss = numberOrNaN(j, "eval_loss");
    eval.predictedTokens = j.value("eval_predicted_tokens", std::int64_t{0});
    eval.sequences = j.value("eval_sequences", std::int64_t{0});
    eval.batches = j.value("eval_batches", std::int64_t{0});
    eval.seconds = j.value("eval_seconds", 0.0);
    m.eval = eval;
  }
  return m;
}

std::vector<StepRecord> readStepRecords(const std::filesystem::path& file) {
  if (!std::filesystem::exists(file)) {
    return {};
  }
  const std::string text = readRunFile(file);
  std::vector<StepRecord> out;
  std::size_t start = 0;
  int lineNumber = 0;
  while (start < text.size()) {
    const std::size_t newline = text.find('\n', start);
    const bool terminated = newline != std::string::npos;
    const std::string line = text.substr(start, terminated ? newline - start : std::string::npos);
    start = terminated ? newline + 1 : text.size();
    ++lineNumber;
    if (line.empty()) {
      continue;
    }
    try {
      out.push_back(stepRecordFromJson(json::parse(line)));
    } catch (const json::exception& e) {
      if (!terminated) {
        break;  // the torn last line of a crash
      }
      throw RunFileError(common::pathText(file) + ":" + std::to_string(lineNumber),
                         std::string("malformed metrics line: ") + e.what());
    }
  }
  return out;
}

}  // namespace lorascope::runs

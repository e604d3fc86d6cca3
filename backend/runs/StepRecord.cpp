// runs/StepRecord.cpp — the metrics.jsonl line of a step, written and read.
#include "runs/StepRecord.h"

#include <cmath>

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
              {"seconds", m.seconds},
              {"cycle_seconds", m.cycleSeconds},
              {"tokens", m.tokens},
              {"positions", m.positions},
              {"predicted_tokens", m.predictedTokens},
              {"device", m.device}};
  // A whole epoch is written as an integer, as our trainer's lines have always held it; one that
  // is not finite is not known.
  if (m.epoch && std::isfinite(*m.epoch)) {
    const double whole = std::floor(*m.epoch);
    if (whole == *m.epoch && std::abs(whole) < 1e15) {  // exact in an int64
      out["epoch"] = static_cast<std::int64_t>(whole);
    } else {
      out["epoch"] = *m.epoch;
    }
  }
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
  if (m.computeTokensPerS > 0) {  // 0: not known (a supervised command's step)
    out["compute_tokens_per_s"] = m.computeTokensPerS;
  }
  if (m.replayed) {
    out["replayed"] = true;
  }
  if (m.totalSteps > 0) {
    out["total_steps"] = m.totalSteps;
  }
  return out;
}

StepRecord readStepRecord(const common::JsonReader& f) {
  StepRecord m;
  m.step = f.integer("step");
  m.loss = f.numberOrNaN("loss");
  m.learningRate = f.number("lr");
  m.gradNorm = f.numberOrNaN("grad_norm");
  m.nonFinite = f.stringOr("non_finite", "");
  m.tokensPerS = f.number("tokens_per_s");
  m.microBatch = f.integer("micro_batch");
  m.accumulation = f.integer("accumulation");
  m.replayed = f.booleanOr("replayed", false);
  m.totalSteps = f.integerOr("total_steps", 0);
  if (f.has("epoch")) {  // absent: not known (a supervised command's step, the first versions)
    m.epoch = f.number("epoch");
  }
  m.seconds = f.numberOr("seconds", 0.0);
  // Lines written before the step cycle was measured: tokens_per_s was the compute's. Since,
  // the compute's figure is there whenever it is known.
  const bool cycleMeasured = f.has("cycle_seconds");
  m.cycleSeconds = f.numberOr("cycle_seconds", m.seconds);
  m.computeTokensPerS = f.numberOr("compute_tokens_per_s", cycleMeasured ? 0.0 : m.tokensPerS);
  m.tokens = f.integerOr("tokens", 0);
  m.predictedTokens = f.integerOr("predicted_tokens", 0);
  m.positions = f.integerOr("positions", 0);  // 0: a line from before it was written
  // Lines written before runs could move between devices were all CPU steps.
  m.device = f.stringOr("device", "cpu") == "gpu" ? "gpu" : "cpu";
  if (f.has("eval_loss")) {
    EvalRecord eval;
    eval.step = m.step;
    eval.loss = f.numberOrNaN("eval_loss");
    eval.predictedTokens = f.integerOr("eval_predicted_tokens", 0);
    eval.sequences = f.integerOr("eval_sequences", 0);
    eval.batches = f.integerOr("eval_batches", 0);
    eval.seconds = f.numberOr("eval_seconds", 0.0);
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
    // A torn last line (a crash mid-write) is skipped; a bad line elsewhere is an error.
    const std::string where = common::pathText(file) + ":" + std::to_string(lineNumber);
    const json parsed = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!terminated && (parsed.is_discarded() || !parsed.is_object()))
      break;
    const auto malformed = [&](const std::string& problem) {
      throw RunFileError(where, "malformed metrics line: " + problem);
    };
    try {
      if (parsed.is_discarded())
        malformed("not JSON");
      out.push_back(readStepRecord(common::JsonReader(parsed, "", malformed)));
    } catch (const RunFileError&) {
      if (!terminated)
        break;
      throw;
    }
  }
  return out;
}

}  // namespace lorascope::runs

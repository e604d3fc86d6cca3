// test_step_record.cpp — the metrics.jsonl line of a step: written byte for byte as before, read
// back whole, and lines of older versions read as those versions meant them.
#include "TempDir.h"
#include "TestRunner.h"

#include <cmath>
#include <fstream>
#include <limits>

#include "ExpectError.h"
#include "runs/RunFileError.h"
#include "runs/StepRecord.h"

using namespace lorascope;
namespace fs = std::filesystem;

namespace {

// A line read as metrics.jsonl's and the protocol's readers read it (their errors aside).
runs::StepRecord readLine(const std::string& text) {
  const nlohmann::json line = nlohmann::json::parse(text);
  return runs::readStepRecord(common::JsonReader(line, "line: "));
}

runs::StepRecord sampleRecord() {
  runs::StepRecord r;
  r.step = 12;
  r.epoch = 1;
  r.loss = 2.5;
  r.learningRate = 0.0002;
  r.gradNorm = 0.75;
  r.tokensPerS = 1500.0;
  r.seconds = 0.5;
  r.cycleSeconds = 0.625;
  r.computeTokensPerS = 1875.0;
  r.tokens = 900;
  r.positions = 1024;
  r.predictedTokens = 640;
  r.microBatch = 2;
  r.accumulation = 4;
  r.device = "gpu";
  return r;
}

void writeText(const fs::path& file, const std::string& text) {
  std::ofstream(file, std::ios::binary) << text;
}

}  // namespace

TEST_CASE(aStepIsWrittenAsTheLineMetricsFilesHold) {
  // The keys and their order are what every metrics.jsonl since the step cycle holds (sorted:
  // nlohmann's object order); a change here breaks the files other tools read.
  COMPARE(runs::toJson(sampleRecord()).dump(),
          std::string("{\"accumulation\":4,\"compute_tokens_per_s\":1875.0,\"cycle_seconds\":0.625,"
                      "\"device\":\"gpu\",\"epoch\":1,\"grad_norm\":0.75,\"loss\":2.5,"
                      "\"lr\":0.0002,\"micro_batch\":2,\"positions\":1024,\"predicted_tokens\":640,"
                      "\"seconds\":0.5,\"step\":12,\"tokens\":900,\"tokens_per_s\":1500.0}"));
}

TEST_CASE(aStepWithEvaluationAndASkippedUpdateRoundTrips) {
  runs::StepRecord r = sampleRecord();
  r.loss = std::numeric_limits<double>::quiet_NaN();
  r.nonFinite = "loss is nan: update skipped (1 of 3 in a row stop the run)";
  r.eval = runs::EvalRecord{12, 1.875, 6, 3, 320, 0.25};
  const nlohmann::json line = runs::toJson(r);
  VERIFY(line.dump().find("\"loss\":null") != std::string::npos);  // JSON has no NaN
  const runs::StepRecord back = readLine(line.dump());
  VERIFY(std::isnan(back.loss));
  COMPARE(back.nonFinite, r.nonFinite);
  COMPARE(back.step, r.step);
  COMPARE(back.device, std::string("gpu"));
  COMPARE(back.cycleSeconds, r.cycleSeconds);
  VERIFY(back.eval.has_value());
  COMPARE(back.eval->step, std::int64_t{12});
  COMPARE(back.eval->loss, 1.875);
  COMPARE(back.eval->sequences, std::int64_t{6});
  COMPARE(back.eval->batches, std::int64_t{3});
  COMPARE(back.eval->predictedTokens, std::int64_t{320});
  COMPARE(back.eval->seconds, 0.25);
}

TEST_CASE(linesOfOlderVersionsReadAsTheyWereMeant) {
  // The first metrics lines: no epoch, timing, token counts or device.
  const runs::StepRecord first =
      readLine(R"({"step":3,"loss":1.5,"lr":0.001,"grad_norm":0.5,"tokens_per_s":800,)"
               R"("micro_batch":1,"accumulation":8})");
  COMPARE(first.step, std::int64_t{3});
  VERIFY(!first.epoch.has_value());           // not recorded: not known
  COMPARE(first.device, std::string("cpu"));  // runs could not move between devices then
  COMPARE(first.positions, std::int64_t{0});
  COMPARE(first.computeTokensPerS, 800.0);  // tokens_per_s was the compute's
  // Before the step cycle: the cycle was the step's own time.
  const runs::StepRecord timed =
      readLine(R"({"step":4,"loss":1.5,"lr":0.001,"grad_norm":0.5,"tokens_per_s":800,)"
               R"("micro_batch":1,"accumulation":8,"seconds":0.25,"device":"gpu"})");
  COMPARE(timed.cycleSeconds, 0.25);
  COMPARE(timed.computeTokensPerS, 800.0);
  // Since the cycle is measured, a line or event without the compute's figure does not know it.
  const runs::StepRecord unknown =
      readLine(R"({"step":5,"loss":1.5,"lr":0.001,"grad_norm":0.5,"tokens_per_s":800,)"
               R"("micro_batch":0,"accumulation":0,"seconds":0.25,"cycle_seconds":0.25})");
  COMPARE(unknown.computeTokensPerS, 0.0);
  COMPARE(timed.device, std::string("gpu"));
  VERIFY(!timed.eval.has_value());
  // A line without a required key, or with one of the wrong type, is no step record.
  VERIFY(lorascope::test::throwsWith<common::JsonError>([] { readLine(R"({"step":1,"loss":1})"); },
                                                        {"line: lr: missing"}));
  VERIFY(lorascope::test::throwsWith<common::JsonError>(
      [] {
        readLine(R"({"step":1,"loss":1,"lr":0.1,"grad_norm":1,"tokens_per_s":5,)"
                 R"("micro_batch":2.5,"accumulation":1})");
      },
      {"line: micro_batch: must be a whole number"}));
}

TEST_CASE(anAnnouncementAddsReplayedAndTotalStepsOnlyWhenSet) {
  runs::StepRecord r = sampleRecord();
  VERIFY(!runs::toJson(r).contains("replayed") && !runs::toJson(r).contains("total_steps"));
  r.replayed = true;
  r.totalSteps = 100;
  const runs::StepRecord back = readLine(runs::toJson(r).dump());
  VERIFY(back.replayed);
  COMPARE(back.totalSteps, std::int64_t{100});
}

TEST_CASE(anEpochIsWrittenOnlyWhenKnownAndRoundTrips) {
  // A supervised command's step whose output says no epoch: no key, and none read back.
  runs::StepRecord r = sampleRecord();
  r.epoch.reset();
  VERIFY(!runs::toJson(r).contains("epoch"));
  VERIFY(!readLine(runs::toJson(r).dump()).epoch.has_value());
  // A Hugging Face Trainer's fractional epoch, as its log dict printed it ('epoch': '0.3333').
  r.epoch = 0.3333;
  VERIFY(runs::toJson(r).dump().find("\"epoch\":0.3333,") != std::string::npos);
  COMPARE(readLine(runs::toJson(r).dump()).epoch.value_or(-1.0), 0.3333);
  // A whole epoch stays an integer in the line, as our trainer's have always held it.
  r.epoch = 2.0;
  VERIFY(runs::toJson(r).dump().find("\"epoch\":2,") != std::string::npos);
  COMPARE(readLine(runs::toJson(r).dump()).epoch.value_or(-1.0), 2.0);
  // Not finite is not known (JSON has no NaN).
  r.epoch = std::numeric_limits<double>::quiet_NaN();
  VERIFY(!runs::toJson(r).contains("epoch"));
}

TEST_CASE(aMetricsFileIsReadUpToATornLastLine) {
  const lstest::TempDir tmp;
  const fs::path file = tmp.path() / "metrics.jsonl";
  VERIFY(runs::readStepRecords(file).empty());  // no file: no steps yet
  std::string text;
  for (std::int64_t step = 1; step <= 3; ++step) {
    runs::StepRecord r = sampleRecord();
    r.step = step;
    text += runs::toJson(r).dump() + "\n";
  }
  writeText(file, text + "{\"step\": 4, \"loss\": 0.");  // a crash mid-line
  const std::vector<runs::StepRecord> steps = runs::readStepRecords(file);
  COMPARE(steps.size(), std::size_t{3});
  COMPARE(steps.back().step, std::int64_t{3});
  writeText(file, "{\"step\": 1}\n" + text);  // a bad line that is not the last
  VERIFY(lorascope::test::throwsWith<runs::RunFileError>(
      [&] { runs::readStepRecords(file); },
      {lstest::utf8Text(file) + ":1: malformed metrics line: loss: missing"}));
  writeText(file, text + "not json\n" + text);
  VERIFY(lorascope::test::throwsWith<runs::RunFileError>(
      [&] { runs::readStepRecords(file); },
      {lstest::utf8Text(file) + ":4: malformed metrics line: not JSON"}));
}

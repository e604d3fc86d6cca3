// test_dataset_report.cpp — the validation report: counts, issues with lines, duplicates,
// token-length distribution, what truncate / drop cost, progress, JSON field names, the text
// form, bad files; and a realistic report of the shared alpaca fixtures (skipped when absent).
#include "TestRunner.h"

#include <filesystem>
#include <fstream>
#include <numeric>

#include "DataTestUtil.h"
#include "TempDir.h"
#include "TestPaths.h"
#include "data/LengthStats.h"
#include "data/Validator.h"

using namespace lorascope::data;
using namespace lorascope::data::test;
using lorascope::text::ChatTemplate;
using lorascope::text::Tokenizer;

namespace {

ExampleEncoder alpacaEncoder() {
  return ExampleEncoder(
      Tokenizer::fromFile(std::filesystem::path(lstest::sourcePath("tests/text/data")) /
                          "qwen2_bpe.tokenizer.json"),
      ChatTemplate::byName("alpaca"));
}

// Token lengths of the valid examples of `path`, encoded without a length limit.
std::vector<std::size_t> directLengths(const std::filesystem::path& path,
                                       const ExampleEncoder& encoder) {
  std::vector<std::size_t> lengths;
  for (const Example& example : readAll(path).examples) {
    lengths.push_back(encoder.encode(example, {false, 0, OverLengthPolicy::Truncate}).ids.size());
  }
  return lengths;
}

}  // namespace

TEST_CASE(countsIssuesAndDuplicatesOfABrokenFile) {
  const ValidationReport report =
      validateDataset(fixture("alpaca_broken_line.jsonl"), ValidateOptions{});
  COMPARE(report.container, Container::Jsonl);
  COMPARE(report.lines, std::size_t{7});
  COMPARE(report.blankLines, std::size_t{1});
  COMPARE(report.jsonRecords, std::size_t{5});
  COMPARE(report.recordsByFormat.at("alpaca"), std::size_t{5});
  COMPARE(report.validExamples, std::size_t{4});
  COMPARE(report.errorCounts.at("json_error"), std::size_t{1});
  COMPARE(report.errorCounts.at("no_response"), std::size_t{1});
  COMPARE(report.warningCounts.at("duplicate"), std::size_t{1});
  COMPARE(report.duplicateExamples, std::size_t{1});
  COMPARE(report.duplicates.size(), std::size_t{1});
  COMPARE(report.duplicates[0].first.line, std::size_t{1});
  COMPARE(report.duplicates[0].copies[0].line, std::size_t{5});
  // Issues come sorted by their place in the file.
  COMPARE(report.issues[0].where.line, std::size_t{3});
  COMPARE(report.issues[1].where.line, std::size_t{5});
  COMPARE(report.issues[2].where.line, std::size_t{6});
  VERIFY(!report.tokens.has_value());
}

TEST_CASE(tokenLengthsMatchTheEncoder) {
  const ExampleEncoder encoder = alpacaEncoder();
  ValidateOptions options;
  options.encoder = &encoder;
  options.encode.maxSeqLen = 0;
  const ValidationReport report = validateDataset(fixture("alpaca_broken_line.jsonl"), options);
  std::vector<std::size_t> lengths = directLengths(fixture("alpaca_broken_line.jsonl"), encoder);
  std::sort(lengths.begin(), lengths.end());
  VERIFY(report.tokens.has_value());
  const LengthSummary& l = report.tokens->lengths;
  COMPARE(l.examples, std::size_t{4});
  COMPARE(l.minTokens, lengths.front());
  COMPARE(l.maxTokens, lengths.back());
  COMPARE(l.p50Tokens, lengths[1]);  // nearest rank: ceil(0.5 * 4) = 2nd
  COMPARE(l.totalTokens, std::accumulate(lengths.begin(), lengths.end(), std::uint64_t{0}));
  COMPARE(report.tokens->trainedTokens + report.tokens->maskedTokens, l.totalTokens);
  COMPARE(report.tokens->chatTemplate, std::string("alpaca"));
}

TEST_CASE(truncateAndDropReportWhatTheyCost) {
  const ExampleEncoder encoder = alpacaEncoder();
  const std::vector<std::size_t> lengths =
      directLengths(fixture("alpaca_broken_line.jsonl"), encoder);
  // One token more than the longest prompt: truncation cuts responses, never a whole one.
  std::size_t longestPrompt = 0;
  for (const Example& example : readAll(fixture("alpaca_broken_line.jsonl")).examples) {
    const EncodedExample full = encoder.encode(example, {false, 0, OverLengthPolicy::Truncate});
    longestPrompt = std::max(longestPrompt, full.ids.size() - full.trainedTokens());
  }
  const std::size_t max = longestPrompt + 1;
  std::size_t over = 0;
  std::uint64_t tokensOver = 0;
  std::uint64_t tokensOfLongOnes = 0;
  for (const std::size_t n : lengths) {
    if (n > max) {
      ++over;
      tokensOver += n - max;
      tokensOfLongOnes += n;
    }
  }
  VERIFY(over > 0);
  ValidateOptions options;
  options.encoder = &encoder;
  options.encode.maxSeqLen = max;
  options.encode.policy = OverLengthPolicy::Truncate;
  const TokenReport truncated =
      *validateDataset(fixture("alpaca_broken_line.jsonl"), options).tokens;
  COMPARE(truncated.examplesOverMax, over);
  COMPARE(truncated.tokensOverMax, tokensOver);
  COMPARE(truncated.tokensLost, tokensOver);
  COMPARE(truncated.examplesDropped, std::size_t{0});
  COMPARE(truncated.examplesKept, std::size_t{4});
  VERIFY(truncated.trainedTokensLost > 0);  // alpaca responses sit at the end

  options.encode.policy = OverLengthPolicy::Drop;
  const TokenReport dropped = *validateDataset(fixture("alpaca_broken_line.jsonl"), options).tokens;
  COMPARE(dropped.examplesOverMax, over);
  COMPARE(dropped.examplesDropped, over);
  COMPARE(dropped.examplesDroppedNoTrainedTokens, std::size_t{0});
  COMPARE(dropped.tokensLost, tokensOfLongOnes);
  COMPARE(dropped.examplesKept, 4 - over);
  COMPARE(dropped.tokensKept + dropped.tokensLost, dropped.lengths.totalTokens);
}

TEST_CASE(progressEndsAtTheFileSize) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> calls;
  ValidateOptions options;
  options.progress = [&calls](std::uint64_t read, std::uint64_t total) {
    calls.emplace_back(read, total);
  };
  const auto path = fixture("alpaca_array_bad_element.json");
  validateDataset(path, options);
  VERIFY(!calls.empty());
  COMPARE(calls.back().first, std::filesystem::file_size(path));
  COMPARE(calls.back().second, std::filesystem::file_size(path));
}

TEST_CASE(jsonHasStableFieldNames) {
  const ExampleEncoder encoder = alpacaEncoder();
  ValidateOptions options;
  options.encoder = &encoder;
  const nlohmann::json j =
      validateDataset(fixture("alpaca_array_bad_element.json"), options).toJson();
  COMPARE(j["schema"].get<std::string>(), std::string("lorascope.validate-data/1"));
  COMPARE(j["container"].get<std::string>(), std::string("json_array"));
  COMPARE(j["format"].get<std::string>(), std::string("alpaca"));
  COMPARE(j["format_source"].get<std::string>(), std::string("detected"));
  COMPARE(j["records"]["valid_examples"].get<int>(), 3);
  COMPARE(j["errors"]["by_kind"]["json_error"].get<int>(), 2);
  const nlohmann::json& first = j["issues"][0];
  COMPARE(first["kind"].get<std::string>(), std::string("json_error"));
  COMPARE(first["severity"].get<std::string>(), std::string("error"));
  COMPARE(first["element"].get<int>(), 1);
  COMPARE(first["line"].get<int>(), 8);
  VERIFY(first["byte_offset"].is_number());
  for (const char* key : {"min_tokens", "p50_tokens", "p90_tokens", "p99_tokens", "max_tokens",
                          "mean_tokens", "histogram", "trained_tokens", "masked_tokens"}) {
    VERIFY2(j["tokens"].contains(key), key);
  }
  COMPARE(j["tokens"]["max_seq_len"]["tokens"].get<int>(), 2048);
  COMPARE(j["tokens"]["max_seq_len"]["policy"].get<std::string>(), std::string("truncate"));
}

TEST_CASE(textReportNamesProblemsAndCounts) {
  const std::string text =
      validateDataset(fixture("alpaca_invalid_utf8.jsonl"), ValidateOptions{}).toText();
  VERIFY(text.find("Format: alpaca (detected)") != std::string::npos);
  VERIFY(text.find("invalid_utf8 1") != std::string::npos);
  VERIFY(text.find("invalid UTF-8 at line 2, byte 77") != std::string::npos);
  VERIFY(text.find("Tokens: not counted") != std::string::npos);
}

TEST_CASE(emptyFileGivesAReportNotAnError) {
  const ValidationReport report = validateDataset(fixture("empty.jsonl"), ValidateOptions{});
  COMPARE(report.container, Container::Empty);
  COMPARE(report.validExamples, std::size_t{0});
  COMPARE(report.warningCounts.at("structure"), std::size_t{1});
  VERIFY(report.toText().find("the file is empty") != std::string::npos);
}

TEST_CASE(missingFileIsTheOnlyFatalError) {
  VERIFY_THROWS_EXCEPTION(DatasetError,
                          validateDataset(fixture("missing.jsonl"), ValidateOptions{}));
}

// A dataset under C:\Users\Łukasz\日本: it is read like the same file elsewhere; the report's file
// (its JSON and text) and the errors hold the path as UTF-8 text (path::string() throws there).
TEST_CASE(datasetUnderNonAsciiNamesIsReadAndNamed) {
  lstest::TempDir dir;
  const std::filesystem::path file = dir.nonAsciiFolder() / "train.jsonl";
  std::filesystem::copy_file(fixture("alpaca_broken_line.jsonl"), file);
  const std::string text = lstest::utf8Text(file);
  const ValidationReport report = validateDataset(file, ValidateOptions{});
  COMPARE(report.validExamples, std::size_t{4});
  COMPARE(report.errorCounts.at("json_error"), std::size_t{1});
  COMPARE(report.file, text);
  COMPARE(report.toJson().at("file").get<std::string>(), text);
  VERIFY2(report.toText().find("Dataset: " + text) != std::string::npos, report.toText().c_str());

  const std::filesystem::path missing = file.parent_path() / "missing.jsonl";
  try {
    validateDataset(missing, ValidateOptions{});
    FAIL("expected DatasetError");
  } catch (const DatasetError& e) {
    VERIFY2(lstest::Message{e.what()}.contains(lstest::utf8Text(missing) + ": cannot open"),
            e.what());
  }
  std::ofstream(file, std::ios::binary | std::ios::trunc) << "\xff\xfe{";  // UTF-16
  try {
    validateDataset(file, ValidateOptions{});
    FAIL("expected DatasetError");
  } catch (const DatasetError& e) {
    VERIFY2(lstest::Message{e.what()}.contains(text + ": is UTF-16"), e.what());
  }
}

TEST_CASE(lengthSummaryUsesNearestRankAndHalfOctaveBins) {
  std::vector<std::size_t> lengths(100);
  std::iota(lengths.begin(), lengths.end(), std::size_t{1});  // 1..100
  const LengthSummary s = summariseLengths(lengths);
  COMPARE(s.minTokens, std::size_t{1});
  COMPARE(s.p50Tokens, std::size_t{50});
  COMPARE(s.p90Tokens, std::size_t{90});
  COMPARE(s.p99Tokens, std::size_t{99});
  COMPARE(s.maxTokens, std::size_t{100});
  COMPARE(s.meanTokens, 50.5);
  const std::vector<std::size_t> starts{0, 16, 24, 32, 48, 64, 96};
  const std::vector<std::size_t> counts{15, 8, 8, 16, 16, 32, 5};
  COMPARE(s.histogram.size(), starts.size());
  for (std::size_t i = 0; i < starts.size(); ++i) {
    COMPARE(s.histogram[i].fromTokens, starts[i]);
    COMPARE(s.histogram[i].examples, counts[i]);
  }
  COMPARE(s.histogram.back().toTokens, std::size_t{128});
}

TEST_CASE(sharedAlpacaDemoGivesARealisticReport) {
  const auto path = sharedFixture("datasets/alpaca_en_demo.json");
  const auto tokenizer = sharedFixture("tokenizers/qwen2_style_bpe2000.tokenizer.json");
  if (!path || !tokenizer) {
    SKIP("../shared/fixtures/datasets/alpaca_en_demo.json or the qwen2 tokenizer is absent");
  }
  const ExampleEncoder encoder(Tokenizer::fromFile(*tokenizer), ChatTemplate::byName("chatml"));
  ValidateOptions options;
  options.encoder = &encoder;
  options.encode.maxSeqLen = 512;
  const ValidationReport report = validateDataset(*path, options);
  COMPARE(report.container, Container::JsonArray);
  COMPARE(report.validExamples, std::size_t{999});
  VERIFY(report.errorCounts.empty());
  COMPARE(report.duplicateExamples, std::size_t{14});  // checked with Python: 13 groups
  COMPARE(report.duplicates.size(), std::size_t{13});
  const LengthSummary& l = report.tokens->lengths;
  COMPARE(l.examples, std::size_t{999});
  VERIFY(l.minTokens <= l.p50Tokens && l.p50Tokens <= l.p90Tokens && l.p90Tokens <= l.p99Tokens &&
         l.p99Tokens <= l.maxTokens);
  std::size_t binned = 0;
  for (const HistogramBin& bin : l.histogram) {
    binned += bin.examples;
  }
  COMPARE(binned, std::size_t{999});
  COMPARE(report.tokens->examplesKept + report.tokens->examplesDropped, std::size_t{999});
}

TEST_CASE(sharedIdentityDatasetHasNoProblems) {
  const auto path = sharedFixture("datasets/identity.json");
  if (!path) {
    SKIP("../shared/fixtures/datasets/identity.json is absent");
  }
  const ValidationReport report = validateDataset(*path, ValidateOptions{});
  COMPARE(report.validExamples, std::size_t{91});
  VERIFY(report.issues.empty());
}

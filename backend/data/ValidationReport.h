// ValidationReport.h — what `validate-data` tells a user before a long run: the file's shape,
// counts per format, every issue with its location, exact duplicates, the token-length
// distribution and what max_seq_len with the chosen policy will cost. toJson() has stable field
// names (documented in toJson's definition); toText() is the human-readable form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/Example.h"
#include "data/ExampleEncoder.h"
#include "data/Issue.h"
#include "data/LengthStats.h"
#include "data/RecordReader.h"

namespace lorascope::data {

struct DuplicateGroup {
  SourceLocation first;                // the example that is kept as the original
  std::vector<SourceLocation> copies;  // later examples with exactly the same content
};

// Token statistics; present when the validation had a tokenizer.
struct TokenReport {
  std::string tokenizer;       // the tokenizer.json it came from
  std::string chatTemplate;    // template name ("chatml", "alpaca", ...)
  std::string templateReason;  // why that template was chosen
  EncodeOptions options;
  LengthSummary lengths;            // per example, before the max_seq_len policy
  std::uint64_t trainedTokens = 0;  // labels that are ids, before the policy
  std::uint64_t maskedTokens = 0;   // labels that are −100, before the policy
  std::size_t prefixMismatches = 0;
  std::size_t tokenizeErrors = 0;
  // max_seq_len
  std::size_t examplesOverMax = 0;
  std::uint64_t tokensOverMax = 0;  // sum over those of (length − max_seq_len)
  // what the policy does
  std::size_t examplesDropped = 0;                 // all drops, including the next line's
  std::size_t examplesDroppedNoTrainedTokens = 0;  // truncation left no response token
  std::uint64_t tokensLost = 0;
  std::uint64_t trainedTokensLost = 0;
  std::size_t examplesKept = 0;
  std::uint64_t tokensKept = 0;
  std::uint64_t trainedTokensKept = 0;
};

struct ValidationReport {
  std::string file;
  std::uint64_t fileBytes = 0;
  Container container = Container::Empty;
  bool hadBom = false;
  std::size_t crlfLines = 0;
  std::size_t lines = 0;
  std::size_t blankLines = 0;

  std::optional<Format> format;
  bool formatForced = false;
  std::size_t jsonRecords = 0;  // records that parsed as JSON
  std::map<std::string, std::size_t> recordsByFormat;
  std::size_t validExamples = 0;  // read (and tokenized) without an error; duplicates included

  std::vector<DatasetIssue> issues;                  // sorted by location
  std::map<std::string, std::size_t> errorCounts;    // by issue kind name
  std::map<std::string, std::size_t> warningCounts;  // by issue kind name
  std::vector<DuplicateGroup> duplicates;
  std::size_t duplicateExamples = 0;  // copies, not counting the originals

  std::optional<TokenReport> tokens;

  nlohmann::json toJson() const;
  // `maxIssues` caps the issues listed one by one (the counts stay complete).
  std::string toText(std::size_t maxIssues = 50) const;
};

}  // namespace lorascope::data

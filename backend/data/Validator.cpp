// Validator.cpp — one pass over the dataset: examples, duplicates, tokens, policy effects.
#include "data/Validator.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <utility>

#include "common/OsError.h"  // defines: pathText
#include "data/DatasetStream.h"

namespace lorascope::data {

namespace {

constexpr std::uint64_t kProgressStepBytes = std::uint64_t{1} << 20;  // report about every MiB

// Two independent 64-bit hashes of the content: a false duplicate needs a 128-bit collision.
struct ContentKey {
  std::uint64_t fnv = 0;
  std::uint64_t std = 0;
  bool operator==(const ContentKey&) const = default;
};

struct ContentKeyHash {
  std::size_t operator()(const ContentKey& key) const { return key.fnv ^ (key.std << 1); }
};

ContentKey contentKey(const Example& example) {
  const std::string content = canonicalContent(example);
  std::uint64_t fnv = 0xcbf29ce484222325ull;  // FNV-1a 64 offset basis
  for (const char c : content) {
    fnv = (fnv ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;  // FNV-1a 64 prime
  }
  return {fnv, std::hash<std::string>{}(content)};
}

void addTokens(TokenReport& tokens, const EncodedExample& encoded, std::size_t maxSeqLen) {
  tokens.trainedTokens += encoded.trainedTokensBeforePolicy;
  tokens.maskedTokens += encoded.tokensBeforePolicy - encoded.trainedTokensBeforePolicy;
  tokens.prefixMismatches += encoded.prefixMismatch ? 1 : 0;
  if (maxSeqLen > 0 && encoded.tokensBeforePolicy > maxSeqLen) {
    ++tokens.examplesOverMax;
    tokens.tokensOverMax += encoded.tokensBeforePolicy - maxSeqLen;
  }
  const std::size_t kept = encoded.ids.size();
  const std::size_t trainedKept = encoded.trainedTokens();
  if (encoded.dropped) {
    ++tokens.examplesDropped;
    const bool overMax = maxSeqLen > 0 && encoded.tokensBeforePolicy > maxSeqLen;
    tokens.examplesDroppedNoTrainedTokens +=
        (!overMax || tokens.options.policy == OverLengthPolicy::Truncate) ? 1 : 0;
  } else {
    ++tokens.examplesKept;
  }
  tokens.tokensLost += encoded.tokensBeforePolicy - kept;
  tokens.trainedTokensLost += encoded.trainedTokensBeforePolicy - trainedKept;
  tokens.tokensKept += kept;
  tokens.trainedTokensKept += trainedKept;
}

}  // namespace

ValidationReport validateDataset(const std::filesystem::path& file,
                                 const ValidateOptions& options) {
  ValidationReport report;
  report.file = common::pathText(file);
  const IssueSink sink = [&report](DatasetIssue issue) {
    report.issues.push_back(std::move(issue));
  };
  DatasetStream stream(file, options.format, sink);
  report.format = stream.format();
  report.formatForced = stream.formatForced();
  if (options.encoder != nullptr) {
    TokenReport& tokens = report.tokens.emplace();
    tokens.tokenizer = options.encoder->tokenizer().source();
    tokens.chatTemplate = options.encoder->chatTemplate().name();
    tokens.templateReason = options.encoder->chatTemplate().reason();
    tokens.options = options.encode;
  }

  std::unordered_map<ContentKey, std::size_t, ContentKeyHash> firstSeen;  // → duplicates index
  std::vector<std::size_t> lengths;
  std::uint64_t nextProgressBytes = kProgressStepBytes;
  Example example;
  while (stream.next(example)) {
    bool usable = true;
    const auto [it, inserted] = firstSeen.try_emplace(contentKey(example), 0);
    if (inserted) {
      it->second = report.duplicates.size();
      report.duplicates.push_back({example.where, {}});
    } else {
      DuplicateGroup& group = report.duplicates[it->second];
      group.copies.push_back(example.where);
      ++report.duplicateExamples;
      sink({IssueKind::Duplicate, Severity::Warning, example.where,
            describeLocation(example.where) + ": exact duplicate of " +
                describeLocation(group.first)});
    }
    if (report.tokens) {
      try {
        const EncodedExample encoded = options.encoder->encode(example, options.encode);
        lengths.push_back(encoded.tokensBeforePolicy);
        addTokens(*report.tokens, encoded, options.encode.maxSeqLen);
        if (encoded.prefixMismatch) {
          sink({IssueKind::PrefixMismatch, Severity::Warning, example.where,
                describeLocation(example.where) +
                    ": the tokens of the rendered prompt are not a prefix of the tokens of the "
                    "whole conversation (a merge across the prompt/response boundary); the "
                    "boundary token is masked"});
        }
      } catch (const std::exception& error) {
        usable = false;
        ++report.tokens->tokenizeErrors;
        sink({IssueKind::TokenizeError, Severity::Error, example.where,
              describeLocation(example.where) + ": " + error.what()});
      }
    }
    report.validExamples += usable ? 1 : 0;
    if (options.progress && stream.reader().bytesRead() >= nextProgressBytes) {
      options.progress(stream.reader().bytesRead(), stream.reader().totalBytes());
      nextProgressBytes = stream.reader().bytesRead() + kProgressStepBytes;
    }
  }
  if (options.progress) {
    options.progress(stream.reader().bytesRead(), stream.reader().totalBytes());
  }

  const RecordReader& reader = stream.reader();
  report.fileBytes = reader.totalBytes();
  report.container = reader.container();
  report.hadBom = reader.hadBom();
  report.crlfLines = reader.crlfLines();
  report.lines = reader.linesRead();
  report.blankLines = reader.blankLines();
  report.jsonRecords = stream.jsonRecords();
  report.recordsByFormat = stream.recordsByFormat();
  if (report.container == Container::Empty) {
    sink({IssueKind::StructureWarning,
          Severity::Warning,
          {},
          report.file + ": the file is empty (no records)"});
  }
  std::erase_if(report.duplicates, [](const DuplicateGroup& g) { return g.copies.empty(); });
  if (report.tokens) {
    report.tokens->lengths = summariseLengths(std::move(lengths));
  }
  std::stable_sort(report.issues.begin(), report.issues.end(),
                   [](const DatasetIssue& a, const DatasetIssue& b) {
                     return a.where.byteOffset < b.where.byteOffset;
                   });
  for (const DatasetIssue& issue : report.issues) {
    auto& counts = issue.severity == Severity::Error ? report.errorCounts : report.warningCounts;
    ++counts[std::string(issueKindName(issue.kind))];
  }
  return report;
}

}  // namespace lorascope::data

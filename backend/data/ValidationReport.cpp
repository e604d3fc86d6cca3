// ValidationReport.cpp — the report as JSON (stable names, units in names) and as text.
#include "data/ValidationReport.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "common/Format.h"

namespace lorascope::data {

namespace {

nlohmann::json locationJson(const SourceLocation& where) {
  nlohmann::json out = {{"line", where.line}, {"byte_offset", where.byteOffset}};
  if (where.element) {
    out["element"] = *where.element;
  }
  return out;
}

std::size_t total(const std::map<std::string, std::size_t>& counts) {
  std::size_t sum = 0;
  for (const auto& [kind, count] : counts) {
    sum += count;
  }
  return sum;
}

std::string countsText(const std::map<std::string, std::size_t>& counts) {
  std::string text;
  for (const auto& [kind, count] : counts) {
    text += (text.empty() ? "" : ", ") + kind + " " + std::to_string(count);
  }
  return text;
}

std::string formatSource(const ValidationReport& report) {
  if (!report.format) {
    return "undetected";
  }
  return report.formatForced ? "forced" : "detected";
}

nlohmann::json tokensJson(const TokenReport& t) {
  const LengthSummary& l = t.lengths;
  nlohmann::json histogram = nlohmann::json::array();
  for (const HistogramBin& bin : l.histogram) {
    histogram.push_back(
        {{"from_tokens", bin.fromTokens}, {"to_tokens", bin.toTokens}, {"examples", bin.examples}});
  }
  return {
      {"tokenizer", t.tokenizer},
      {"chat_template", t.chatTemplate},
      {"chat_template_reason", t.templateReason},
      {"train_on", t.options.trainOnAll ? "all" : "responses"},
      {"examples", l.examples},
      {"min_tokens", l.minTokens},
      {"p50_tokens", l.p50Tokens},
      {"p90_tokens", l.p90Tokens},
      {"p99_tokens", l.p99Tokens},
      {"max_tokens", l.maxTokens},
      {"mean_tokens", l.meanTokens},
      {"total_tokens", l.totalTokens},
      {"histogram", histogram},
      {"trained_tokens", t.trainedTokens},
      {"masked_tokens", t.maskedTokens},
      {"prefix_mismatches", t.prefixMismatches},
      {"tokenize_errors", t.tokenizeErrors},
      {"max_seq_len",
       {{"tokens", t.options.maxSeqLen},
        {"policy", policyName(t.options.policy)},
        {"examples_over", t.examplesOverMax},
        {"tokens_over", t.tokensOverMax},
        {"examples_dropped", t.examplesDropped},
        {"examples_dropped_no_trained_tokens", t.examplesDroppedNoTrainedTokens},
        {"tokens_lost", t.tokensLost},
        {"trained_tokens_lost", t.trainedTokensLost},
        {"examples_kept", t.examplesKept},
        {"tokens_kept", t.tokensKept},
        {"trained_tokens_kept", t.trainedTokensKept}}},
  };
}

void tokensText(std::ostream& out, const TokenReport& t) {
  const LengthSummary& l = t.lengths;
  out << "Tokens: tokenizer " << t.tokenizer << ", template " << t.chatTemplate << " ("
      << t.templateReason << "), training on "
      << (t.options.trainOnAll ? "all tokens" : "responses") << "\n";
  if (l.examples == 0) {
    out << "  no example could be tokenized\n";
    return;
  }
  char mean[32];
  std::snprintf(mean, sizeof mean, "%.1f", l.meanTokens);
  out << "  tokens per example: min " << l.minTokens << ", p50 " << l.p50Tokens << ", p90 "
      << l.p90Tokens << ", p99 " << l.p99Tokens << ", max " << l.maxTokens << ", mean " << mean
      << "; total " << l.totalTokens << " (" << t.trainedTokens << " trained, " << t.maskedTokens
      << " masked)\n";
  std::size_t peak = 1;
  for (const HistogramBin& bin : l.histogram) {
    peak = std::max(peak, bin.examples);
  }
  for (const HistogramBin& bin : l.histogram) {
    char row[64];
    std::snprintf(row, sizeof row, "  %6zu-%-6zu %7zu |", bin.fromTokens, bin.toTokens - 1,
                  bin.examples);
    const std::size_t bar = (bin.examples * 40 + peak - 1) / peak;
    out << row << std::string(bar, '#');
    if (t.options.maxSeqLen > 0 && bin.toTokens > t.options.maxSeqLen) {
      out << (bin.fromTokens >= t.options.maxSeqLen ? "  > max_seq_len" : "  (max_seq_len inside)");
    }
    out << "\n";
  }
  if (t.prefixMismatches > 0) {
    out << "  " << t.prefixMismatches
        << " examples: prompt tokens are not a prefix of the conversation's tokens (listed)\n";
  }
  if (t.options.maxSeqLen == 0) {
    out << "  max_seq_len: no limit\n";
  } else {
    out << "  max_seq_len " << t.options.maxSeqLen << ": " << t.examplesOverMax
        << " examples are longer (" << t.tokensOverMax << " tokens over); policy "
        << policyName(t.options.policy) << " loses " << t.tokensLost << " tokens ("
        << t.trainedTokensLost << " of them trained) and drops " << t.examplesDropped
        << " examples";
    if (t.examplesDroppedNoTrainedTokens > 0) {
      out << " (" << t.examplesDroppedNoTrainedTokens
          << " because truncation leaves no trained token)";
    }
    out << "\n";
  }
  out << "  for training: " << t.examplesKept << " examples, " << t.tokensKept << " tokens ("
      << t.trainedTokensKept << " trained)\n";
}

}  // namespace

nlohmann::json ValidationReport::toJson() const {
  nlohmann::json issuesJson = nlohmann::json::array();
  for (const DatasetIssue& issue : issues) {
    nlohmann::json item = locationJson(issue.where);
    item["severity"] = severityName(issue.severity);
    item["kind"] = issueKindName(issue.kind);
    item["message"] = issue.message;
    issuesJson.push_back(std::move(item));
  }
  nlohmann::json groups = nlohmann::json::array();
  for (const DuplicateGroup& group : duplicates) {
    nlohmann::json copies = nlohmann::json::array();
    for (const SourceLocation& copy : group.copies) {
      copies.push_back(locationJson(copy));
    }
    groups.push_back({{"first", locationJson(group.first)}, {"copies", copies}});
  }
  return {
      {"schema", "lorascope.validate-data/1"},
      {"file", file},
      {"file_bytes", fileBytes},
      {"container", containerName(container)},
      {"utf8_bom", hadBom},
      {"crlf_lines", crlfLines},
      {"lines", lines},
      {"blank_lines", blankLines},
      {"format", format ? nlohmann::json(formatName(*format)) : nlohmann::json()},
      {"format_source", formatSource(*this)},
      {"records",
       {{"json", jsonRecords}, {"valid_examples", validExamples}, {"by_format", recordsByFormat}}},
      {"errors", {{"total", total(errorCounts)}, {"by_kind", errorCounts}}},
      {"warnings", {{"total", total(warningCounts)}, {"by_kind", warningCounts}}},
      {"issues", issuesJson},
      {"duplicates", {{"examples", duplicateExamples}, {"groups", groups}}},
      {"tokens", tokens ? tokensJson(*tokens) : nlohmann::json()},
  };
}

std::string ValidationReport::toText(std::size_t maxIssues) const {
  std::ostringstream out;
  out << "Dataset: " << file << " (" << common::formatBytes(fileBytes) << ", "
      << containerName(container) << ", " << lines << " lines" << (hadBom ? ", UTF-8 BOM" : "")
      << (crlfLines > 0 ? ", CRLF line ends" : "") << ")\n";
  out << "Format: "
      << (format ? std::string(formatName(*format)) + " (" + formatSource(*this) + ")"
                 : std::string("not recognised"))
      << "\n";
  out << "Records: " << jsonRecords << " valid JSON";
  if (!recordsByFormat.empty()) {
    out << " (" << countsText(recordsByFormat) << ")";
  }
  out << "; " << validExamples << " usable examples\n";
  out << "Errors: " << total(errorCounts);
  if (!errorCounts.empty()) {
    out << " (" << countsText(errorCounts) << ")";
  }
  out << "; warnings: " << total(warningCounts);
  if (!warningCounts.empty()) {
    out << " (" << countsText(warningCounts) << ")";
  }
  out << "\n";
  const std::size_t listed = std::min(maxIssues, issues.size());
  for (std::size_t i = 0; i < listed; ++i) {
    out << "  " << (issues[i].severity == Severity::Error ? "error:   " : "warning: ")
        << issues[i].message << "\n";
  }
  if (listed < issues.size()) {
    out << "  ... and " << issues.size() - listed << " more (--json lists every one)\n";
  }
  out << "Duplicates: " << duplicateExamples << " exact copies in " << duplicates.size()
      << " groups\n";
  if (tokens) {
    tokensText(out, *tokens);
  } else {
    out << "Tokens: not counted (give --model DIR or --tokenizer PATH)\n";
  }
  return out.str();
}

}  // namespace lorascope::data

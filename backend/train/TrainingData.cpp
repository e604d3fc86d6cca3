// train/TrainingData.cpp — dataset file → tokenized examples with response-only labels.
#include "train/TrainingData.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/OsError.h"  // defines: pathText
#include "data/DatasetStream.h"
#include "data/ExampleEncoder.h"
#include "text/ChatTemplate.h"
#include "text/Tokenizer.h"

namespace lorascope::train {

namespace {
constexpr std::size_t kProblemsShown = 5;
}

TrainingData loadTrainingData(const std::filesystem::path& dataFile,
                              const std::filesystem::path& modelDir, std::int64_t maxSeqLen) {
  TrainingData out;
  const text::ChatTemplate chatTemplate = text::ChatTemplate::forModelDir(modelDir);
  out.chatTemplate = chatTemplate.name();
  out.chatTemplateReason = chatTemplate.reason();
  const data::ExampleEncoder encoder(text::Tokenizer::fromModelDir(modelDir), chatTemplate);
  data::EncodeOptions options;
  options.maxSeqLen = static_cast<std::size_t>(maxSeqLen);
  options.policy = data::OverLengthPolicy::Truncate;
  // A record is skipped for the reasons validate-data reports as errors (data::Validator), the
  // chat template's refusal included, and counted by cause; one bad record never ends the run.
  const auto skip = [&](data::IssueKind kind, const data::SourceLocation& where,
                        const std::string& message) {
    ++out.skippedRecords;
    ++out.skippedByCause[std::string(data::issueKindName(kind))];
    if (out.firstProblems.size() < kProblemsShown) {
      // Some messages name their location already ("line 4: field ..."): say it once.
      const std::string location = data::describeLocation(where);
      const bool located = message.rfind(location + ":", 0) == 0;
      out.firstProblems.push_back(common::pathText(dataFile) + ": " +
                                  (located ? message : location + ": " + message));
    }
  };
  data::DatasetStream stream(dataFile, std::nullopt, [&](data::DatasetIssue issue) {
    if (issue.severity == data::Severity::Error) {
      skip(issue.kind, issue.where, issue.message);
    }
  });
  data::Example example;
  while (stream.next(example)) {
    data::EncodedExample encoded;
    try {
      encoded = encoder.encode(example, options);
    } catch (const std::exception& error) {
      skip(data::IssueKind::TokenizeError, example.where, error.what());
      continue;
    }
    if (encoded.dropped || encoded.trainedTokens() == 0) {
      ++out.droppedExamples;
      continue;
    }
    if (encoded.ids.size() < encoded.tokensBeforePolicy) {
      ++out.truncatedExamples;
    }
    out.examples.push_back({std::move(encoded.ids), std::move(encoded.labels)});
  }
  if (out.examples.empty()) {
    throw std::runtime_error(common::pathText(dataFile) + ": no example left to train on (" +
                             std::to_string(out.skippedRecords) + " records with errors, " +
                             std::to_string(out.droppedExamples) +
                             " with no response token within --max-seq-len); check the file "
                             "with `lorascope-train validate-data`");
  }
  return out;
}

void checkTokenIdsFit(const TrainingData& data, const std::filesystem::path& modelDir,
                      std::int64_t vocabSize) {
  std::int64_t largest = -1;
  for (const TokenizedExample& example : data.examples) {
    for (const std::int32_t id : example.ids) {
      largest = std::max<std::int64_t>(largest, id);
    }
  }
  if (vocabSize <= 0 || largest < vocabSize) {
    return;
  }
  throw std::runtime_error(
      common::pathText(modelDir / "tokenizer.json") + ": gives token id " +
      std::to_string(largest) + ", beyond the model's vocab_size " + std::to_string(vocabSize) +
      " (" + common::pathText(modelDir / "config.json") +
      "): this tokenizer is not the model's; put the model's own tokenizer.json in the folder");
}

std::string positionsWarning(const TrainingData& data, std::int64_t maxSeqLen, bool packing,
                             std::int64_t maxPositions) {
  if (maxPositions <= 0 || maxSeqLen <= maxPositions) {
    return {};
  }
  const auto longer = std::count_if(
      data.examples.begin(), data.examples.end(), [&](const TokenizedExample& example) {
        return static_cast<std::int64_t>(example.ids.size()) > maxPositions;
      });
  if (longer == 0 && !packing) {
    return {};
  }
  const std::string positions = std::to_string(maxPositions);
  return "max_seq_len " + std::to_string(maxSeqLen) +
         " exceeds the model's max_position_embeddings " + positions + " (" +
         (packing ? std::string("packing fills sequences to max_seq_len")
                  : std::to_string(longer) +
                        (longer == 1 ? " example is longer" : " examples are longer")) +
         "): positions past " + positions +
         " were never trained, and the model's quality there is not to be trusted; lower "
         "--max-seq-len to " +
         positions + " or less";
}

std::string describeDataLosses(const TrainingData& data) {
  std::string text;
  if (data.skippedRecords > 0) {
    text = std::to_string(data.skippedRecords) + " skipped (";
    bool first = true;
    for (const auto& [cause, count] : data.skippedByCause) {
      text += (first ? "" : ", ") + cause + " " + std::to_string(count);
      first = false;
    }
    text += ")";
  }
  if (data.droppedExamples > 0) {
    text += (text.empty() ? "" : ", ") + std::to_string(data.droppedExamples) +
            " dropped (nothing to train within max_seq_len)";
  }
  if (data.truncatedExamples > 0) {
    text += (text.empty() ? "" : ", ") + std::to_string(data.truncatedExamples) +
            " truncated to max_seq_len";
  }
  return text;
}

}  // namespace lorascope::train

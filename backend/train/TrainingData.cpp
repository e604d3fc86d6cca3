// train/TrainingData.cpp — dataset file → tokenized examples with response-only labels.
#include "train/TrainingData.h"

#include <stdexcept>

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
  data::DatasetStream stream(dataFile, std::nullopt, [&](data::DatasetIssue issue) {
    if (issue.severity != data::Severity::Error) {
      return;
    }
    ++out.skippedRecords;
    if (out.firstProblems.size() < kProblemsShown) {
      out.firstProblems.push_back(dataFile.string() + ": " + data::describeLocation(issue.where) +
                                  ": " + issue.message);
    }
  });
  data::Example example;
  while (stream.next(example)) {
    data::EncodedExample encoded = encoder.encode(example, options);
    if (encoded.dropped || encoded.trainedTokens() == 0) {
      ++out.droppedExamples;
      continue;
    }
    out.examples.push_back({std::move(encoded.ids), std::move(encoded.labels)});
  }
  if (out.examples.empty()) {
    throw std::runtime_error(dataFile.string() + ": no example left to train on (" +
                             std::to_string(out.skippedRecords) + " records with errors, " +
                             std::to_string(out.droppedExamples) +
                             " with no response token within --max-seq-len); check the file "
                             "with `lorascope-train validate-data`");
  }
  return out;
}

}  // namespace lorascope::train

// train/TrainingData.h — a dataset file made ready for the loop: read with backend/data (alpaca,
// chat or text; JSONL or JSON array), rendered with the model folder's chat template and
// tokenizer, labels on the responses only. What `lorascope-train train` (and the demo) feed to
// TrainLoop.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "train/Batching.h"  // defines: TokenizedExample

namespace lorascope::train {

struct TrainingData {
  std::vector<TokenizedExample> examples;
  std::string chatTemplate;                            // the family used ("chatml", "alpaca", ...)
  std::string chatTemplateReason;                      // why it was chosen
  std::int64_t skippedRecords = 0;                     // records with errors (not trained on)
  std::map<std::string, std::int64_t> skippedByCause;  // by data::issueKindName
  std::int64_t droppedExamples = 0;        // nothing left to train after the length limit
  std::int64_t truncatedExamples = 0;      // trained on their first max_seq_len tokens
  std::vector<std::string> firstProblems;  // up to 5 messages, with their line numbers
};

// Throws data::DatasetError / text::TextError naming the file when it cannot be read at all,
// std::runtime_error when no example is left to train on. A record that validate-data reports
// as an error (the chat template refusing it included) is skipped and counted, never fatal.
TrainingData loadTrainingData(const std::filesystem::path& dataFile,
                              const std::filesystem::path& modelDir, std::int64_t maxSeqLen);

// Throws std::runtime_error, naming the folder's tokenizer.json and config.json, when an example
// holds a token id the model has no embedding for (id >= vocabSize): the tokenizer is not the
// model's, and the first step would fail on it.
void checkTokenIdsFit(const TrainingData& data, const std::filesystem::path& modelDir,
                      std::int64_t vocabSize);

// Why the run will train positions the model never saw (empty: it will not): max_seq_len beyond
// max_position_embeddings, and an example that long or (causal) packing to fill it; `packing`:
// positions run on across packed examples (Note [packing]). The setup page warns
// of the setting alone; a run warns when its data reaches past the model's positions.
std::string positionsWarning(const TrainingData& data, std::int64_t maxSeqLen, bool packing,
                             std::int64_t maxPositions);

// A one-line summary of what was skipped, dropped and truncated, by cause (empty: nothing).
std::string describeDataLosses(const TrainingData& data);

}  // namespace lorascope::train

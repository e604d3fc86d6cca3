// DatasetStream.cpp — format detection and the record → example loop.
#include "data/DatasetStream.h"

#include <array>
#include <utility>

namespace lorascope::data {

namespace {

std::string listKeys(const nlohmann::json& record) {
  std::string keys;
  for (const auto& item : record.items()) {
    keys += (keys.empty() ? "" : ", ") + item.key();
  }
  return keys.empty() ? "none" : keys;
}

const char* formatKeys(Format format) {
  switch (format) {
    case Format::Alpaca:
      return "\"instruction\"/\"output\"";
    case Format::Chat:
      return "\"messages\"";
    case Format::ShareGpt:
      return "\"conversations\"";
    case Format::PromptCompletion:
      return "\"prompt\"/\"completion\"";
    case Format::Text:
      return "\"text\"";
  }
  return "";
}

}  // namespace

DatasetStream::DatasetStream(const std::filesystem::path& path, std::optional<Format> forced,
                             IssueSink sink)
    : sink_(std::move(sink)), reader_(path, sink_), format_(forced), forced_(forced.has_value()) {}

bool DatasetStream::nextRecord(RawRecord& record) {
  if (!lookahead_.empty()) {
    record = std::move(lookahead_.front());
    lookahead_.pop_front();
    return true;
  }
  return readRecord(record);
}

bool DatasetStream::readRecord(RawRecord& record) {
  if (!reader_.next(record)) {
    return false;
  }
  ++jsonRecords_;
  const auto guess = guessFormat(record.value);
  ++byFormat_[guess ? std::string(formatName(*guess)) : "unrecognised"];
  return true;
}

void DatasetStream::detect() {
  detected_ = true;
  if (forced_) {
    return;
  }
  std::array<std::size_t, kFormatCount> votes{};
  RawRecord record;
  while (lookahead_.size() < kFormatDetectionRecords && readRecord(record)) {
    if (const auto guess = guessFormat(record.value)) {
      ++votes[static_cast<std::size_t>(*guess)];
    }
    lookahead_.push_back(std::move(record));
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i < votes.size(); ++i) {
    best = votes[i] > votes[best] ? i : best;
  }
  if (votes[best] > 0) {
    format_ = static_cast<Format>(best);
  }
}

std::optional<Format> DatasetStream::format() {
  if (!detected_) {
    detect();
  }
  return format_;
}

bool DatasetStream::next(Example& example) {
  if (!detected_) {
    detect();
  }
  RawRecord record;
  while (nextRecord(record)) {
    const auto guess = guessFormat(record.value);
    const std::string where = describeLocation(record.where);
    if (record.value.is_object() && !format_) {
      sink_({IssueKind::Unrecognised, Severity::Error, record.where,
             where +
                 ": the record has none of the keys of a known format (alpaca: "
                 "\"instruction\"/\"output\", chat: \"messages\", sharegpt: \"conversations\", "
                 "prompt-completion: \"prompt\"/\"completion\", text: \"text\"); its keys: " +
                 listKeys(record.value)});
      continue;
    }
    if (guess && format_ && *guess != *format_) {
      sink_({IssueKind::FormatMismatch, Severity::Error, record.where,
             where + ": the record looks like " + std::string(formatName(*guess)) + " (has " +
                 formatKeys(*guess) + ") but the dataset is " + std::string(formatName(*format_)) +
                 (forced_ ? " (--format)" : " (detected from the first records)")});
      continue;
    }
    if (auto parsed =
            parseExample(record.value, record.where, format_.value_or(Format::Text), sink_)) {
      example = std::move(*parsed);
      return true;
    }
  }
  return false;
}

}  // namespace lorascope::data

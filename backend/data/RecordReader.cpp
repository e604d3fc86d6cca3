// RecordReader.cpp — container detection and the JSONL / JSON array record loop.
#include "data/RecordReader.h"

#include <utility>

#include "common/Format.h"  // defines: formatBytes

namespace lorascope::data {

namespace {

bool isBlank(std::string_view text) {
  return text.find_first_not_of(" \t\r\f\v") == std::string_view::npos;
}

}  // namespace

std::string_view containerName(Container container) {
  switch (container) {
    case Container::Empty:
      return "empty";
    case Container::Jsonl:
      return "jsonl";
    case Container::JsonArray:
      return "json_array";
  }
  return "unknown";
}

RecordReader::RecordReader(const std::filesystem::path& path, IssueSink sink)
    : lines_(path), sink_(std::move(sink)) {
  Line line;
  while (readLine(line)) {
    if (isBlank(line.text)) {
      if (!line.continuation && !line.continues)
        ++blankLines_;
      continue;
    }
    const char first = line.text[line.text.find_first_not_of(" \t\r\f\v")];
    container_ = first == '[' ? Container::JsonArray : Container::Jsonl;
    pending_ = std::move(line);
    break;
  }
  if (container_ == Container::JsonArray) {
    array_ = std::make_unique<JsonArrayReader>(sink_);
    blankLines_ = 0;  // blank lines are plain JSON whitespace inside an array
  }
}

bool RecordReader::readLine(Line& line) {
  if (!lines_.next(line)) {
    return false;
  }
  if (!line.continuation)
    ++linesRead_;
  return true;
}

void RecordReader::skipTooLarge(const Line& piece) {
  if (!tooLarge_) {
    tooLarge_ = TooLarge{{piece.number, std::nullopt, piece.byteOffset}, 0};
  }
  tooLarge_->bytes += piece.text.size();
  if (piece.continues) {
    return;
  }
  sink_({IssueKind::RecordTooLarge, Severity::Error, tooLarge_->where,
         describeLocation(tooLarge_->where) + ": the record is " +
             common::formatBytes(tooLarge_->bytes) + ", more than the " +
             common::formatBytes(kMaxRecordBytes) +
             " limit of one dataset record; it is left out (split it into shorter examples)"});
  tooLarge_.reset();
}

void RecordReader::readJsonl(const Line& line) {
  if (line.continues || line.continuation) {
    skipTooLarge(line);
    return;
  }
  if (isBlank(line.text)) {
    ++blankLines_;
    return;
  }
  const SourceLocation where{line.number, std::nullopt, line.byteOffset};
  if (auto value = parseRecordText(line.text, where, sink_)) {
    ready_.push_back({where, std::move(*value)});
  }
}

bool RecordReader::next(RawRecord& record) {
  while (ready_.empty() && !finished_) {
    Line line;
    if (pending_) {
      line = std::move(*pending_);
      pending_.reset();
    } else if (!readLine(line)) {
      if (array_) {
        array_->finish(ready_);
      }
      finished_ = true;
      break;
    }
    if (array_) {
      array_->feed(line, ready_);
    } else {
      readJsonl(line);
    }
  }
  if (ready_.empty()) {
    return false;
  }
  record = std::move(ready_.front());
  ready_.pop_front();
  return true;
}

}  // namespace lorascope::data

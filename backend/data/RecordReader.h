// RecordReader.h — the streaming dataset reader: JSONL (one record per line) or one JSON
// array, told apart by the first non-blank character. Yields each record that parses as JSON;
// every bad line or element goes to the IssueSink with its location and the read goes on.
#pragma once

#include <deque>
#include <filesystem>
#include <memory>
#include <optional>
#include <string_view>

#include "data/Issue.h"
#include "data/JsonArrayReader.h"
#include "data/LineReader.h"
#include "data/RecordText.h"

namespace lorascope::data {

enum class Container {
  Empty,      // no non-blank line
  Jsonl,      // one JSON value per line
  JsonArray,  // one JSON array of records
};

std::string_view containerName(Container container);  // "empty", "jsonl", "json_array"

class RecordReader {
 public:
  // Throws DatasetError when the file cannot be opened or is not UTF-8 text.
  RecordReader(const std::filesystem::path& path, IssueSink sink);

  // The next record that is valid JSON; false at the end of the file.
  bool next(RawRecord& record);

  Container container() const { return container_; }
  std::uint64_t bytesRead() const { return lines_.bytesRead(); }
  std::uint64_t totalBytes() const { return lines_.totalBytes(); }
  bool hadBom() const { return lines_.hadBom(); }
  std::size_t crlfLines() const { return lines_.crlfLines(); }
  std::size_t linesRead() const { return linesRead_; }
  std::size_t blankLines() const { return blankLines_; }

 private:
  bool readLine(Line& line);
  void readJsonl(const Line& line);
  // A JSONL line longer than kMaxRecordBytes, piece by piece: counted, then reported at its end.
  void skipTooLarge(const Line& piece);

  struct TooLarge {
    SourceLocation where;
    std::uint64_t bytes = 0;
  };

  LineReader lines_;
  IssueSink sink_;
  Container container_ = Container::Empty;
  std::optional<Line> pending_;  // the first non-blank line, read to choose the container
  std::unique_ptr<JsonArrayReader> array_;
  std::deque<RawRecord> ready_;
  std::optional<TooLarge> tooLarge_;  // the line being skipped
  bool finished_ = false;
  std::size_t linesRead_ = 0;
  std::size_t blankLines_ = 0;
};

}  // namespace lorascope::data

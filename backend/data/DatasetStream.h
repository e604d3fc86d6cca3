// DatasetStream.h — the examples of a dataset file, one at a time: records from the
// RecordReader, the format detected from the first records (or forced), each record read as
// an Example. Records of another format than the dataset's are reported and skipped, as is
// every other bad record; nothing stops the stream but the end of the file.
#pragma once

#include <cstddef>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "data/Example.h"
#include "data/RecordReader.h"

namespace lorascope::data {

// How many JSON records auto-detection looks at (majority of their guessed formats).
constexpr std::size_t kFormatDetectionRecords = 100;

class DatasetStream {
 public:
  // `forced`: the format to read (none = detect). Throws DatasetError when the file cannot be
  // read at all.
  DatasetStream(const std::filesystem::path& path, std::optional<Format> forced, IssueSink sink);

  // The next valid example; false at the end of the file.
  bool next(Example& example);

  // The dataset's format: forced, or detected (none when no record looks like any format).
  std::optional<Format> format();
  bool formatForced() const { return forced_; }

  // Every JSON record by the format it looks like ("alpaca", "chat", "text", "unrecognised").
  const std::map<std::string, std::size_t>& recordsByFormat() const { return byFormat_; }
  std::size_t jsonRecords() const { return jsonRecords_; }
  const RecordReader& reader() const { return reader_; }

 private:
  void detect();
  bool readRecord(RawRecord& record);  // from the file, counting its format
  bool nextRecord(RawRecord& record);  // from the look-ahead first

  IssueSink sink_;
  RecordReader reader_;
  std::optional<Format> format_;
  bool forced_ = false;
  bool detected_ = false;
  std::deque<RawRecord> lookahead_;  // records read for detection, not yet returned
  std::map<std::string, std::size_t> byFormat_;
  std::size_t jsonRecords_ = 0;
};

}  // namespace lorascope::data

// JsonArrayReader.h — splits a file holding one JSON array into its elements, line by line,
// without parsing the whole file: each element is parsed alone, so one broken element is
// reported (element index, line, byte) and the others are still read.
//
// Note on recovery: an element whose braces do not balance would swallow the rest of the file.
// While scanning, every line that starts with '{' at the column where the current element
// started is remembered; when the element then fails to parse, it is split at those lines and
// each piece is parsed on its own (pretty-printed arrays put each element at one column).
// Strings cannot span lines in JSON, so a stray quote only confuses the scan to the end of its
// line. An element longer than kMaxRecordBytes is scanned to its end but not kept: it is reported
// as too large, and a compact one-line array arrives in pieces (data/LineReader.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/Issue.h"
#include "data/LineReader.h"
#include "data/RecordText.h"

namespace lorascope::data {

// One record of the file (a JSONL line or an array element) that parsed as JSON.
struct RawRecord {
  SourceLocation where;
  nlohmann::json value;
};

class JsonArrayReader {
 public:
  explicit JsonArrayReader(IssueSink sink) : sink_(std::move(sink)) {}

  // Scans one line; elements completed by it are appended to `out`.
  void feed(const Line& line, std::deque<RawRecord>& out);
  // End of file: completes an open element and reports an unclosed array.
  void finish(std::deque<RawRecord>& out);

 private:
  enum class State { BeforeArray, BetweenElements, InElement, AfterArray };
  struct SplitPoint {
    std::size_t offset;  // in element_
    SourceLocation where;
  };

  void scanChar(char c, const Line& line, std::size_t column, std::deque<RawRecord>& out);
  void keep(char c);  // appends to element_ up to kMaxRecordBytes, counts beyond
  void startElement(const Line& line, std::size_t column);
  void completeElement(std::deque<RawRecord>& out, bool atEndOfFile);
  void parseElement(std::string_view text, SourceLocation where, const IssueSink& sink,
                    std::deque<RawRecord>& out);
  void structure(const SourceLocation& where, std::string message);

  IssueSink sink_;
  State state_ = State::BeforeArray;
  std::string element_;
  std::uint64_t elementBytes_ = 0;  // of the element, also those past kMaxRecordBytes
  SourceLocation elementStart_;
  std::optional<std::size_t> elementColumn_;  // set when the element is the first thing on its line
  std::vector<SplitPoint> splits_;
  int depth_ = 0;
  bool inString_ = false;
  bool escape_ = false;
  bool afterComma_ = false;
  bool reportedAfterArray_ = false;
  std::size_t nextIndex_ = 0;
};

}  // namespace lorascope::data

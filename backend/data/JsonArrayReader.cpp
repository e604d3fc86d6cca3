// JsonArrayReader.cpp — the element scanner of JSON array dataset files.
#include "data/JsonArrayReader.h"

#include <utility>

#include "common/Format.h"  // defines: formatBytes

namespace lorascope::data {

namespace {

bool isJsonSpace(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

std::string_view trimTrailing(std::string_view text, std::string_view chars) {
  while (!text.empty() && chars.find(text.back()) != std::string_view::npos) {
    text.remove_suffix(1);
  }
  return text;
}

}  // namespace

void JsonArrayReader::structure(const SourceLocation& where, std::string message) {
  sink_({IssueKind::StructureWarning, Severity::Warning, where, std::move(message)});
}

void JsonArrayReader::feed(const Line& line, std::deque<RawRecord>& out) {
  const std::string& text = line.text;
  if (state_ == State::InElement && !inString_ && elementColumn_ && !line.continuation) {
    const std::size_t first = text.find_first_not_of(" \t");
    if (first == *elementColumn_ && text[first] == '{') {
      splits_.push_back(
          {element_.size() + first, {line.number, std::nullopt, line.byteOffset + first}});
    }
  }
  for (std::size_t column = 0; column < text.size(); ++column) {
    scanChar(text[column], line, column, out);
  }
  if (line.continues) {
    return;  // a piece of a long line: the line goes on in the next one
  }
  if (state_ == State::InElement) {
    keep('\n');
    // A raw line end inside a string is invalid JSON (the parser will say where); the next line
    // is scanned as if the string had been closed, so one stray quote does not desync the rest.
    inString_ = false;
    escape_ = false;
  }
}

void JsonArrayReader::scanChar(char c, const Line& line, std::size_t column,
                               std::deque<RawRecord>& out) {
  const SourceLocation here{line.number, std::nullopt, line.byteOffset + column};
  switch (state_) {
    case State::BeforeArray:
      if (c == '[') {
        state_ = State::BetweenElements;
      }
      return;
    case State::AfterArray:
      if (c == '[') {
        structure(here, "a second JSON array starts at line " + std::to_string(line.number) +
                            "; its elements are read as well");
        state_ = State::BetweenElements;
      } else if (!isJsonSpace(c) && !reportedAfterArray_) {
        reportedAfterArray_ = true;
        sink_({IssueKind::StructureWarning, Severity::Error, here,
               "text after the closing ']' of the array at line " + std::to_string(line.number) +
                   " is not read"});
      }
      return;
    case State::BetweenElements:
      if (isJsonSpace(c)) {
        return;
      }
      if (c == ',') {
        if (afterComma_ || nextIndex_ == 0) {
          structure(here, "extra comma at line " + std::to_string(line.number));
        }
        afterComma_ = true;
      } else if (c == ']') {
        if (afterComma_) {
          structure(here, "trailing comma before ']' at line " + std::to_string(line.number) +
                              " (not valid JSON; accepted)");
        }
        afterComma_ = false;
        state_ = State::AfterArray;
      } else {
        if (nextIndex_ > 0 && !afterComma_) {
          structure(here, "missing comma before the element at line " +
                              std::to_string(line.number) + " (accepted)");
        }
        startElement(line, column);
        scanChar(c, line, column, out);
      }
      return;
    case State::InElement:
      break;
  }
  if (inString_) {
    keep(c);
    if (escape_) {
      escape_ = false;
    } else if (c == '\\') {
      escape_ = true;
    } else if (c == '"') {
      inString_ = false;
    }
    return;
  }
  if (depth_ == 0 && (c == ',' || c == ']')) {
    completeElement(out, false);
    afterComma_ = c == ',';
    state_ = c == ',' ? State::BetweenElements : State::AfterArray;
    return;
  }
  if (c == '"') {
    inString_ = true;
  } else if (c == '{' || c == '[') {
    ++depth_;
  } else if ((c == '}' || c == ']') && depth_ > 0) {
    --depth_;
  }
  keep(c);
}

void JsonArrayReader::keep(char c) {
  if (elementBytes_++ < kMaxRecordBytes) {
    element_.push_back(c);  // past the limit the element is only scanned, to find its end
  }
}

void JsonArrayReader::startElement(const Line& line, std::size_t column) {
  state_ = State::InElement;
  element_.clear();
  splits_.clear();
  depth_ = 0;
  inString_ = false;
  escape_ = false;
  afterComma_ = false;
  elementBytes_ = 0;
  elementStart_ = {line.number, std::nullopt, line.byteOffset + column};
  const bool leading = !line.continuation && line.text.find_first_not_of(" \t") == column;
  elementColumn_ = leading ? std::optional<std::size_t>(column) : std::nullopt;
}

void JsonArrayReader::parseElement(std::string_view text, SourceLocation where,
                                   const IssueSink& sink, std::deque<RawRecord>& out) {
  where.element = nextIndex_++;
  if (auto value = parseRecordText(text, where, sink)) {
    out.push_back({where, std::move(*value)});
  }
}

void JsonArrayReader::completeElement(std::deque<RawRecord>& out, bool atEndOfFile) {
  state_ = State::BetweenElements;
  if (elementBytes_ > kMaxRecordBytes) {
    SourceLocation where = elementStart_;
    where.element = nextIndex_++;
    sink_({IssueKind::RecordTooLarge, Severity::Error, where,
           describeLocation(where) + ": the record is " + common::formatBytes(elementBytes_) +
               ", more than the " + common::formatBytes(kMaxRecordBytes) +
               " limit of one dataset record; it is left out (split it into shorter examples)"});
    element_.clear();
    element_.shrink_to_fit();
    return;
  }
  const std::string_view whole = trimTrailing(element_, " \t\r\n");
  if (!splits_.empty()) {
    bool wholeParses = true;
    const IssueSink quiet = [&wholeParses](DatasetIssue) { wholeParses = false; };
    std::deque<RawRecord> trial;
    const std::size_t index = nextIndex_;
    parseElement(whole, elementStart_, quiet, trial);
    if (wholeParses) {
      out.insert(out.end(), std::make_move_iterator(trial.begin()),
                 std::make_move_iterator(trial.end()));
      return;
    }
    nextIndex_ = index;
    std::size_t begin = 0;
    SourceLocation where = elementStart_;
    for (std::size_t k = 0; k <= splits_.size(); ++k) {
      const bool last = k == splits_.size();
      const std::size_t end = last ? element_.size() : splits_[k].offset;
      std::string_view piece =
          trimTrailing(std::string_view(element_).substr(begin, end - begin), " \t\r\n,");
      if (last && atEndOfFile) {
        piece = trimTrailing(trimTrailing(piece, "]"), " \t\r\n,");
      }
      const std::string nextLine = last ? "" : std::to_string(splits_[k].where.line);
      const IssueSink annotated = [this, &nextLine](DatasetIssue issue) {
        if (!nextLine.empty()) {
          issue.message += "; the element is not closed before line " + nextLine +
                           ", where the next element seems to start";
        }
        sink_(std::move(issue));
      };
      parseElement(piece, where, annotated, out);
      if (!last) {
        begin = end;
        where = splits_[k].where;
      }
    }
    return;
  }
  parseElement(whole, elementStart_, sink_, out);
}

void JsonArrayReader::finish(std::deque<RawRecord>& out) {
  const SourceLocation start = elementStart_;
  if (state_ == State::InElement) {
    const std::size_t index = nextIndex_;
    completeElement(out, true);
    structure(start, "the file ends inside element " + std::to_string(index) + " (line " +
                         std::to_string(start.line) +
                         "): its brackets do not balance, so the end of the array was not found");
  } else if (state_ == State::BetweenElements) {
    structure(start, "the file ends before the closing ']' of the array");
  }
}

}  // namespace lorascope::data

// RecordText.cpp — parsing one record's text with error positions translated to file lines.
#include "data/RecordText.h"

#include <algorithm>
#include <string>

#include "common/Utf8.h"  // defines: utf8::findFault, utf8::lossy

namespace lorascope::data {

namespace {

// Depth of brackets outside strings; stops counting once past the limit.
int nestingDepth(std::string_view text) {
  int depth = 0;
  int deepest = 0;
  bool inString = false;
  bool escape = false;
  for (const char c : text) {
    if (inString) {
      if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        inString = false;
      }
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      deepest = std::max(deepest, ++depth);
      if (deepest > kMaxRecordNestingDepth) {
        return deepest;
      }
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// Characters of nlohmann's "last read: '...'" excerpt that are kept (its end, where the fault is).
constexpr std::size_t kLastReadChars = 60;

// nlohmann's message without its "[json.exception.parse_error.101] parse error at line 1,
// column 5: " prefix, whose line/column are relative to the record, not the file; a long
// "last read" excerpt (it can hold a whole response) is cut to its end.
std::string syntaxMessage(const nlohmann::json::parse_error& error) {
  std::string message = error.what();
  const std::size_t column = message.find("column ");
  const std::size_t colon = column == std::string::npos ? column : message.find(": ", column);
  if (colon != std::string::npos) {
    message.erase(0, colon + 2);
  } else if (const std::size_t bracket = message.find("] "); bracket != std::string::npos) {
    message.erase(0, bracket + 2);
  }
  // "...; last read: '<excerpt>'" optionally followed by "; expected <token>".
  const std::string marker = "last read: '";
  const std::size_t start = message.find(marker);
  if (start == std::string::npos) {
    return common::utf8::lossy(message);
  }
  const std::size_t from = start + marker.size();
  std::size_t end = message.find("'; expected ", from);
  if (end == std::string::npos) {
    end = message.rfind('\'');
  }
  if (end != std::string::npos && end > from && end - from > kLastReadChars) {
    std::size_t cut = end - kLastReadChars;
    while (cut < end && (static_cast<unsigned char>(message[cut]) & 0xc0u) == 0x80u) {
      ++cut;  // never split a UTF-8 sequence
    }
    message.replace(from, cut - from, "...");
  }
  // The excerpt may end inside a UTF-8 sequence (the lexer stops at its first byte).
  return common::utf8::lossy(message);
}

}  // namespace

SourceLocation locateInText(std::string_view text, std::size_t offset,
                            const SourceLocation& start) {
  offset = std::min(offset, text.size());
  SourceLocation where = start;
  where.line += static_cast<std::size_t>(std::count(text.begin(), text.begin() + offset, '\n'));
  where.byteOffset += offset;
  return where;
}

std::optional<nlohmann::json> parseRecordText(std::string_view text, const SourceLocation& where,
                                              const IssueSink& sink) {
  if (const auto fault = common::utf8::findFault(text)) {
    const SourceLocation at = locateInText(text, fault->offset, where);
    sink({IssueKind::InvalidUtf8, Severity::Error, at,
          "invalid UTF-8 at " + describeLocation(at, true) + ": " + fault->reason +
              "; the file must be UTF-8 (re-save it as UTF-8, e.g. with iconv)"});
    return std::nullopt;
  }
  if (nestingDepth(text) > kMaxRecordNestingDepth) {
    sink({IssueKind::JsonError, Severity::Error, where,
          describeLocation(where) + ": the record nests deeper than " +
              std::to_string(kMaxRecordNestingDepth) +
              " levels; a dataset record is an object of strings and message lists"});
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& error) {
    // error.byte is 1-based and points just past the offending character.
    const std::size_t offset = error.byte > 0 ? error.byte - 1 : 0;
    const SourceLocation at = locateInText(text, offset, where);
    std::string message =
        "invalid JSON at " + describeLocation(at, true) + ": " + syntaxMessage(error);
    if (at.line != where.line) {
      message += " (the record starts at line " + std::to_string(where.line) + ")";
    }
    sink({IssueKind::JsonError, Severity::Error, at, std::move(message)});
    return std::nullopt;
  } catch (const nlohmann::json::exception& error) {
    // A number no double holds (1e400: "number overflow parsing '1e400'"), which the parser
    // reports as out_of_range rather than as a syntax error; it names no position.
    std::string message = error.what();
    if (const std::size_t bracket = message.find("] "); bracket != std::string::npos) {
      message.erase(0, bracket + 2);
    }
    sink({IssueKind::JsonError, Severity::Error, where,
          "invalid JSON at " + describeLocation(where) + ": " + common::utf8::lossy(message) +
              " (a number larger than a double can hold)"});
    return std::nullopt;
  }
}

}  // namespace lorascope::data

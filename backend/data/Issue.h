// Issue.h — what the dataset reader and validator report about a file: where a record sits
// (line, element index, byte offset) and the problems found in it. Issues never abort a read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lorascope::data {

// The file cannot be read at all (missing, a directory, unreadable, UTF-16). Everything less
// than that is a DatasetIssue in the report, never an exception.
class DatasetError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a record (or a problem inside it) starts in the file.
struct SourceLocation {
  std::size_t line = 0;                // 1-based line number
  std::optional<std::size_t> element;  // 0-based index in a JSON array file; none in JSONL
  std::uint64_t byteOffset = 0;        // 0-based offset of the first byte in the file
};

enum class IssueKind {
  JsonError,         // the record is not valid JSON
  InvalidUtf8,       // the bytes of the record are not valid UTF-8
  RecordTooLarge,    // the record is longer than kMaxRecordBytes (data/LineReader.h): not read
  NotAnObject,       // the record is valid JSON but not an object
  MissingField,      // a required field is absent
  EmptyField,        // a field is present but empty (or only whitespace)
  WrongType,         // a field has the wrong JSON type
  UnknownRole,       // a chat message role other than system/user/assistant
  NoResponse,        // nothing to train on: no assistant message / empty output
  FormatMismatch,    // the record belongs to another format than the dataset's
  Unrecognised,      // the record matches no known format
  Duplicate,         // an exact duplicate of an earlier example
  PrefixMismatch,    // tokens of the rendered prompt are not a prefix of the full conversation
  TokenizeError,     // the tokenizer or the chat template rejected the example
  StructureWarning,  // a file-level oddity (trailing comma, data after the array, empty file)
};

enum class Severity {
  Error,    // the record is not used for training
  Warning,  // the record is used; the user may want to look at it
};

struct DatasetIssue {
  IssueKind kind = IssueKind::JsonError;
  Severity severity = Severity::Error;
  SourceLocation where;
  std::string message;  // says what is wrong and, where it helps, what to do
};

// Stable names used in the JSON report ("json_error", "invalid_utf8", ...).
std::string_view issueKindName(IssueKind kind);
std::string_view severityName(Severity severity);

// "line 12" or "element 3 (line 40)"; "byte 17" appended when `withByte`.
std::string describeLocation(const SourceLocation& where, bool withByte = false);

}  // namespace lorascope::data

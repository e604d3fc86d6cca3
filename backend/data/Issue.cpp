// Issue.cpp — names and location texts of dataset issues.
#include "data/Issue.h"

namespace lorascope::data {

std::string_view issueKindName(IssueKind kind) {
  switch (kind) {
    case IssueKind::JsonError:
      return "json_error";
    case IssueKind::InvalidUtf8:
      return "invalid_utf8";
    case IssueKind::RecordTooLarge:
      return "record_too_large";
    case IssueKind::NotAnObject:
      return "not_an_object";
    case IssueKind::MissingField:
      return "missing_field";
    case IssueKind::EmptyField:
      return "empty_field";
    case IssueKind::WrongType:
      return "wrong_type";
    case IssueKind::UnknownRole:
      return "unknown_role";
    case IssueKind::NoResponse:
      return "no_response";
    case IssueKind::FormatMismatch:
      return "format_mismatch";
    case IssueKind::Unrecognised:
      return "unrecognised";
    case IssueKind::Duplicate:
      return "duplicate";
    case IssueKind::PrefixMismatch:
      return "prefix_mismatch";
    case IssueKind::TokenizeError:
      return "tokenize_error";
    case IssueKind::StructureWarning:
      return "structure";
  }
  return "unknown";
}

std::string_view severityName(Severity severity) {
  return severity == Severity::Error ? "error" : "warning";
}

std::string describeLocation(const SourceLocation& where, bool withByte) {
  std::string text = where.element ? "element " + std::to_string(*where.element) + " (line " +
                                         std::to_string(where.line) + ")"
                                   : "line " + std::to_string(where.line);
  if (withByte) {
    text += ", byte " + std::to_string(where.byteOffset);
  }
  return text;
}

}  // namespace lorascope::data

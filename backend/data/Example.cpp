// Example.cpp — reading alpaca, chat and text records into Examples, with one issue per problem.
#include "data/Example.h"

#include <algorithm>
#include <array>

#include "text/ChatTemplate.h"  // defines: ChatTemplate::alpacaUserMessage

namespace lorascope::data {

namespace {

bool isBlank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n") == std::string_view::npos;
}

// "an array", "a string", "null", ... for messages.
std::string jsonTypeName(const nlohmann::json& value) {
  const std::string name = value.type_name();
  if (value.is_null()) {
    return name;
  }
  return (name.front() == 'a' || name.front() == 'o' ? "an " : "a ") + name;
}

// Collects the issues of one record so that the caller learns whether any was an error.
class RecordIssues {
 public:
  RecordIssues(const SourceLocation& where, const IssueSink& sink) : where_(where), sink_(sink) {}

  void error(IssueKind kind, const std::string& message) {
    failed_ = true;
    sink_({kind, Severity::Error, where_, describeLocation(where_) + ": " + message});
  }
  void warning(IssueKind kind, const std::string& message) {
    sink_({kind, Severity::Warning, where_, describeLocation(where_) + ": " + message});
  }
  bool failed() const { return failed_; }

 private:
  const SourceLocation& where_;
  const IssueSink& sink_;
  bool failed_ = false;
};

// The string field `key` of `record`: reports it missing (when `required`), of the wrong type
// or blank (when `nonEmpty`).
std::optional<std::string> stringField(const nlohmann::json& record, const char* key, bool required,
                                       bool nonEmpty, RecordIssues& issues) {
  const auto it = record.find(key);
  if (it == record.end() || it->is_null()) {
    if (required) {
      issues.error(IssueKind::MissingField, std::string("missing field \"") + key + "\"");
    }
    return std::nullopt;
  }
  if (!it->is_string()) {
    issues.error(IssueKind::WrongType,
                 std::string("field \"") + key + "\" is " + jsonTypeName(*it) + ", not a string");
    return std::nullopt;
  }
  std::string value = it->get<std::string>();
  if (nonEmpty && isBlank(value)) {
    issues.error(IssueKind::EmptyField, std::string("field \"") + key + "\" is empty");
    return std::nullopt;
  }
  return value;
}

void readAlpaca(const nlohmann::json& record, Example& example, RecordIssues& issues) {
  const auto instruction = stringField(record, "instruction", true, false, issues);
  const auto input = stringField(record, "input", false, false, issues);
  const auto output = stringField(record, "output", true, false, issues);
  const auto system = stringField(record, "system", false, false, issues);
  if (issues.failed()) {
    return;
  }
  const std::string inputText = input && !isBlank(*input) ? *input : std::string();
  std::string prompt = text::ChatTemplate::alpacaUserMessage(*instruction, inputText);
  if (isBlank(*instruction) && inputText.empty()) {
    issues.error(IssueKind::EmptyField, "\"instruction\" and \"input\" are both empty");
  }
  if (isBlank(*output)) {
    issues.error(IssueKind::NoResponse, "field \"output\" is empty: nothing to train on");
  }
  if (system && !isBlank(*system)) {
    example.messages.push_back({"system", *system});
  }
  example.messages.push_back({"user", std::move(prompt)});
  example.messages.push_back({"assistant", *output});
}

void readChat(const nlohmann::json& record, Example& example, RecordIssues& issues) {
  const auto it = record.find("messages");
  if (it == record.end() || it->is_null()) {
    issues.error(IssueKind::MissingField, "missing field \"messages\"");
    return;
  }
  if (!it->is_array()) {
    issues.error(IssueKind::WrongType,
                 "field \"messages\" is " + jsonTypeName(*it) + ", not an array");
    return;
  }
  if (it->empty()) {
    issues.error(IssueKind::EmptyField, "field \"messages\" is an empty array");
    return;
  }
  bool trainable = false;
  std::string previousRole;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const nlohmann::json& message = (*it)[i];
    const std::string at = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) {
      issues.error(IssueKind::WrongType, at + " is " + jsonTypeName(message) + ", not an object");
      continue;
    }
    const auto role = message.find("role");
    const auto content = message.find("content");
    if (role == message.end() || !role->is_string()) {
      issues.error(role == message.end() ? IssueKind::MissingField : IssueKind::WrongType,
                   at + " has no string \"role\"");
      continue;
    }
    if (content == message.end() || !content->is_string()) {
      issues.error(content == message.end() ? IssueKind::MissingField : IssueKind::WrongType,
                   at + " has no string \"content\" (only plain-text content is supported)");
      continue;
    }
    const std::string roleName = role->get<std::string>();
    static const std::array<std::string_view, 3> kRoles{"system", "user", "assistant"};
    if (std::find(kRoles.begin(), kRoles.end(), roleName) == kRoles.end()) {
      issues.error(IssueKind::UnknownRole,
                   at + " has role \"" + roleName + "\"; expected system, user or assistant");
      continue;
    }
    std::string text = content->get<std::string>();
    if (roleName == "system" && i != 0) {
      issues.warning(IssueKind::StructureWarning,
                     at + " is a system message after the start; most chat templates expect it "
                          "first");
    }
    if (roleName != "system" && roleName == previousRole) {
      issues.warning(IssueKind::StructureWarning,
                     at + " is the second \"" + roleName + "\" message in a row");
    }
    if (isBlank(text)) {
      issues.warning(IssueKind::EmptyField, at + " (" + roleName + ") has empty content");
    } else if (roleName == "assistant") {
      trainable = true;
    }
    previousRole = roleName;
    example.messages.push_back({roleName, std::move(text)});
  }
  if (!issues.failed() && !trainable) {
    issues.error(IssueKind::NoResponse, "no assistant message with content: nothing to train on");
  }
}

}  // namespace

std::string_view formatName(Format format) {
  switch (format) {
    case Format::Alpaca:
      return "alpaca";
    case Format::Chat:
      return "chat";
    case Format::Text:
      return "text";
  }
  return "unknown";
}

std::optional<Format> parseFormatName(std::string_view name) {
  for (const Format format : {Format::Alpaca, Format::Chat, Format::Text}) {
    if (formatName(format) == name) {
      return format;
    }
  }
  return std::nullopt;
}

std::optional<Format> guessFormat(const nlohmann::json& record) {
  if (!record.is_object()) {
    return std::nullopt;
  }
  if (record.contains("messages")) {
    return Format::Chat;
  }
  if (record.contains("instruction") || record.contains("output")) {
    return Format::Alpaca;
  }
  if (record.contains("text")) {
    return Format::Text;
  }
  return std::nullopt;
}

std::optional<Example> parseExample(const nlohmann::json& record, const SourceLocation& where,
                                    Format format, const IssueSink& sink) {
  RecordIssues issues(where, sink);
  if (!record.is_object()) {
    issues.error(IssueKind::NotAnObject,
                 "record is " + jsonTypeName(record) + ", not a JSON object");
    return std::nullopt;
  }
  Example example;
  example.format = format;
  example.where = where;
  switch (format) {
    case Format::Alpaca:
      readAlpaca(record, example, issues);
      break;
    case Format::Chat:
      readChat(record, example, issues);
      break;
    case Format::Text:
      if (auto text = stringField(record, "text", true, true, issues)) {
        example.text = std::move(*text);
      }
      break;
  }
  if (issues.failed()) {
    return std::nullopt;
  }
  return example;
}

std::string canonicalContent(const Example& example) {
  // Lengths before contents make the encoding unambiguous whatever the strings hold.
  std::string key(formatName(example.format));
  const auto append = [&key](std::string_view part) {
    key += '\0';
    key += std::to_string(part.size());
    key += ':';
    key += part;
  };
  for (const Message& message : example.messages) {
    append(message.role);
    append(message.content);
  }
  append(example.text);
  return key;
}

}  // namespace lorascope::data

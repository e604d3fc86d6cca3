// Example.cpp — reading alpaca, chat, sharegpt, prompt-completion and text records into
// Examples, with one issue per problem.
#include "data/Example.h"

#include <algorithm>
#include <array>

#include "common/EnumNames.h"
#include "text/ChatTemplate.h"  // defines: ChatTemplate::alpacaUserMessage

namespace lorascope::data {
namespace {

constexpr common::EnumName<Format> kFormatNames[] = {
    {Format::Alpaca, "alpaca"},
    {Format::Chat, "chat"},
    {Format::ShareGpt, "sharegpt"},
    {Format::PromptCompletion, "prompt-completion"},
    {Format::Text, "text"}};
static_assert(common::coversEnum(kFormatNames));

}  // namespace

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

// How one format spells a conversation: the array field, the role and text keys of its
// messages, and the roles it knows (as ours: system, user, assistant).
struct MessageSchema {
  const char* field;
  const char* roleKey;
  const char* contentKey;
  std::optional<std::string> (*role)(const std::string& name);
  const char* knownRoles;  // for the error message
};

std::optional<std::string> chatRole(const std::string& name) {
  if (name == "system" || name == "user" || name == "assistant")
    return name;
  return std::nullopt;
}

// ShareGPT's "from" values (human/gpt as FastChat writes them, and the chat names).
std::optional<std::string> shareGptRole(const std::string& name) {
  if (name == "human" || name == "user")
    return std::string("user");
  if (name == "gpt" || name == "assistant" || name == "chatgpt" || name == "model")
    return std::string("assistant");
  if (name == "system")
    return name;
  return std::nullopt;
}

constexpr MessageSchema kChatSchema{"messages", "role", "content", chatRole,
                                    "system, user or assistant"};
constexpr MessageSchema kShareGptSchema{"conversations", "from", "value", shareGptRole,
                                        "human, gpt or system"};

// Appends the messages of `list` (the array `field` of a record) to `example`.
void readMessageList(const nlohmann::json& list, const std::string& field,
                     const MessageSchema& schema, Example& example, RecordIssues& issues) {
  std::string previousRole = example.messages.empty() ? "" : example.messages.back().role;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& message = list[i];
    const std::string at = field + "[" + std::to_string(i) + "]";
    if (!message.is_object()) {
      issues.error(IssueKind::WrongType, at + " is " + jsonTypeName(message) + ", not an object");
      continue;
    }
    const auto role = message.find(schema.roleKey);
    const auto content = message.find(schema.contentKey);
    if (role == message.end() || !role->is_string()) {
      issues.error(role == message.end() ? IssueKind::MissingField : IssueKind::WrongType,
                   at + " has no string \"" + schema.roleKey + "\"");
      continue;
    }
    if (content == message.end() || !content->is_string()) {
      issues.error(content == message.end() ? IssueKind::MissingField : IssueKind::WrongType,
                   at + " has no string \"" + schema.contentKey +
                       "\" (only plain-text content is supported)");
      continue;
    }
    const std::string given = role->get<std::string>();
    const std::optional<std::string> roleName = schema.role(given);
    if (!roleName) {
      issues.error(IssueKind::UnknownRole, at + " has " + schema.roleKey + " \"" + given +
                                               "\"; expected " + schema.knownRoles);
      continue;
    }
    std::string text = content->get<std::string>();
    if (*roleName == "system" && !example.messages.empty()) {
      issues.warning(IssueKind::StructureWarning,
                     at + " is a system message after the start; most chat templates expect it "
                          "first");
    }
    if (*roleName != "system" && *roleName == previousRole) {
      issues.warning(IssueKind::StructureWarning,
                     at + " is the second \"" + *roleName + "\" message in a row");
    }
    if (isBlank(text)) {
      issues.warning(IssueKind::EmptyField, at + " (" + *roleName + ") has empty content");
    }
    previousRole = *roleName;
    example.messages.push_back({*roleName, std::move(text)});
  }
}

// The array field `field` of `record`, or an error (missing, not an array, empty).
const nlohmann::json* messageArray(const nlohmann::json& record, const char* field,
                                   RecordIssues& issues) {
  const auto it = record.find(field);
  if (it == record.end() || it->is_null()) {
    issues.error(IssueKind::MissingField, std::string("missing field \"") + field + "\"");
    return nullptr;
  }
  if (!it->is_array()) {
    issues.error(IssueKind::WrongType,
                 std::string("field \"") + field + "\" is " + jsonTypeName(*it) + ", not an array");
    return nullptr;
  }
  if (it->empty()) {
    issues.error(IssueKind::EmptyField, std::string("field \"") + field + "\" is an empty array");
    return nullptr;
  }
  return &*it;
}

void requireAssistantText(const Example& example, RecordIssues& issues) {
  const bool trainable =
      std::any_of(example.messages.begin(), example.messages.end(),
                  [](const Message& m) { return m.role == "assistant" && !isBlank(m.content); });
  if (!issues.failed() && !trainable) {
    issues.error(IssueKind::NoResponse, "no assistant message with content: nothing to train on");
  }
}

void readConversation(const nlohmann::json& record, const MessageSchema& schema, Example& example,
                      RecordIssues& issues) {
  const nlohmann::json* list = messageArray(record, schema.field, issues);
  if (list == nullptr) {
    return;
  }
  if (&schema == &kShareGptSchema) {
    // FastChat/LLaMA-Factory ShareGPT files may carry the system prompt beside the turns.
    if (const auto system = stringField(record, "system", false, false, issues);
        system && !isBlank(*system)) {
      example.messages.push_back({"system", *system});
    }
  }
  readMessageList(*list, schema.field, schema, example, issues);
  requireAssistantText(example, issues);
}

// TRL's prompt-completion: two strings (plain text, prompt masked), or two message lists.
void readPromptCompletion(const nlohmann::json& record, Example& example, RecordIssues& issues) {
  const auto prompt = record.find("prompt");
  const auto completion = record.find("completion");
  if (prompt != record.end() && prompt->is_array()) {
    const nlohmann::json* promptList = messageArray(record, "prompt", issues);
    const nlohmann::json* completionList = messageArray(record, "completion", issues);
    if (promptList == nullptr || completionList == nullptr) {
      return;
    }
    readMessageList(*promptList, "prompt", kChatSchema, example, issues);
    readMessageList(*completionList, "completion", kChatSchema, example, issues);
    requireAssistantText(example, issues);
    return;
  }
  (void)completion;
  const auto promptText = stringField(record, "prompt", true, false, issues);
  const auto completionText = stringField(record, "completion", true, false, issues);
  if (issues.failed()) {
    return;
  }
  if (isBlank(*completionText)) {
    issues.error(IssueKind::NoResponse, "field \"completion\" is empty: nothing to train on");
    return;
  }
  example.prompt = *promptText;
  example.text = *completionText;
}

}  // namespace

std::string_view formatName(Format format) {
  return common::enumName(kFormatNames, format);
}

std::optional<Format> parseFormatName(std::string_view name) {
  return common::parseEnum(kFormatNames, name);
}

std::string formatNameList() {
  return common::enumNameList(kFormatNames);
}

std::optional<Format> guessFormat(const nlohmann::json& record) {
  if (!record.is_object()) {
    return std::nullopt;
  }
  if (record.contains("messages")) {
    return Format::Chat;
  }
  if (record.contains("conversations")) {
    return Format::ShareGpt;
  }
  if (record.contains("prompt") && record.contains("completion")) {
    return Format::PromptCompletion;
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
      readConversation(record, kChatSchema, example, issues);
      break;
    case Format::ShareGpt:
      readConversation(record, kShareGptSchema, example, issues);
      break;
    case Format::PromptCompletion:
      readPromptCompletion(record, example, issues);
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
  append(example.prompt);
  append(example.text);
  return key;
}

}  // namespace lorascope::data

// Example.h — the three dataset formats and the training example they become:
//   alpaca: {"instruction", "input" (optional), "output", "system" (optional)}
//   chat:   {"messages": [{"role": "system"|"user"|"assistant", "content": "..."}]}
//   text:   {"text": "..."}
// An alpaca record becomes a chat example (system?, user = the instruction with the input under
// "### Input:" (text::ChatTemplate::alpacaUserMessage), assistant = output), so one rendering
// path serves both; a text record stays plain text.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/Issue.h"
#include "data/RecordText.h"

namespace lorascope::data {

enum class Format { Alpaca, Chat, Text };

std::string_view formatName(Format format);                    // "alpaca", "chat", "text"
std::optional<Format> parseFormatName(std::string_view name);  // none for an unknown name

struct Message {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

struct Example {
  Format format = Format::Text;
  SourceLocation where;
  std::vector<Message> messages;  // alpaca and chat
  std::string text;               // text
};

// The format a record looks like, from its keys ("messages" → chat; "instruction" or "output"
// → alpaca; "text" → text); none when it is not an object or has none of them.
std::optional<Format> guessFormat(const nlohmann::json& record);

// Reads `record` as `format`. Problems go to `sink`; errors make the result empty, warnings
// (e.g. an empty user turn) leave the example in.
std::optional<Example> parseExample(const nlohmann::json& record, const SourceLocation& where,
                                    Format format, const IssueSink& sink);

// A canonical byte string of the example's content, used to find exact duplicates.
std::string canonicalContent(const Example& example);

}  // namespace lorascope::data

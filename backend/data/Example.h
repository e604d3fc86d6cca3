// Example.h — the dataset formats and the training example they become:
//   alpaca:            {"instruction", "input" (optional), "output", "system" (optional)}
//   chat:              {"messages": [{"role": "system"|"user"|"assistant", "content": "..."}]}
//   sharegpt:          {"conversations": [{"from": "human"|"gpt"|"system", "value": "..."}],
//                       "system" (optional)}; "user"/"assistant" are accepted as "from" too
//   prompt-completion: {"prompt": "...", "completion": "..."} (TRL's standard form: trained on
//                       the completion, the prompt masked), or with both as lists of chat
//                       messages (TRL's conversational form, rendered by the chat template)
//   text:              {"text": "..."}
// Alpaca, sharegpt and conversational prompt-completion records become chat examples (an alpaca
// user turn is the instruction with the input under "### Input:",
// text::ChatTemplate::alpacaUserMessage), so one rendering path serves them; a text record
// stays plain text, and a standard prompt-completion record is plain text with a masked prompt.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/Issue.h"
#include "data/RecordText.h"

namespace lorascope::data {

enum class Format { Alpaca, Chat, ShareGpt, PromptCompletion, Text };
inline constexpr std::size_t kFormatCount = 5;

// "alpaca", "chat", "sharegpt", "prompt-completion", "text"
std::string_view formatName(Format format);
std::optional<Format> parseFormatName(std::string_view name);  // none for an unknown name
std::string formatNameList();  // "alpaca, chat, sharegpt, prompt-completion, text"

struct Message {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

struct Example {
  Format format = Format::Text;
  SourceLocation where;
  std::vector<Message> messages;  // alpaca, chat, sharegpt, conversational prompt-completion
  std::string text;               // text; the completion of a standard prompt-completion
  std::string prompt;             // the (untrained) prompt of a standard prompt-completion
};

// The format a record looks like, from its keys ("messages" → chat; "conversations" →
// sharegpt; "prompt" and "completion" → prompt-completion; "instruction" or "output" → alpaca;
// "text" → text); none when it is not an object or has none of them.
std::optional<Format> guessFormat(const nlohmann::json& record);

// Reads `record` as `format`. Problems go to `sink`; errors make the result empty, warnings
// (e.g. an empty user turn) leave the example in.
std::optional<Example> parseExample(const nlohmann::json& record, const SourceLocation& where,
                                    Format format, const IssueSink& sink);

// A canonical byte string of the example's content, used to find exact duplicates.
std::string canonicalContent(const Example& example);

}  // namespace lorascope::data

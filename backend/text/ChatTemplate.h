// ChatTemplate.h — chat prompt formats of the model families LoRAscope loads, rendered in C++.
// We do not run Jinja: the family is recognised from tokenizer_config.json (the chat_template
// text, the tokenizer class) or config.json (model_type), or chosen by name, and reason() says
// which evidence picked it.
//
// Families: "chatml" (Qwen2/2.5, SmolLM2), "llama3" (<|start_header_id|> headers), "llama2"
// ([INST] with <<SYS>>), "alpaca" (### Instruction / ### Response; base models).
// For every family, render(prefix, true) is a prefix of render(prefix + [assistant reply],
// false) — the property masking of prompt tokens relies on.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text/TextError.h"  // defines: TextError

namespace lorascope::text {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  enum class Family { ChatMl, Llama3, Llama2, Alpaca };

  // "chatml", "llama3", "llama3.1" (llama3 with the Llama 3.1+ system preamble), "llama2",
  // "alpaca"; TextError listing the names otherwise. Special tokens are the family's usual ones.
  static ChatTemplate byName(std::string_view name);
  // From dir/tokenizer_config.json (chat_template, tokenizer_class, bos/eos tokens) and
  // dir/config.json (model_type). TextError when a chat_template exists but is not recognised.
  static ChatTemplate forModelDir(const std::filesystem::path& dir);
  // The family of a chat_template text (Jinja source), or nullopt when not recognised.
  static std::optional<Family> recognise(std::string_view jinjaSource);

  // The user message of an alpaca row: the instruction, and the input under "### Input:".
  static std::string alpacaUserMessage(std::string_view instruction, std::string_view input);

  std::string name() const;                              // "chatml", "llama3", "llama2" or "alpaca"
  const std::string& reason() const { return reason_; }  // why this family was chosen
  Family family() const { return family_; }

  // Throws TextError for a role the family cannot express (e.g. "tool") or a message order it
  // does not allow (llama2: user/assistant must alternate).
  std::string render(const std::vector<ChatMessage>& messages, bool addGenerationPrompt) const;

  // Text the family puts around turns; taken from tokenizer_config.json when known.
  const std::string& bosToken() const { return bosToken_; }
  const std::string& eosToken() const { return eosToken_; }
  // The system prompt inserted when the conversation has none (ChatML templates of Qwen and
  // SmolLM carry one); empty for none.
  const std::string& defaultSystemPrompt() const { return defaultSystem_; }
  // Llama 3.1+ templates always open with a system turn holding "Cutting Knowledge Date:
  // December 2023" and "Today Date: 26 Jul 2024" (the templates' own fallback date; a fixed
  // date keeps tokenized datasets reproducible).
  bool llama3KnowledgePreamble() const { return knowledgePreamble_; }

  // Overrides the special tokens (e.g. from a tokenizer_config.json read elsewhere).
  void setSpecialTokens(std::string bosToken, std::string eosToken);

 private:
  ChatTemplate(Family family, std::string reason);
  std::string renderChatMl(const std::vector<ChatMessage>& messages,
                           bool addGenerationPrompt) const;
  std::string renderLlama3(const std::vector<ChatMessage>& messages,
                           bool addGenerationPrompt) const;
  std::string renderLlama2(const std::vector<ChatMessage>& messages) const;
  std::string renderAlpaca(const std::vector<ChatMessage>& messages,
                           bool addGenerationPrompt) const;

  Family family_;
  std::string reason_;
  std::string bosToken_;
  std::string eosToken_;
  std::string defaultSystem_;
  bool knowledgePreamble_ = false;
};

}  // namespace lorascope::text

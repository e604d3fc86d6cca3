// ChatTemplate.h — how a conversation becomes the prompt text a model was trained on.
// A model folder's own chat_template (tokenizer_config.json, else chat_template.jinja) is
// rendered by the Jinja interpreter (backend/jinja, jinja::JinjaTemplate) with the context
// transformers' apply_chat_template gives it: messages, tools, documents, add_generation_prompt and
// the special tokens of tokenizer_config.json. reason() says what was chosen and why.
//
// Fallback, when there is no template or it does not parse: four built-in families rendered in
// C++ — "chatml" (Qwen2/2.5, SmolLM2), "llama3" (<|start_header_id|> headers), "llama2" ([INST]
// with <<SYS>>), "alpaca" (### Instruction / ### Response; base models) — recognised from the
// template text, the tokenizer class or model_type, or chosen by name. For every built-in
// family, render(prefix, true) is a prefix of render(prefix + [assistant reply], false) — the
// property masking of prompt tokens relies on; a model's own template may lack it, which the
// encoder detects (EncodedExample::prefixMismatch).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <memory>

#include <nlohmann/json.hpp>

#include "jinja/JinjaTemplate.h"  // defines: jinja::JinjaTemplate, jinja::JinjaError
#include "text/TextError.h"       // defines: TextError

namespace lorascope::text {

struct ChatMessage {
  std::string role;  // "system", "user" or "assistant"
  std::string content;
};

class ChatTemplate {
 public:
  enum class Family { ChatMl, Llama3, Llama2, Alpaca, Jinja };

  // "chatml", "llama3", "llama3.1" (llama3 with the Llama 3.1+ system preamble), "llama2",
  // "alpaca"; TextError listing the names otherwise. Special tokens are the family's usual ones.
  static ChatTemplate byName(std::string_view name);
  // From dir/tokenizer_config.json (chat_template, tokenizer_class, special tokens) and
  // dir/config.json (model_type): the model's own template when it parses, else a built-in
  // family. TextError when a chat_template neither parses nor is recognised (both reasons).
  static ChatTemplate forModelDir(const std::filesystem::path& dir);
  // A Jinja chat template from its source; `specialTokens` is an object such as
  // {"bos_token": "<s>", "eos_token": "</s>"} (transformers' special_tokens_map).
  // jinja::JinjaError for a template that does not parse.
  static ChatTemplate fromJinja(std::string_view source, std::string origin,
                                nlohmann::ordered_json specialTokens);
  // The family of a chat_template text (Jinja source), or nullopt when not recognised.
  static std::optional<Family> recognise(std::string_view jinjaSource);

  // The user message of an alpaca row: the instruction, and the input under "### Input:".
  static std::string alpacaUserMessage(std::string_view instruction, std::string_view input);

  // "chatml", "llama3", "llama2", "alpaca", or "jinja" for the model's own template.
  std::string name() const;
  const std::string& reason() const { return reason_; }  // why this family was chosen
  Family family() const { return family_; }

  // Throws TextError for a role the family cannot express (e.g. "tool") or a message order it
  // does not allow (llama2: user/assistant must alternate). A Jinja template's errors are
  // jinja::JinjaError, its own raise_exception jinja::TemplateRaised.
  std::string render(const std::vector<ChatMessage>& messages, bool addGenerationPrompt) const;
  // As apply_chat_template(messages, tools=tools): messages as JSON objects (role, content,
  // tool_calls, ...), tools a JSON array or null. Built-in families take role/content only.
  std::string renderJson(const nlohmann::ordered_json& messages,
                         const nlohmann::ordered_json& tools, bool addGenerationPrompt) const;

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
  std::shared_ptr<const jinja::JinjaTemplate> jinja_;  // Family::Jinja
  nlohmann::ordered_json specialTokens_ = nlohmann::ordered_json::object();
};

}  // namespace lorascope::text

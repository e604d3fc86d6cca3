// ChatTemplate.cpp — choosing how to render a conversation (the model's own Jinja template, or
// a built-in family) and rendering it. Each built-in render function follows the Jinja template
// of its family line by line (comments quote the parts that matter), so ids of rendered prompts
// match transformers' apply_chat_template.
#include "text/ChatTemplate.h"

#include <nlohmann/json.hpp>

#include "common/OsError.h"  // defines: pathText
#include "common/Utf8.h"
#include "text/ConfigFiles.h"

namespace lorascope::text {

namespace {

using Json = nlohmann::json;

constexpr const char* kAlpacaPreamble =
    "Below is an instruction that describes a task. Write a response that appropriately "
    "completes the request.";
constexpr const char* kLlama3Date = "26 Jul 2024";

// A JSON file of the model folder, or nullopt when the folder has none.
std::optional<Json> readJsonIfPresent(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return std::nullopt;
  }
  return parseJsonText(readTextFile(path, "file"), common::pathText(path));
}

// tokenizer_config.json's chat_template: a string, or a list of {name, template}.
std::optional<std::string> chatTemplateText(const Json& config) {
  if (!config.is_object() || !config.contains("chat_template"))
    return std::nullopt;
  const Json& value = config.at("chat_template");
  if (value.is_string())
    return value.get<std::string>();
  if (value.is_array()) {
    for (const Json& entry : value) {
      if (entry.is_object() && entry.value("name", "") == "default" && entry.contains("template") &&
          entry.at("template").is_string()) {
        return entry.at("template").get<std::string>();
      }
    }
  }
  return std::nullopt;
}

// The default system prompt a ChatML template writes as a literal:
// '<|im_start|>system\nYou are ...<|im_end|>\n'.
std::string chatMlDefaultSystem(std::string_view source) {
  const std::string_view opener = "<|im_start|>system\\n";
  for (std::size_t pos = source.find(opener); pos != std::string_view::npos;
       pos = source.find(opener, pos + 1)) {
    const std::size_t begin = pos + opener.size();
    const std::size_t end = source.find("<|im_end|>", begin);
    if (end == std::string_view::npos)
      break;
    const std::string_view text = source.substr(begin, end - begin);
    if (!text.empty() && text.find_first_of("'\"{}+") == std::string_view::npos) {
      return std::string(text);
    }
  }
  return {};
}

// transformers' special_tokens_map: the special tokens tokenizer_config.json sets, as text.
nlohmann::ordered_json specialTokensOf(const Json& config) {
  nlohmann::ordered_json tokens = nlohmann::ordered_json::object();
  for (const char* key : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                          "cls_token", "mask_token"}) {
    if (const auto text = configTokenText(config, key))
      tokens[key] = *text;
  }
  if (config.is_object() && config.contains("additional_special_tokens") &&
      config.at("additional_special_tokens").is_array()) {
    nlohmann::ordered_json extra = nlohmann::ordered_json::array();
    for (const Json& token : config.at("additional_special_tokens")) {
      if (token.is_string())
        extra.push_back(token.get<std::string>());
      else if (token.is_object() && token.contains("content") && token.at("content").is_string())
        extra.push_back(token.at("content").get<std::string>());
    }
    tokens["additional_special_tokens"] = extra;
  }
  return tokens;
}

void requireRole(const ChatMessage& message, std::initializer_list<const char*> roles,
                 const std::string& family) {
  for (const char* role : roles) {
    if (message.role == role)
      return;
  }
  throw TextError("chat template " + family + ": role '" + message.role +
                  "' is not supported (use system, user or assistant)");
}

}  // namespace

ChatTemplate::ChatTemplate(Family family, std::string reason)
    : family_(family), reason_(std::move(reason)) {
  switch (family_) {
    case Family::ChatMl:
      eosToken_ = "<|im_end|>";
      break;
    case Family::Llama3:
      bosToken_ = "<|begin_of_text|>";
      eosToken_ = "<|eot_id|>";
      break;
    case Family::Llama2:
      bosToken_ = "<s>";
      eosToken_ = "</s>";
      break;
    case Family::Alpaca:
    case Family::Jinja:
      break;
  }
}

ChatTemplate ChatTemplate::fromJinja(std::string_view source, std::string origin,
                                     nlohmann::ordered_json specialTokens) {
  ChatTemplate t(Family::Jinja, "the chat_template of " + origin + ", rendered as Jinja");
  t.jinja_ = std::make_shared<const jinja::JinjaTemplate>(
      jinja::JinjaTemplate::parse(source, std::move(origin)));
  if (specialTokens.is_object()) {
    t.bosToken_ = specialTokens.value("bos_token", "");
    t.eosToken_ = specialTokens.value("eos_token", "");
    t.specialTokens_ = std::move(specialTokens);
  }
  return t;
}

ChatTemplate ChatTemplate::byName(std::string_view name) {
  const std::string reason = "chosen by name '" + std::string(name) + "'";
  if (name == "chatml")
    return ChatTemplate(Family::ChatMl, reason);
  if (name == "llama3")
    return ChatTemplate(Family::Llama3, reason);
  if (name == "llama3.1") {
    ChatTemplate t(Family::Llama3, reason);
    t.knowledgePreamble_ = true;
    return t;
  }
  if (name == "llama2")
    return ChatTemplate(Family::Llama2, reason);
  if (name == "alpaca")
    return ChatTemplate(Family::Alpaca, reason);
  throw TextError("unknown chat template '" + std::string(name) +
                  "' (known: chatml, llama3, llama3.1, llama2, alpaca)");
}

std::optional<ChatTemplate::Family> ChatTemplate::recognise(std::string_view source) {
  if (source.find("<|im_start|>") != std::string_view::npos)
    return Family::ChatMl;
  if (source.find("<|start_header_id|>") != std::string_view::npos)
    return Family::Llama3;
  if (source.find("[INST]") != std::string_view::npos &&
      source.find("<<SYS>>") != std::string_view::npos) {
    return Family::Llama2;
  }
  if (source.find("### Instruction") != std::string_view::npos)
    return Family::Alpaca;
  return std::nullopt;
}

ChatTemplate ChatTemplate::forModelDir(const std::filesystem::path& dir) {
  const auto configPath = dir / "tokenizer_config.json";
  const Json config = readJsonIfPresent(configPath).value_or(Json::object());
  std::optional<std::string> source = chatTemplateText(config);
  std::string from = common::pathText(configPath);
  if (!source) {
    // transformers >= 4.43 may keep the template in its own file.
    const auto jinjaPath = dir / "chat_template.jinja";
    std::error_code ec;
    if (std::filesystem::is_regular_file(jinjaPath, ec)) {
      source = readTextFile(jinjaPath, "chat_template.jinja");
      from = common::pathText(jinjaPath);
    }
  }
  std::optional<ChatTemplate> chosen;
  if (source) {
    std::string parseError;
    try {
      ChatTemplate own = fromJinja(*source, from, specialTokensOf(config));
      own.reason_ = "the model's own chat_template (" + from + "), rendered as Jinja";
      return own;
    } catch (const jinja::JinjaError& e) {
      parseError = e.what();
    }
    const auto family = recognise(*source);
    if (!family) {
      throw TextError(parseError +
                      "; nor is the chat_template one LoRAscope's built-in families recognise "
                      "(ChatML, Llama-3 headers, Llama-2 [INST] with <<SYS>>, alpaca); choose "
                      "one by name: chatml, llama3, llama3.1, llama2, alpaca");
    }
    chosen =
        ChatTemplate(*family, "built-in family recognised from the chat_template in " + from +
                                  ", which the Jinja interpreter cannot run (" + parseError + ")");
    if (*family == Family::ChatMl)
      chosen->defaultSystem_ = chatMlDefaultSystem(*source);
    if (*family == Family::Llama3) {
      chosen->knowledgePreamble_ = source->find("Cutting Knowledge Date") != std::string::npos;
    }
  } else {
    const std::string tokenizerClass = config.value("tokenizer_class", "");
    const auto modelConfig = readJsonIfPresent(dir / "config.json").value_or(Json::object());
    const std::string modelType =
        modelConfig.is_object() ? modelConfig.value("model_type", "") : std::string();
    if (tokenizerClass.rfind("Qwen2Tokenizer", 0) == 0 || modelType == "qwen2") {
      chosen =
          ChatTemplate(Family::ChatMl, "no chat_template; Qwen2 tokenizer/model type uses ChatML");
    } else {
      chosen = ChatTemplate(Family::Alpaca, "no chat_template in " + common::pathText(configPath) +
                                                " (a base model): plain alpaca prompt");
    }
  }
  if (const auto bos = configTokenText(config, "bos_token"))
    chosen->bosToken_ = *bos;
  if (const auto eos = configTokenText(config, "eos_token"))
    chosen->eosToken_ = *eos;
  return *chosen;
}

std::string ChatTemplate::alpacaUserMessage(std::string_view instruction, std::string_view input) {
  std::string out(instruction);
  if (!input.empty()) {
    out += "\n\n### Input:\n";
    out += input;
  }
  return out;
}

std::string ChatTemplate::name() const {
  switch (family_) {
    case Family::ChatMl:
      return "chatml";
    case Family::Llama3:
      return "llama3";
    case Family::Llama2:
      return "llama2";
    case Family::Alpaca:
      return "alpaca";
    case Family::Jinja:
      return "jinja";
  }
  return "unknown";
}

void ChatTemplate::setSpecialTokens(std::string bosToken, std::string eosToken) {
  bosToken_ = std::move(bosToken);
  eosToken_ = std::move(eosToken);
}

std::string ChatTemplate::renderJson(const nlohmann::ordered_json& messages,
                                     const nlohmann::ordered_json& tools,
                                     bool addGenerationPrompt) const {
  if (family_ == Family::Jinja) {
    nlohmann::ordered_json context = specialTokens_;
    context["messages"] = messages;
    context["tools"] = tools;
    context["documents"] = nullptr;
    context["add_generation_prompt"] = addGenerationPrompt;
    return jinja_->render(context);
  }
  if (!tools.is_null() && !(tools.is_array() && tools.empty()))
    throw TextError("chat template " + name() + ": a built-in family cannot render tools");
  std::vector<ChatMessage> plain;
  for (const auto& m : messages) {
    if (!m.is_object() || !m.contains("role") || !m.at("role").is_string() ||
        (m.contains("content") && !m.at("content").is_string()) || m.contains("tool_calls")) {
      throw TextError("chat template " + name() +
                      ": a built-in family takes messages with a role and text content only");
    }
    plain.push_back({m.at("role").get<std::string>(), m.value("content", "")});
  }
  return render(plain, addGenerationPrompt);
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                 bool addGenerationPrompt) const {
  if (family_ == Family::Jinja) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ChatMessage& m : messages)
      list.push_back({{"role", m.role}, {"content", m.content}});
    return renderJson(list, nullptr, addGenerationPrompt);
  }
  for (const ChatMessage& message : messages) {
    requireRole(message, {"system", "user", "assistant"}, name());
  }
  switch (family_) {
    case Family::ChatMl:
      return renderChatMl(messages, addGenerationPrompt);
    case Family::Llama3:
      return renderLlama3(messages, addGenerationPrompt);
    case Family::Llama2:
      return renderLlama2(messages);
    case Family::Alpaca:
      return renderAlpaca(messages, addGenerationPrompt);
    case Family::Jinja:
      break;
  }
  return {};
}

std::string ChatTemplate::renderChatMl(const std::vector<ChatMessage>& messages,
                                       bool addGenerationPrompt) const {
  std::string out;
  // {% if messages[0]['role'] != 'system' %}'<|im_start|>system\n<default><|im_end|>\n'
  if (!defaultSystem_.empty() && (messages.empty() || messages.front().role != "system")) {
    out += "<|im_start|>system\n" + defaultSystem_ + "<|im_end|>\n";
  }
  for (const ChatMessage& m : messages) {
    out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
  }
  if (addGenerationPrompt)
    out += "<|im_start|>assistant\n";
  return out;
}

std::string ChatTemplate::renderLlama3(const std::vector<ChatMessage>& messages,
                                       bool addGenerationPrompt) const {
  std::string out;
  std::size_t first = 0;
  if (knowledgePreamble_) {
    // Llama 3.1+: bos, then a system turn that always exists.
    std::string system;
    if (!messages.empty() && messages.front().role == "system") {
      system = std::string(common::utf8::trimWhiteSpace(messages.front().content));
      first = 1;
    }
    out += bosToken_;
    out += "<|start_header_id|>system<|end_header_id|>\n\n";
    out +=
        std::string("Cutting Knowledge Date: December 2023\nToday Date: ") + kLlama3Date + "\n\n";
    out += system + "<|eot_id|>";
  }
  for (std::size_t i = first; i < messages.size(); ++i) {
    // Llama 3.0 puts bos before the first message only.
    if (i == 0 && !knowledgePreamble_)
      out += bosToken_;
    out += "<|start_header_id|>" + messages[i].role + "<|end_header_id|>\n\n" +
           std::string(common::utf8::trimWhiteSpace(messages[i].content)) + "<|eot_id|>";
  }
  if (addGenerationPrompt)
    out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string ChatTemplate::renderLlama2(const std::vector<ChatMessage>& messages) const {
  std::size_t first = 0;
  std::string system;
  if (!messages.empty() && messages.front().role == "system") {
    system = messages.front().content;
    first = 1;
  }
  std::string out;
  for (std::size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool expectUser = (i - first) % 2 == 0;
    if ((m.role == "user") != expectUser || m.role == "system") {
      throw TextError(
          "chat template llama2: conversation roles must alternate user/assistant/user/... "
          "after an optional first system message (message " +
          std::to_string(i) + " is '" + m.role + "')");
    }
    std::string content = m.content;
    if (i == first && first == 1)
      content = "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content;
    if (m.role == "user") {
      out +=
          bosToken_ + "[INST] " + std::string(common::utf8::trimWhiteSpace(content)) + " [/INST]";
    } else {
      out += " " + std::string(common::utf8::trimWhiteSpace(content)) + " " + eosToken_;
    }
  }
  return out;
}

std::string ChatTemplate::renderAlpaca(const std::vector<ChatMessage>& messages,
                                       bool addGenerationPrompt) const {
  std::size_t first = 0;
  std::string out = kAlpacaPreamble;
  if (!messages.empty() && messages.front().role == "system") {
    out = messages.front().content;
    first = 1;
  }
  for (std::size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "system") {
      throw TextError("chat template alpaca: a system message may only come first");
    }
    if (m.role == "user") {
      out += "\n\n### Instruction:\n" + m.content;
    } else {
      out += "\n\n### Response:\n" + m.content + eosToken_;
    }
  }
  if (addGenerationPrompt)
    out += "\n\n### Response:\n";
  return out;
}

}  // namespace lorascope::text

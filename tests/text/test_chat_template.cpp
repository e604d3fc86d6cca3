// test_chat_template.cpp — a model folder's own chat_template is rendered as Jinja; the
// built-in families (the fallback) render the text their Jinja templates produce, are
// recognised from tokenizer_config.json / chat_template.jinja / config.json when the template
// cannot be run, keep the prompt-prefix property masking relies on, and reject what they
// cannot express.
#include "TempDir.h"
#include "TestRunner.h"

#include <filesystem>
#include <fstream>

#include "TestPaths.h"
#include "text/ChatTemplate.h"
#include "text/Tokenizer.h"

using lorascope::text::ChatMessage;
using lorascope::text::ChatTemplate;
using lorascope::text::TextError;
using lorascope::text::Tokenizer;

namespace {

const std::vector<ChatMessage> kConversation = {
    {"system", "You are terse."}, {"user", "Hi there"}, {"assistant", "Hello!"}};

// A ChatML template in the style of Qwen2.5's (a default system prompt when none is given).
constexpr const char* kQwenTemplate =
    "{%- if messages[0]['role'] == 'system' %}\n"
    "    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n"
    "{%- else %}\n"
    "    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
    "assistant.<|im_end|>\\n' }}\n"
    "{%- endif %}\n"
    "{%- for message in messages %}\n"
    "    {%- if not (message.role == 'system' and loop.first) %}\n"
    "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}\n"
    "    {%- endif %}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}\n";

void writeText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::string jsonString(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const TextError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE(chatMlRendersTurns) {
  const ChatTemplate t = ChatTemplate::byName("chatml");
  COMPARE(t.render(kConversation, false),
          std::string("<|im_start|>system\nYou are terse.<|im_end|>\n"
                      "<|im_start|>user\nHi there<|im_end|>\n"
                      "<|im_start|>assistant\nHello!<|im_end|>\n"));
  COMPARE(t.render({{"user", "Hi"}}, true),
          std::string("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"));
}

TEST_CASE(modelsOwnTemplateRendersAsJinja) {
  lstest::TempDir dir;
  const std::filesystem::path root = dir.path();
  writeText(root / "tokenizer_config.json",
            "{\"chat_template\": " + jsonString(kQwenTemplate) +
                ", \"eos_token\": \"<|im_end|>\", \"tokenizer_class\": \"Qwen2Tokenizer\"}");
  const ChatTemplate t = ChatTemplate::forModelDir(root);
  COMPARE(t.name(), std::string("jinja"));
  VERIFY2(t.reason().find("model's own chat_template") != std::string::npos, t.reason().c_str());
  COMPARE(t.eosToken(), std::string("<|im_end|>"));
  COMPARE(t.render({{"user", "Hi"}}, true),
          std::string("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
                      "helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                      "<|im_start|>assistant\n"));
  // A system message of the conversation replaces the default one.
  COMPARE(t.render(kConversation, false).rfind("<|im_start|>system\nYou are terse.", 0),
          std::size_t{0});
}

TEST_CASE(llama3RendersHeaders) {
  const ChatTemplate t = ChatTemplate::byName("llama3");
  COMPARE(t.render(kConversation, false),
          std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                      "You are terse.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\n"
                      "Hi there<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
                      "Hello!<|eot_id|>"));
  // Content is trimmed, as the template's `| trim` does.
  COMPARE(t.render({{"user", "  padded \n"}}, true),
          std::string("<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\npadded"
                      "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"));
}

// A template the Jinja interpreter cannot run ({% call %} is not supported) falls back to
// the built-in family it is recognised as.
TEST_CASE(llama31PreambleFromTemplate) {
  lstest::TempDir dir;
  const std::filesystem::path root = dir.path();
  // transformers >= 4.43 may save the template as chat_template.jinja.
  writeText(root / "chat_template.jinja",
            "{{- bos_token }}{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}"
            "{{- \"Cutting Knowledge Date: December 2023\\n\" }}{% call x() %}{% endcall %}");
  writeText(root / "tokenizer_config.json", R"({"bos_token": "<|begin_of_text|>"})");
  const ChatTemplate t = ChatTemplate::forModelDir(root);
  COMPARE(t.name(), std::string("llama3"));
  VERIFY2(t.reason().find("unsupported tag {% call %}") != std::string::npos, t.reason().c_str());
  VERIFY(t.llama3KnowledgePreamble());
  COMPARE(t.render({{"user", "Hi"}}, false),
          std::string("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
                      "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
                      "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"));
}

TEST_CASE(llama2FoldsSystemIntoFirstTurn) {
  const ChatTemplate t = ChatTemplate::byName("llama2");
  std::vector<ChatMessage> turns = kConversation;
  turns.push_back({"user", "Again"});
  COMPARE(t.render(turns, true),
          std::string("<s>[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\nHi there [/INST] "
                      "Hello! </s><s>[INST] Again [/INST]"));
  const std::string message = errorOf([&] { t.render({{"user", "a"}, {"user", "b"}}, false); });
  VERIFY2(message.find("must alternate") != std::string::npos, message.c_str());
}

TEST_CASE(alpacaUsesInstructionAndResponse) {
  ChatTemplate t = ChatTemplate::byName("alpaca");
  t.setSpecialTokens("", "</s>");
  const std::string user = ChatTemplate::alpacaUserMessage("Translate.", "Bonjour");
  COMPARE(user, std::string("Translate.\n\n### Input:\nBonjour"));
  COMPARE(t.render({{"user", user}, {"assistant", "Hello"}}, false),
          std::string("Below is an instruction that describes a task. Write a response that "
                      "appropriately completes the request.\n\n### Instruction:\nTranslate."
                      "\n\n### Input:\nBonjour\n\n### Response:\nHello</s>"));
  COMPARE(ChatTemplate::alpacaUserMessage("Say hi.", ""), std::string("Say hi."));
}

// render(prompt, true) must be a prefix of render(prompt + reply, false) for masking.
TEST_DATA(generationPromptIsPrefixOfAnswer) {
  lstest::addColumn<std::string>("name");
  for (const char* name : {"chatml", "llama3", "llama3.1", "llama2", "alpaca"}) {
    lstest::newRow(name) << name;
  }
}
TEST_CASE(generationPromptIsPrefixOfAnswer) {
  FETCH(std::string, name);
  const ChatTemplate t = ChatTemplate::byName(name);
  const std::vector<ChatMessage> prompt(kConversation.begin(), kConversation.end() - 1);
  const std::string prefix = t.render(prompt, true);
  const std::string full = t.render(kConversation, false);
  VERIFY2(full.rfind(prefix, 0) == 0, (prefix + "\n---\n" + full).c_str());
  VERIFY(full.size() > prefix.size());
}

TEST_CASE(choosesFromModelFolder) {
  lstest::TempDir dir;
  const std::filesystem::path root = dir.path();
  // Nothing at all: a base model, alpaca.
  ChatTemplate t = ChatTemplate::forModelDir(root);
  COMPARE(t.name(), std::string("alpaca"));
  VERIFY2(t.reason().find("no chat_template") != std::string::npos, t.reason().c_str());
  // A Qwen2 model without a template still speaks ChatML.
  writeText(root / "config.json", R"({"model_type": "qwen2"})");
  COMPARE(ChatTemplate::forModelDir(root).name(), std::string("chatml"));
  // A template with its special tokens (AddedToken objects too) is run as Jinja.
  writeText(root / "tokenizer_config.json",
            R"({"chat_template": "{{ bos_token + '[INST] ' + messages[0].content }}",
                "bos_token": {"content": "<s>"}, "eos_token": "</s>"})");
  t = ChatTemplate::forModelDir(root);
  COMPARE(t.name(), std::string("jinja"));
  COMPARE(t.bosToken(), std::string("<s>"));
  COMPARE(t.render({{"user", "Hi"}}, false), std::string("<s>[INST] Hi"));
  // An unrecognised template that does not parse is an error that names the file, the
  // problem and the way out.
  writeText(root / "tokenizer_config.json", "{\"chat_template\": \"{{ '<|user|>' \"}");
  const std::string message = errorOf([&] { ChatTemplate::forModelDir(root); });
  VERIFY2(message.find("tokenizer_config.json line 1") != std::string::npos &&
              message.find("never closed") != std::string::npos &&
              message.find("choose one by name") != std::string::npos,
          message.c_str());
}

// A model folder under C:\Users\Łukasz\日本: its template is read, and the reason and the errors
// name its files as UTF-8 text (on Windows, path::string() would throw for these names).
TEST_CASE(modelFolderUnderNonAsciiNamesIsReadAndNamed) {
  lstest::TempDir dir;
  const std::filesystem::path root = dir.nonAsciiFolder();
  const std::string config = lstest::utf8Text(root / "tokenizer_config.json");
  ChatTemplate t = ChatTemplate::forModelDir(root);
  VERIFY2(t.reason().find("no chat_template in " + config) != std::string::npos,
          t.reason().c_str());
  writeText(root / "tokenizer_config.json",
            R"({"chat_template": "{{ bos_token + '[INST] ' + messages[0].content }}",
                "bos_token": "<s>"})");
  t = ChatTemplate::forModelDir(root);
  COMPARE(t.render({{"user", "Hi"}}, false), std::string("<s>[INST] Hi"));
  VERIFY2(t.reason().find("chat_template (" + config + ")") != std::string::npos,
          t.reason().c_str());
  writeText(root / "tokenizer_config.json", "{\"chat_template\": \"{{ '<|user|>' \"}");
  const std::string message = errorOf([&] { ChatTemplate::forModelDir(root); });
  VERIFY2(message.find(config + " line 1") != std::string::npos &&
              message.find(lstest::kNonAsciiSub) != std::string::npos,
          message.c_str());
}

TEST_CASE(rejectsUnknownNamesAndRoles) {
  const std::string message = errorOf([] { ChatTemplate::byName("vicuna"); });
  VERIFY2(message.find("known: chatml, llama3, llama3.1, llama2, alpaca") != std::string::npos,
          message.c_str());
  const std::string role = errorOf([] {
    ChatTemplate::byName("chatml").render({{"tool", "{}"}}, false);
  });
  VERIFY2(role.find("role 'tool' is not supported") != std::string::npos, role.c_str());
}

// A rendered ChatML conversation tokenizes its markers as single special-token ids.
TEST_CASE(renderedChatEncodesMarkersAsSpecialTokens) {
  const Tokenizer tokenizer = Tokenizer::fromFile(
      std::filesystem::path(lstest::sourcePath("tests/text/data")) / "qwen2_bpe.tokenizer.json");
  const std::string text = ChatTemplate::byName("chatml").render(kConversation, false);
  const auto ids = tokenizer.encode(text);
  const auto imStart = tokenizer.tokenId("<|im_start|>").value();
  COMPARE(std::count(ids.begin(), ids.end(), imStart), std::ptrdiff_t{3});
  COMPARE(tokenizer.decode(ids), text);
}

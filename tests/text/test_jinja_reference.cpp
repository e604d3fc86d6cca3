// test_jinja_reference.cpp — the ten real chat templates of ../shared/fixtures/chat_templates,
// rendered by LoRAscope over the conversations of data/chat_template_reference.json, must equal
// transformers' apply_chat_template byte for byte (or raise the same raise_exception message).
// The reference is committed (scripts/reference/chat_templates.py made it on the GPU machine);
// the templates are not: the test reads them through LORASCOPE_SHARED_FIXTURES and exits 77
// (skipped) when they are absent. Qt-free.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "TestPaths.h"
#include "text/ChatTemplate.h"

namespace fs = std::filesystem;
using lorascope::jinja::TemplateRaised;
using lorascope::text::ChatTemplate;

namespace {

std::string readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first differing byte, with some context, for a readable failure.
std::string firstDifference(const std::string& want, const std::string& got) {
  std::size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i])
    ++i;
  const std::size_t from = i > 40 ? i - 40 : 0;
  return "byte " + std::to_string(i) + "\n  want: " + nlohmann::json(want.substr(from, 80)).dump() +
         "\n  got:  " + nlohmann::json(got.substr(from, 80)).dump();
}

}  // namespace

int main() {
  const char* shared = std::getenv("LORASCOPE_SHARED_FIXTURES");
  const fs::path templates = shared ? fs::path(shared) / "chat_templates" : fs::path();
  if (!shared || !fs::is_directory(templates)) {
    std::cout << "SKIP: the shared chat templates are not at "
              << (shared ? templates.string() : std::string("$LORASCOPE_SHARED_FIXTURES (unset)"))
              << "\n";
    return 77;
  }
  const fs::path referencePath =
      fs::path(lstest::sourcePath("tests/text/data")) / "chat_template_reference.json";
  const auto reference = nlohmann::ordered_json::parse(readFile(referencePath));
  std::cout << "reference: transformers " << reference.at("transformers").get<std::string>()
            << ", jinja2 " << reference.at("jinja2").get<std::string>() << "\n";
  int failures = 0;
  int outputs = 0;
  int errors = 0;
  for (const auto& c : reference.at("cases")) {
    const std::string file = c.at("template").get<std::string>();
    const auto& conversation =
        reference.at("conversations").at(c.at("conversation").get<std::string>());
    const std::string label =
        file + " / " + c.at("conversation").get<std::string>() +
        (c.at("add_generation_prompt").get<bool>() ? " / generation prompt" : "");
    const fs::path path = templates / file;
    if (!fs::is_regular_file(path)) {
      std::cout << "FAIL " << label << ": " << path << " is missing\n";
      ++failures;
      continue;
    }
    std::string got;
    std::string raised;
    try {
      const ChatTemplate t =
          ChatTemplate::fromJinja(readFile(path), file, reference.at("special_tokens"));
      got = t.renderJson(conversation.at("messages"), conversation.at("tools"),
                         c.at("add_generation_prompt").get<bool>());
    } catch (const TemplateRaised& e) {
      raised = e.templateMessage();
    } catch (const std::exception& e) {
      std::cout << "FAIL " << label << ": " << e.what() << "\n";
      ++failures;
      continue;
    }
    if (c.contains("error")) {
      ++errors;
      if (raised != c.at("error").get<std::string>()) {
        std::cout << "FAIL " << label << ": expected raise_exception(" << c.at("error").dump()
                  << "), got " << (raised.empty() ? "output" : nlohmann::json(raised).dump())
                  << "\n";
        ++failures;
      }
      continue;
    }
    ++outputs;
    const std::string want = c.at("output").get<std::string>();
    if (!raised.empty() || got != want) {
      std::cout << "FAIL " << label << ": "
                << (raised.empty() ? firstDifference(want, got) : "raised " + raised) << "\n";
      ++failures;
    }
  }
  std::cout << outputs << " renderings and " << errors << " raised errors compared, " << failures
            << " failed\n";
  return failures == 0 ? 0 : 1;
}

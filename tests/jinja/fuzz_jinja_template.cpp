// fuzz_jinja_template.cpp — libFuzzer target: the input is a chat template, rendered over a
// conversation with a system prompt, tool calls and a tool list, with small limits and a small
// render budget (memory and time). Anything but a JinjaError escaping (TemplateRaised is one), a
// hang, a sanitizer report or memory past CTest's -rss_limit_mb (512) is a bug.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "jinja/JinjaTemplate.h"

namespace {

const nlohmann::ordered_json& conversation() {
  static const nlohmann::ordered_json context = nlohmann::ordered_json::parse(R"({
    "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true, "documents": null,
    "messages": [
      {"role": "system", "content": "Be brief."},
      {"role": "user", "content": "Weather in Paris? \u00e9 \ud83d\ude00"},
      {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
      {"role": "tool", "content": "{\"temp\": 18.5}"},
      {"role": "assistant", "content": "18.5 degrees."}],
    "tools": [{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}]})");
  return context;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  lorascope::jinja::JinjaLimits limits;
  limits.maxOutputBytes = 1 << 20;
  limits.maxLoopIterations = 20000;
  limits.maxDepth = 64;
  limits.maxValueBytes = 32u << 20;  // with the sanitizer's overhead, well inside 512 MB
  limits.maxRenderTime = std::chrono::milliseconds(2000);
  try {
    const auto t = lorascope::jinja::JinjaTemplate::parse(source, "fuzz.jinja", limits);
    (void)t.render(conversation());
  } catch (const lorascope::jinja::JinjaError&) {
    // A syntax error, a runtime error, a limit or raise_exception: rejected with a message.
  }
  return 0;
}

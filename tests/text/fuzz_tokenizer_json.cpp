// fuzz_tokenizer_json.cpp — libFuzzer target: the input is a tokenizer.json; when it loads, the
// tail after the last NUL byte (or a fixed sample) is encoded and decoded. Anything but a
// TextError escaping, or a sanitizer report, is a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "text/Tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = input.rfind('\0');
  const std::string_view json = nul == std::string_view::npos ? input : input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos
                                    ? std::string_view("Hello <|im_start|> wörld  12345 😀\n")
                                    : input.substr(nul + 1);
  try {
    const auto tokenizer = lorascope::text::Tokenizer::fromJsonText(json, "fuzz.json");
    const auto ids = tokenizer.encode(text);
    (void)tokenizer.decode(ids, false);
    (void)tokenizer.decode(ids, true);
    (void)tokenizer.encodeWithPostProcessor(text);
  } catch (const lorascope::text::TextError&) {
    // Rejected input with a message: the expected outcome for most mutations.
  }
  return 0;
}

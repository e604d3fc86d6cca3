// cli/cmd_tokenize.cpp — `lorascope-train tokenize --tokenizer PATH_OR_MODEL_DIR [--json]
// [--decode] [--skip-special] [--post-processor]`: one line of stdin in, one line out.
//   encode: each line is text (a trailing CR is dropped) or, with --json, a JSON string;
//           prints the ids as a JSON array. --post-processor adds the tokenizer's own special
//           tokens (e.g. Llama-3's <|begin_of_text|>), as HF's default encode does.
//   decode: each line is a JSON array of ids; prints the text, or with --json a JSON string.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/Commands.h"
#include "job/CliArgs.h"
#include "text/Tokenizer.h"

namespace lorascope::cli {

namespace {

text::Tokenizer loadTokenizer(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return text::Tokenizer::fromModelDir(path);
  return text::Tokenizer::fromFile(path);
}

// Writes the ids of one line as a JSON array straight to `out`: a long line's ids never exist
// a second time as a JSON document or a string (a 200 MB line used 30-42x its size).
void encodeLine(const text::Tokenizer& tokenizer, std::string& line, bool json, bool postProcessor,
                std::ostream& out) {
  std::string_view input = line;
  std::string decoded;
  if (json) {
    const nlohmann::json parsed = nlohmann::json::parse(line);
    if (!parsed.is_string())
      throw std::runtime_error("expected a JSON string");
    decoded = parsed.get<std::string>();
    input = decoded;
  } else if (!input.empty() && input.back() == '\r') {
    input.remove_suffix(1);
  }
  std::vector<std::int32_t> ids =
      postProcessor ? tokenizer.encodeWithPostProcessor(input) : tokenizer.encode(input);
  std::string().swap(decoded);
  std::string().swap(line);  // the input is done with before the output grows
  out << '[';
  char digits[16];
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const int n = std::snprintf(digits, sizeof digits, i == 0 ? "%d" : ",%d", ids[i]);
    out.write(digits, n);
  }
  out << ']';
}

std::string decodeLine(const text::Tokenizer& tokenizer, const std::string& line, bool json,
                       bool skipSpecial) {
  const nlohmann::json parsed = nlohmann::json::parse(line);
  if (!parsed.is_array())
    throw std::runtime_error("expected a JSON array of ids");
  // Each id must be a whole number an id can be: get<int32_t>() would take 1.5 as 1, true as 1
  // and 2^32 + 34 as 34.
  std::vector<std::int32_t> ids;
  ids.reserve(parsed.size());
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    const nlohmann::json& id = parsed[i];
    if (!id.is_number_integer() ||
        (id.is_number_unsigned() && id.get<std::uint64_t>() > 0x7FFFFFFF) ||
        (!id.is_number_unsigned() &&
         (id.get<std::int64_t>() < 0 || id.get<std::int64_t>() > 0x7FFFFFFF))) {
      throw std::runtime_error("entry " + std::to_string(i) + " (" + id.dump() +
                               ") is not an id (a whole number from 0 to 2147483647)");
    }
    ids.push_back(static_cast<std::int32_t>(id.get<std::int64_t>()));
  }
  const std::string decoded = tokenizer.decode(ids, skipSpecial);
  return json ? nlohmann::json(decoded).dump() : decoded;
}

}  // namespace

const job::CommandSpec& tokenizeCommand() {
  using job::OptionType;
  static const job::CommandSpec command{
      .name = "tokenize",
      .operands = "",
      .summary = "Lines of stdin to token ids (or, with --decode, ids to text).",
      .options =
          {
              {.name = "tokenizer",
               .type = OptionType::Text,
               .help = "A tokenizer.json or a model folder.",
               .valueName = "PATH"},
              {.name = "json",
               .type = OptionType::Bool,
               .help = "Print JSON.",
               .defaultText = "false"},
              {.name = "decode",
               .type = OptionType::Bool,
               .help = "Read ids, print text.",
               .defaultText = "false"},
              {.name = "skip-special",
               .type = OptionType::Bool,
               .help = "With --decode: leave special tokens out.",
               .defaultText = "false"},
              {.name = "post-processor",
               .type = OptionType::Bool,
               .help = "Add the tokenizer's special tokens (BOS, …).",
               .defaultText = "false"},
          },
  };
  return command;
}

int runTokenize(const Args& args) {
  const job::CliArgs parsed(args, tokenizeCommand());
  if (!parsed.positional().empty()) {
    throw job::UsageError("unexpected argument '" + parsed.positional().front() +
                          "' (text comes from stdin, one item per line)");
  }
  const text::Tokenizer tokenizer = loadTokenizer(parsed.required("tokenizer"));
  const bool json = parsed.has("json");
  const bool decode = parsed.has("decode");
  std::string line;
  for (std::size_t lineNumber = 1; std::getline(std::cin, line); ++lineNumber) {
    try {
      if (decode) {
        std::cout << decodeLine(tokenizer, line, json, parsed.has("skip-special"));
      } else {
        encodeLine(tokenizer, line, json, parsed.has("post-processor"), std::cout);
      }
      std::cout << '\n';
    } catch (const std::exception& e) {
      std::cout.flush();
      std::cerr << "lorascope-train tokenize: stdin line " << lineNumber << ": " << e.what()
                << "\n";
      return 1;
    }
  }
  return 0;
}

}  // namespace lorascope::cli

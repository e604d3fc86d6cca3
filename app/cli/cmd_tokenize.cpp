// cli/cmd_tokenize.cpp — `lorascope-train tokenize --tokenizer PATH_OR_MODEL_DIR [--json]
// [--decode] [--skip-special] [--post-processor]`: one line of stdin in, one line out.
//   encode: each line is text (a trailing CR is dropped) or, with --json, a JSON string;
//           prints the ids as a JSON array. Lines of any length: the text streams through the
//           tokenizer (text/StreamingEncoder), so memory stays bounded. --post-processor adds the
//           tokenizer's own special tokens (e.g. Llama-3's <|begin_of_text|>), as HF's default
//           encode does.
//   decode: each line is a JSON array of ids; prints the text, or with --json a JSON string.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/Commands.h"
#include "common/OsError.h"  // defines: pathFromUtf8
#include "job/CliArgs.h"
#include "text/StreamingEncoder.h"
#include "text/Tokenizer.h"

namespace lorascope::cli {

namespace {

text::Tokenizer loadTokenizer(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return text::Tokenizer::fromModelDir(path);
  return text::Tokenizer::fromFile(path);
}

// Encoding reads stdin in blocks and hands each line's text on as it arrives (a 200 MB line is
// never held whole: text::StreamingEncoder); a line's ids are printed as they become final.
constexpr std::size_t kReadBytes = 64 << 10;

// One --json line, a JSON string, decoded as its bytes arrive; the decoded text goes to `text`
// a block at a time. Throws std::runtime_error for a line that is not one JSON string.
class JsonStringDecoder {
 public:
  explicit JsonStringDecoder(std::function<void(std::string_view)> text) : text_(std::move(text)) {}

  void feed(std::string_view bytes) {
    for (const char c : bytes) {
      step(c);
      ++offset_;
    }
    if (!decoded_.empty()) {
      text_(decoded_);
      decoded_.clear();
    }
  }

  // The line ended.
  void finish() {
    if (state_ != State::After)
      fail(state_ == State::Before ? "expected a JSON string" : "the JSON string is not closed");
    state_ = State::Before;
    offset_ = 0;
  }

 private:
  enum class State { Before, Inside, Escape, Unicode, After };

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(what + " (byte " + std::to_string(offset_) + " of the line)");
  }
  static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

  void step(char c) {
    switch (state_) {
      case State::Before:
        if (c == '"')
          state_ = State::Inside;
        else if (!blank(c))
          fail("expected a JSON string");
        return;
      case State::After:
        if (!blank(c))
          fail("unexpected text after the JSON string");
        return;
      case State::Inside:
        if (c == '"') {
          if (highSurrogate_ != 0)
            fail("\\u escape: a high surrogate without its low half");
          state_ = State::After;
        } else if (c == '\\') {
          state_ = State::Escape;
        } else if (static_cast<unsigned char>(c) < 0x20) {
          fail("a control character inside the JSON string (write it as an escape)");
        } else {
          if (highSurrogate_ != 0)
            fail("\\u escape: a high surrogate without its low half");
          decoded_ += c;
        }
        return;
      case State::Escape:
        state_ = State::Inside;
        if (c == 'u') {
          state_ = State::Unicode;
          unicode_ = 0;
          hexDigits_ = 0;
          return;
        }
        if (highSurrogate_ != 0)
          fail("\\u escape: a high surrogate without its low half");
        switch (c) {
          case '"':
            decoded_ += '"';
            return;
          case '\\':
            decoded_ += '\\';
            return;
          case '/':
            decoded_ += '/';
            return;
          case 'b':
            decoded_ += '\b';
            return;
          case 'f':
            decoded_ += '\f';
            return;
          case 'n':
            decoded_ += '\n';
            return;
          case 'r':
            decoded_ += '\r';
            return;
          case 't':
            decoded_ += '\t';
            return;
          default:
            fail(std::string("invalid escape '\\") + c + "'");
        }
      case State::Unicode: {
        const int digit = (c >= '0' && c <= '9')   ? c - '0'
                          : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                          : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                   : -1;
        if (digit < 0)
          fail("\\u escape: expected 4 hexadecimal digits");
        unicode_ = unicode_ * 16 + static_cast<std::uint32_t>(digit);
        if (++hexDigits_ < 4)
          return;
        state_ = State::Inside;
        codePoint();
        return;
      }
    }
  }

  void codePoint() {
    std::uint32_t cp = unicode_;
    if (highSurrogate_ != 0) {
      if (cp < 0xDC00 || cp > 0xDFFF)
        fail("\\u escape: a high surrogate without its low half");
      cp = 0x10000 + ((highSurrogate_ - 0xD800) << 10) + (cp - 0xDC00);
      highSurrogate_ = 0;
    } else if (cp >= 0xD800 && cp <= 0xDBFF) {
      highSurrogate_ = cp;
      return;
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      fail("\\u escape: a low surrogate without its high half");
    }
    if (cp < 0x80) {
      decoded_ += static_cast<char>(cp);
    } else if (cp < 0x800) {
      decoded_ += static_cast<char>(0xC0 | (cp >> 6));
      decoded_ += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      decoded_ += static_cast<char>(0xE0 | (cp >> 12));
      decoded_ += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      decoded_ += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      decoded_ += static_cast<char>(0xF0 | (cp >> 18));
      decoded_ += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      decoded_ += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      decoded_ += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  std::function<void(std::string_view)> text_;
  State state_ = State::Before;
  std::string decoded_;  // of the current block
  std::uint32_t unicode_ = 0;
  int hexDigits_ = 0;
  std::uint32_t highSurrogate_ = 0;
  std::size_t offset_ = 0;
};

// Encodes every line of stdin, printing one JSON array of ids per line.
int encodeLines(const text::Tokenizer& tokenizer, bool json, bool postProcessor) {
  bool opened = false;  // this line's '[' is out
  bool anyId = false;
  const auto open = [&] {
    if (!opened)
      std::cout << '[';
    opened = true;
  };
  text::StreamingEncoder encoder(tokenizer, postProcessor, [&](std::span<const std::int32_t> ids) {
    open();
    char digits[16];
    for (const std::int32_t id : ids) {
      const int n = std::snprintf(digits, sizeof digits, anyId ? ",%d" : "%d", id);
      std::cout.write(digits, n);
      anyId = true;
    }
  });
  JsonStringDecoder strings([&](std::string_view text) { encoder.append(text); });
  bool lineStarted = false;
  bool heldReturn = false;  // a '\r' at the end of a block: dropped if the line ends there
  const auto feed = [&](std::string_view bytes) {
    if (json) {
      strings.feed(bytes);
      return;
    }
    if (heldReturn && !bytes.empty()) {
      encoder.append("\r");
      heldReturn = false;
    }
    if (!bytes.empty() && bytes.back() == '\r') {
      bytes.remove_suffix(1);
      heldReturn = true;
    }
    encoder.append(bytes);
  };
  std::size_t lineNumber = 1;
  const auto endLine = [&] {
    if (json)
      strings.finish();
    encoder.finish();
    open();
    std::cout << "]\n";
    opened = anyId = lineStarted = heldReturn = false;
    ++lineNumber;
  };
  std::vector<char> block(kReadBytes);
  try {
    while (std::cin.read(block.data(), static_cast<std::streamsize>(block.size())) ||
           std::cin.gcount() > 0) {
      std::string_view bytes(block.data(), static_cast<std::size_t>(std::cin.gcount()));
      while (!bytes.empty()) {
        lineStarted = true;
        const std::size_t newline = bytes.find('\n');
        feed(bytes.substr(0, newline));
        if (newline == std::string_view::npos)
          break;
        endLine();
        bytes.remove_prefix(newline + 1);
      }
    }
    if (lineStarted)
      endLine();  // the last line, without its newline
  } catch (const std::exception& e) {
    if (opened)
      std::cout << '\n';  // the ids printed of the failed line stay incomplete
    std::cout.flush();
    std::cerr << "lorascope-train tokenize: stdin line " << lineNumber << ": " << e.what() << "\n";
    return 1;
  }
  return 0;
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
      .summary =
          "Lines of stdin to token ids, each line's ids a JSON array (or, with --decode, "
          "JSON arrays of ids to text).",
      .options =
          {
              {.name = "tokenizer",
               .type = OptionType::Text,
               .help = "A tokenizer.json or a model folder.",
               .valueName = "PATH"},
              {.name = "json",
               .type = OptionType::Bool,
               .help = "Encoding: read each line as a JSON string; decoding: print each text "
                       "as a JSON string.",
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
               .help = "When encoding: add the tokenizer's special tokens (BOS, …).",
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
  const text::Tokenizer tokenizer =
      loadTokenizer(common::pathFromUtf8(parsed.required("tokenizer")));
  const bool json = parsed.has("json");
  if (!parsed.has("decode"))
    return encodeLines(tokenizer, json, parsed.has("post-processor"));
  std::string line;
  for (std::size_t lineNumber = 1; std::getline(std::cin, line); ++lineNumber) {
    try {
      std::cout << decodeLine(tokenizer, line, json, parsed.has("skip-special")) << '\n';
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

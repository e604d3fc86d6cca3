// Decoders.cpp — tokenizer.json decoders: ByteLevel, Metaspace, ByteFallback, Fuse, Strip,
// Replace and Sequence. Each turns the list of token strings into a new list; decode() joins
// the final list.
#include "common/Utf8.h"
#include "text/ByteLevel.h"
#include "text/Components.h"
#include "text/TextError.h"

namespace lorascope::text {

namespace {

std::vector<char32_t> codePoints(const std::string& text) {
  std::vector<char32_t> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t n = common::utf8::sequenceLength(text, pos);
    if (n == 0) {  // token strings are valid UTF-8; be safe with anything else
      out.push_back(0xFFFD);
      ++pos;
      continue;
    }
    out.push_back(common::utf8::decodeAt(text, pos, n));
    pos += n;
  }
  return out;
}

char32_t singleChar(const Json& spec, const char* key, const std::string& where) {
  const std::string text = stringField(spec, key, where);
  const auto chars = codePoints(text);
  if (chars.size() != 1)
    throw TextError(where + ": '" + key + "' must be one character");
  return chars.front();
}

void byteLevel(std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& token : tokens) {
    std::string mapped;
    bool allMapped = true;
    for (const char32_t c : codePoints(token)) {
      const auto byte = bytelevel::byteOf(c);
      if (!byte) {
        allMapped = false;
        break;
      }
      mapped.push_back(static_cast<char>(*byte));
    }
    bytes += allMapped ? mapped : token;
  }
  tokens.assign(1, common::utf8::lossy(bytes));
}

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

// "<0xNN>" -> the byte (Rust's u8::from_str_radix accepts "+N" too).
std::optional<std::uint8_t> fallbackByte(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
    return std::nullopt;
  const int hi = hexDigit(token[3]);
  const int lo = hexDigit(token[4]);
  if (token[3] == '+' && lo >= 0)
    return static_cast<std::uint8_t>(lo);
  if (hi < 0 || lo < 0)
    return std::nullopt;
  return static_cast<std::uint8_t>(hi * 16 + lo);
}

void byteFallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string pending;
  const auto flush = [&] {
    if (pending.empty())
      return;
    if (!common::utf8::firstInvalidByte(pending)) {
      out.push_back(pending);
    } else {
      for (std::size_t i = 0; i < pending.size(); ++i)
        out.emplace_back("\xEF\xBF\xBD");
    }
    pending.clear();
  };
  for (std::string& token : tokens) {
    if (const auto byte = fallbackByte(token)) {
      pending.push_back(static_cast<char>(*byte));
      continue;
    }
    flush();
    out.push_back(std::move(token));
  }
  flush();
  tokens = std::move(out);
}

DecodeFn makeStrip(const Json& spec, const std::string& where) {
  const char32_t content = singleChar(spec, "content", where);
  const auto start = requireField(spec, "start", where).get<std::size_t>();
  const auto stop = requireField(spec, "stop", where).get<std::size_t>();
  return [content, start, stop](std::vector<std::string>& tokens) {
    for (std::string& token : tokens) {
      const auto chars = codePoints(token);
      std::size_t begin = 0;
      while (begin < start && begin < chars.size() && chars[begin] == content)
        ++begin;
      std::size_t end = chars.size();
      for (std::size_t i = 0; i < stop && end > begin && chars[end - 1] == content; ++i)
        --end;
      std::string stripped;
      for (std::size_t i = begin; i < end; ++i)
        common::utf8::append(stripped, chars[i]);
      token = std::move(stripped);
    }
  };
}

DecodeFn makeMetaspaceDecoder(const Json& spec, const std::string& where) {
  const char32_t replacement = singleChar(spec, "replacement", where);
  bool dropInFirst = boolField(spec, "add_prefix_space", true, where);
  if (spec.contains("prepend_scheme") && spec.at("prepend_scheme").is_string()) {
    dropInFirst = spec.at("prepend_scheme").get<std::string>() != "never";
  }
  return [replacement, dropInFirst](std::vector<std::string>& tokens) {
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (const char32_t c : codePoints(tokens[i])) {
        if (c != replacement) {
          common::utf8::append(out, c);
        } else if (!(i == 0 && dropInFirst)) {
          out += ' ';
        }
      }
      tokens[i] = std::move(out);
    }
  };
}

}  // namespace

DecodeFn makeDecoder(const Json& spec, const std::string& source, std::string& describe,
                     int depth) {
  if (spec.is_null())
    return {};
  const std::string where = source + ": decoder";
  checkSequenceDepth(depth, where);
  const std::string type = stringField(spec, "type", where);
  describe = type;
  if (type == "ByteLevel")
    return byteLevel;
  if (type == "ByteFallback")
    return byteFallback;
  if (type == "Fuse") {
    return [](std::vector<std::string>& tokens) {
      std::string joined;
      for (const std::string& token : tokens)
        joined += token;
      tokens.assign(1, std::move(joined));
    };
  }
  if (type == "Strip")
    return makeStrip(spec, where + " Strip");
  if (type == "Metaspace")
    return makeMetaspaceDecoder(spec, where + " Metaspace");
  if (type == "Replace") {
    auto replace = makeReplace(spec, where + " Replace");
    return [replace](std::vector<std::string>& tokens) {
      for (std::string& token : tokens)
        replace(token);
    };
  }
  if (type == "Sequence") {
    auto fns = sequenceSteps<DecodeFn>(spec, "decoders", where, describe,
                                       [&](const Json& step, std::string& name) {
                                         return makeDecoder(step, source, name, depth + 1);
                                       });
    return [fns](std::vector<std::string>& tokens) {
      for (const auto& fn : fns) {
        fn(tokens);
      }
    };
  }
  throw TextError(where + ": decoder type '" + type +
                  "' is not supported (supported: ByteLevel, Metaspace, ByteFallback, Fuse, "
                  "Strip, Replace, Sequence)");
}

}  // namespace lorascope::text

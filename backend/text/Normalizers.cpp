// Normalizers.cpp — tokenizer.json normalizers: NFC/NFD/NFKC/NFKD (utf8proc), Lowercase,
// Prepend, Replace, Strip and Sequence. The JSON helpers of Components.h live here too.
#include <cstdlib>
#include <memory>

#include <utf8proc.h>  // defines: utf8proc_map, utf8proc_tolower

#include "common/Utf8.h"
#include "text/Components.h"
#include "text/Regex.h"
#include "text/TextError.h"

namespace lorascope::text {

const Json& requireField(const Json& object, const char* key, const std::string& where) {
  if (!object.is_object() || !object.contains(key)) {
    throw TextError(where + ": missing field '" + key + "'");
  }
  return object.at(key);
}

std::string stringField(const Json& object, const char* key, const std::string& where) {
  const Json& value = requireField(object, key, where);
  if (!value.is_string())
    throw TextError(where + ": field '" + key + "' must be a string");
  return value.get<std::string>();
}

bool boolField(const Json& object, const char* key, bool fallback, const std::string& where) {
  if (!object.is_object() || !object.contains(key) || object.at(key).is_null())
    return fallback;
  if (!object.at(key).is_boolean()) {
    throw TextError(where + ": field '" + key + "' must be true or false");
  }
  return object.at(key).get<bool>();
}

namespace {

struct FreeDeleter {
  void operator()(utf8proc_uint8_t* p) const { std::free(p); }
};

bool isAscii(const std::string& text) {
  for (const char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80)
      return false;
  }
  return true;
}

NormalizeFn unicodeForm(int options, const std::string& where) {
  return [options, where](std::string& text) {
    if (isAscii(text))
      return;  // every normal form leaves ASCII as it is
    utf8proc_uint8_t* result = nullptr;
    const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &result,
                                            static_cast<utf8proc_option_t>(options));
    const std::unique_ptr<utf8proc_uint8_t, FreeDeleter> owned(result);
    if (n < 0)
      throw TextError(where + ": " + utf8proc_errmsg(n));
    text.assign(reinterpret_cast<const char*>(result), static_cast<std::size_t>(n));
  };
}

void lowercase(std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t n = common::utf8::sequenceLength(text, pos);
    const char32_t c = common::utf8::decodeAt(text, pos, n);
    if (c == 0x130) {
      out += "i\xCC\x87";  // İ lowercases to i + combining dot above (Rust's to_lowercase)
    } else {
      common::utf8::append(
          out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
    pos += n;
  }
  text = std::move(out);
}

void replaceAll(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty())
    return;
  std::string out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t hit = text.find(from, pos);
    if (hit == std::string::npos)
      break;
    out.append(text, pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  if (pos == 0)
    return;
  out.append(text, pos, std::string::npos);
  text = std::move(out);
}

void stripWhiteSpace(std::string& text, bool left, bool right) {
  const std::size_t begin = left ? common::utf8::leadingWhiteSpaceBytes(text) : 0;
  const std::size_t end =
      right ? begin + common::utf8::trailingWhiteSpaceStart(std::string_view(text).substr(begin))
            : text.size();
  text = text.substr(begin, end - begin);
}

}  // namespace

// A Replace step (normalizer or decoder): `pattern` is {"String": s} or {"Regex": r}.
std::function<void(std::string&)> makeReplace(const Json& spec, const std::string& where) {
  const Json& pattern = requireField(spec, "pattern", where);
  const std::string content = stringField(spec, "content", where);
  if (pattern.is_object() && pattern.contains("String") && pattern.at("String").is_string()) {
    const std::string from = pattern.at("String").get<std::string>();
    return [from, content](std::string& text) { replaceAll(text, from, content); };
  }
  if (pattern.is_object() && pattern.contains("Regex") && pattern.at("Regex").is_string()) {
    const Regex regex(pattern.at("Regex").get<std::string>(), where);
    return [regex, content](std::string& text) {
      const auto matches = regex.findAll(text);
      if (matches.empty())
        return;
      std::string out;
      std::size_t pos = 0;
      for (const auto& [start, end] : matches) {
        out.append(text, pos, start - pos);
        out += content;
        pos = end;
      }
      out.append(text, pos, std::string::npos);
      text = std::move(out);
    };
  }
  throw TextError(where + ": Replace pattern must be {\"String\": ...} or {\"Regex\": ...}");
}

void checkSequenceDepth(int depth, const std::string& where) {
  if (depth > kMaxSequenceDepth) {
    throw TextError(where + ": Sequence nested more than " + std::to_string(kMaxSequenceDepth) +
                    " levels deep");
  }
}

NormalizeFn makeNormalizer(const Json& spec, const std::string& source, std::string& describe,
                           int depth) {
  if (spec.is_null())
    return {};
  const std::string where = source + ": normalizer";
  checkSequenceDepth(depth, where);
  const std::string type = stringField(spec, "type", where);
  describe = type;
  if (type == "NFC")
    return unicodeForm(UTF8PROC_STABLE | UTF8PROC_COMPOSE, where);
  if (type == "NFD")
    return unicodeForm(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE, where);
  if (type == "NFKC") {
    return unicodeForm(UTF8PROC_STABLE | UTF8PROC_COMPOSE | UTF8PROC_COMPAT, where);
  }
  if (type == "NFKD") {
    return unicodeForm(UTF8PROC_STABLE | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, where);
  }
  if (type == "Lowercase")
    return lowercase;
  if (type == "Prepend") {
    const std::string prefix = stringField(spec, "prepend", where);
    return [prefix](std::string& text) {
      if (!text.empty())
        text.insert(0, prefix);
    };
  }
  if (type == "Replace")
    return makeReplace(spec, where + " Replace");
  if (type == "Strip") {
    const bool left = boolField(spec, "strip_left", false, where);
    const bool right = boolField(spec, "strip_right", false, where);
    return [left, right](std::string& text) { stripWhiteSpace(text, left, right); };
  }
  if (type == "Sequence") {
    auto fns = sequenceSteps<NormalizeFn>(spec, "normalizers", where, describe,
                                          [&](const Json& step, std::string& name) {
                                            return makeNormalizer(step, source, name, depth + 1);
                                          });
    return [fns](std::string& text) {
      for (const auto& fn : fns) {
        fn(text);
      }
    };
  }
  throw TextError(where + ": normalizer type '" + type +
                  "' is not supported (supported: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, "
                  "Replace, Strip, Sequence)");
}

}  // namespace lorascope::text

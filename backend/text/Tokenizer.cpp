// Tokenizer.cpp — loading tokenizer.json (+ tokenizer_config.json) and running the pipeline
// described in Tokenizer.h.
#include "text/Tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "common/OsError.h"  // defines: pathText
#include "common/Utf8.h"
#include "text/AddedVocabulary.h"
#include "text/BpeModel.h"
#include "text/Components.h"
#include "text/ConfigFiles.h"
#include "text/TextError.h"

namespace lorascope::text {

struct Tokenizer::State {
  std::string source;
  std::unique_ptr<BpeModel> model;
  AddedVocabulary added;
  NormalizeFn normalizer;
  PreTokenizeFn preTokenizer;
  DecodeFn decoder;
  PostProcessFn postProcessor;
  std::optional<std::string> bosToken;
  std::optional<std::string> eosToken;
  std::string description;
  bool cutsAtSpaces = false;       // Tokenizer::lastCut's spaces
  bool cutsBetweenDigits = false;  // and its digits
};

namespace {

// encode() runs the pipeline on parts of about this much text (cut by lastCut's rule), so that
// its pieces and words exist for one part at a time: a 200 MB line took 23x its size at once, and
// a piece costs about 130 bytes (a line of digits is a piece per byte).
constexpr std::size_t kEncodePartBytes = std::size_t{64} << 10;

bool asciiLetter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool asciiAlnum(char c) {
  return asciiLetter(c) || (c >= '0' && c <= '9');
}
bool asciiDigit(char c) {
  return c >= '0' && c <= '9';
}
// A space between an ASCII letter or digit and an ASCII letter: every supported pre-tokenizer that
// splits at spaces starts a piece there (see splitsBeforeSpaces).
bool spaceCut(std::string_view text, std::size_t i) {
  return i > 0 && i + 1 < text.size() && text[i] == ' ' && asciiAlnum(text[i - 1]) &&
         asciiLetter(text[i + 1]);
}
// Between two ASCII digits, for pre-tokenizers that make every digit a piece of its own (see
// splitsEveryDigit): a line of digits has no space.
bool digitCut(std::string_view text, std::size_t i) {
  return i > 0 && i < text.size() && asciiDigit(text[i - 1]) && asciiDigit(text[i]);
}
bool cutBefore(const Tokenizer::State& state, std::string_view text, std::size_t i) {
  return (state.cutsAtSpaces && spaceCut(text, i)) ||
         (state.cutsBetweenDigits && digitCut(text, i));
}

// Llama-3's and Qwen2's Split patterns. No match runs across a space that follows a letter or
// digit (the only alternatives holding a space start with it or are all whitespace) and none
// looks behind, so the matches of the two sides of a cut are the matches of the whole.
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// The step of a pre-tokenizer that sees the whole text (the first of a Sequence) and its type;
// the steps after it work on each of its pieces alone (no pre-tokenizer joins pieces). Null when
// there is none.
std::pair<const Json*, std::string> firstStep(const Json& pre) {
  if (!pre.is_object() || !pre.contains("type") || !pre.at("type").is_string())
    return {nullptr, ""};
  const std::string type = pre.at("type").get<std::string>();
  if (type != "Sequence")
    return {&pre, type};
  if (!pre.contains("pretokenizers") || !pre.at("pretokenizers").is_array())
    return {nullptr, ""};
  for (const Json& step : pre.at("pretokenizers")) {  // a step of `pre`'s own, not a copy
    if (!step.is_null())
      return firstStep(step);
  }
  return {nullptr, ""};
}

// Whether the pre-tokenizer's first step starts a piece at every space cut.
bool splitsBeforeSpaces(const Json& spec) {
  const auto [step, type] = firstStep(spec);
  if (step == nullptr)
    return false;
  const Json& pre = *step;
  const auto flag = [&](const char* key, bool fallback) {
    return pre.contains(key) && pre.at(key).is_boolean() ? pre.at(key).get<bool>() : fallback;
  };
  if (type == "ByteLevel")
    return flag("use_regex", true);  // GPT-2's pattern
  if (type == "Metaspace")
    return flag("split", true);
  if (type == "Whitespace" || type == "WhitespaceSplit")
    return true;
  if (type == "Split" && !flag("invert", false) && pre.contains("pattern") &&
      pre.at("pattern").is_object() && pre.contains("behavior") && pre.at("behavior").is_string()) {
    const Json& pattern = pre.at("pattern");
    const std::string behavior = pre.at("behavior").get<std::string>();
    if (pattern.contains("String") && pattern.at("String") == " ") {
      return behavior == "Isolated" || behavior == "Removed" || behavior == "MergedWithNext";
    }
    return behavior == "Isolated" && pattern.contains("Regex") &&
           (pattern.at("Regex") == kLlama3Pattern || pattern.at("Regex") == kQwen2Pattern);
  }
  return false;
}

// Whether the pre-tokenizer's first step makes every digit a piece of its own: Qwen2's pattern
// (\p{N}, and no other alternative takes a digit) or Digits with individual_digits.
bool splitsEveryDigit(const Json& spec) {
  const auto [step, type] = firstStep(spec);
  if (step == nullptr)
    return false;
  const Json& pre = *step;
  if (type == "Digits") {
    return pre.contains("individual_digits") && pre.at("individual_digits") == true;
  }
  return type == "Split" && pre.contains("pattern") && pre.at("pattern").is_object() &&
         pre.at("pattern").contains("Regex") && pre.at("pattern").at("Regex") == kQwen2Pattern &&
         pre.contains("behavior") && pre.at("behavior") == "Isolated" &&
         !(pre.contains("invert") && pre.at("invert") == true);
}

// Whether the normalizer works character by character (nothing added at a part's start, nothing
// stripped at its ends, no pattern across characters).
bool normalizesCharacterWise(const Json& normalizer) {
  if (normalizer.is_null())
    return true;
  if (!normalizer.is_object() || !normalizer.contains("type") || !normalizer.at("type").is_string())
    return false;
  const std::string type = normalizer.at("type").get<std::string>();
  if (type == "Sequence") {
    const Json& steps = normalizer.contains("normalizers") ? normalizer.at("normalizers") : Json();
    if (!steps.is_array())
      return false;
    for (const Json& step : steps) {
      if (!normalizesCharacterWise(step))
        return false;
    }
    return true;
  }
  return type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD" || type == "Lowercase";
}

// Whether no added token can match across, or strip, the space of a space cut; with `digits`,
// none holds a digit either (nothing to match across a digit cut).
bool addedTokensKeepCuts(const Json& added, bool digits) {
  for (const Json& token : added.is_array() ? added : Json::array()) {
    if (!token.is_object() || !token.contains("content") || !token.at("content").is_string())
      continue;
    const std::string content = token.at("content").get<std::string>();
    const auto flag = [&](const char* key) {
      return token.contains(key) && token.at(key).is_boolean() && token.at(key).get<bool>();
    };
    if (content.find(' ') != std::string::npos ||
        (digits && std::any_of(content.begin(), content.end(), asciiDigit)) ||
        (flag("rstrip") && !content.empty() && asciiAlnum(content.back())) ||
        (flag("lstrip") && !content.empty() && asciiLetter(content.front()))) {
      return false;
    }
  }
  return true;
}

std::shared_ptr<Tokenizer::State> buildState(std::string_view jsonText,
                                             const std::string& sourceName) {
  const Json root = parseJsonText(jsonText, sourceName);
  auto state = std::make_shared<Tokenizer::State>();
  state->source = sourceName;
  try {
    if (!root.is_object())
      throw TextError(sourceName + ": top level must be a JSON object");
    const Json& model = requireField(root, "model", sourceName);
    std::string modelType = "BPE";  // files of old `tokenizers` versions omit the type
    if (model.contains("type"))
      modelType = stringField(model, "type", sourceName + ": model");
    if (modelType != "BPE") {
      throw TextError(sourceName + ": model type '" + modelType +
                      "' is not supported (LoRAscope reads BPE tokenizers: byte-level BPE and "
                      "SentencePiece-style BPE)");
    }
    state->model = BpeModel::fromJson(model, sourceName);
    std::string normalizerName = "none";
    std::string preTokenizerName = "none";
    std::string decoderName = "none";
    std::string postName = "none";
    const Json null;
    const auto field = [&](const char* key) -> const Json& {
      return root.contains(key) ? root.at(key) : null;
    };
    state->normalizer = makeNormalizer(field("normalizer"), sourceName, normalizerName);
    state->preTokenizer = makePreTokenizer(field("pre_tokenizer"), sourceName, preTokenizerName);
    state->decoder = makeDecoder(field("decoder"), sourceName, decoderName);
    state->postProcessor = makePostProcessor(field("post_processor"), sourceName, postName);
    state->added = AddedVocabulary(field("added_tokens"), state->normalizer, sourceName);
    const bool characterWise = normalizesCharacterWise(field("normalizer"));
    state->cutsAtSpaces = characterWise && splitsBeforeSpaces(field("pre_tokenizer")) &&
                          addedTokensKeepCuts(field("added_tokens"), false);
    state->cutsBetweenDigits = characterWise && splitsEveryDigit(field("pre_tokenizer")) &&
                               addedTokensKeepCuts(field("added_tokens"), true);
    state->description = "BPE (" + std::to_string(state->model->vocabEntries()) + " tokens, " +
                         std::to_string(state->model->mergeCount()) + " merges, " +
                         std::to_string(state->added.size()) + " added), normalizer " +
                         normalizerName + ", pre-tokenizer " + preTokenizerName + ", decoder " +
                         decoderName + ", post-processor " + postName;
  } catch (const Json::exception& e) {
    throw TextError(sourceName + ": unexpected JSON structure: " + e.what());
  }
  return state;
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const State> state) : state_(std::move(state)) {}

Tokenizer Tokenizer::fromJsonText(std::string_view jsonText, const std::string& sourceName) {
  return Tokenizer(buildState(jsonText, sourceName));
}

Tokenizer Tokenizer::fromFile(const std::filesystem::path& tokenizerJson) {
  return fromJsonText(readTextFile(tokenizerJson, "tokenizer.json"),
                      common::pathText(tokenizerJson));
}

Tokenizer Tokenizer::fromModelDir(const std::filesystem::path& dir) {
  const auto jsonPath = dir / "tokenizer.json";
  std::error_code missing;
  if (!std::filesystem::exists(jsonPath, missing)) {
    throw TextError(common::pathText(jsonPath) +
                    ": not found; the model folder needs its tokenizer.json (Hugging Face's "
                    "tokenizers format, beside config.json in the model's repository): copy it "
                    "into the folder");
  }
  auto state = buildState(readTextFile(jsonPath, "tokenizer.json"), common::pathText(jsonPath));
  const auto configPath = dir / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(configPath, ec))
    return Tokenizer(std::move(state));
  const Json config = parseJsonText(readTextFile(configPath, "tokenizer_config.json"),
                                    common::pathText(configPath));
  if (!config.is_object())
    throw TextError(common::pathText(configPath) + ": must be a JSON object");
  state->bosToken = configTokenText(config, "bos_token");
  state->eosToken = configTokenText(config, "eos_token");
  for (const auto& token : {state->bosToken, state->eosToken}) {
    if (token && !state->added.idOf(*token) && !state->model->tokenId(*token)) {
      throw TextError(common::pathText(configPath) + ": token '" + *token +
                      "' is not in the vocabulary of " + state->source);
    }
  }
  return Tokenizer(std::move(state));
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const {
  if (const auto bad = common::utf8::firstInvalidByte(text)) {
    throw TextError("text to encode is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
  }
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  // Long text a part at a time: the first cut after each kEncodePartBytes.
  while (hasCuts() && text.size() > 2 * kEncodePartBytes) {
    std::size_t cut = kEncodePartBytes;
    while (cut < text.size() && !cutBefore(*state_, text, cut))
      ++cut;
    if (cut >= text.size())
      break;
    encodeInto(text.substr(0, cut), ids);
    text.remove_prefix(cut);
  }
  encodeInto(text, ids);
  return ids;
}

void Tokenizer::encodeInto(std::string_view text, std::vector<std::int32_t>& ids) const {
  const State& s = *state_;
  std::vector<Piece> pieces;
  for (TextSplit& split : s.added.extractAndNormalize(text, s.normalizer)) {
    if (split.addedId) {
      ids.push_back(*split.addedId);
      continue;
    }
    if (split.text.empty())
      continue;
    pieces.clear();
    pieces.push_back({std::move(split.text), split.atStart});
    if (s.preTokenizer)
      s.preTokenizer(pieces);
    for (const Piece& piece : pieces)
      s.model->tokenize(piece.text, ids);
  }
}

std::size_t Tokenizer::lastCut(std::string_view text) const {
  if (!hasCuts())
    return 0;
  for (std::size_t i = text.size(); i-- > 1;) {
    if (cutBefore(*state_, text, i))
      return i;
  }
  return 0;
}

bool Tokenizer::hasCuts() const {
  return state_->cutsAtSpaces || state_->cutsBetweenDigits;
}

Tokenizer::Framing Tokenizer::postProcessorFraming() const {
  if (!state_->postProcessor)
    return {};
  // The post-processors place the sequence's ids whole, without reading them: a marker shows
  // where they went.
  constexpr std::int32_t kMarker = -1;
  std::vector<std::int32_t> ids{kMarker};
  state_->postProcessor(ids);
  const auto marker = std::find(ids.begin(), ids.end(), kMarker);
  return {{ids.begin(), marker}, {marker == ids.end() ? marker : marker + 1, ids.end()}};
}

std::vector<std::int32_t> Tokenizer::encodeWithPostProcessor(std::string_view text) const {
  std::vector<std::int32_t> ids = encode(text);
  if (state_->postProcessor)
    state_->postProcessor(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skipSpecial,
                              UnknownIds unknown) const {
  const State& s = *state_;
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (const std::int32_t id : ids) {
    if (const AddedToken* added = s.added.byId(id)) {
      if (skipSpecial && added->special)
        continue;
      tokens.push_back(added->content);
    } else if (const std::string* text = s.model->tokenText(id)) {
      tokens.push_back(*text);
    } else if (unknown == UnknownIds::Refuse) {
      throw TextError(s.source + ": cannot decode id " + std::to_string(id) +
                      ": not in the vocabulary (vocab size " + std::to_string(vocabSize()) + ")");
    }
  }
  if (!s.decoder) {
    std::string joined;
    for (std::size_t i = 0; i < tokens.size(); ++i)
      joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  s.decoder(tokens);
  std::string joined;
  for (const std::string& token : tokens)
    joined += token;
  return joined;
}

std::int32_t Tokenizer::vocabSize() const {
  return std::max(state_->model->maxId(), state_->added.maxId()) + 1;
}

std::optional<std::int32_t> Tokenizer::tokenId(std::string_view token) const {
  if (const auto id = state_->added.idOf(token))
    return id;
  return state_->model->tokenId(token);
}

std::optional<std::string> Tokenizer::tokenText(std::int32_t id) const {
  if (const AddedToken* added = state_->added.byId(id))
    return added->content;
  if (const std::string* text = state_->model->tokenText(id))
    return *text;
  return std::nullopt;
}

bool Tokenizer::isSpecial(std::int32_t id) const {
  const AddedToken* added = state_->added.byId(id);
  return added != nullptr && added->special;
}

std::optional<std::int32_t> Tokenizer::bosId() const {
  return state_->bosToken ? tokenId(*state_->bosToken) : std::nullopt;
}
std::optional<std::int32_t> Tokenizer::eosId() const {
  return state_->eosToken ? tokenId(*state_->eosToken) : std::nullopt;
}
std::optional<std::string> Tokenizer::bosToken() const {
  return state_->bosToken;
}
std::optional<std::string> Tokenizer::eosToken() const {
  return state_->eosToken;
}
const std::string& Tokenizer::source() const {
  return state_->source;
}
std::string Tokenizer::describe() const {
  return state_->source + ": " + state_->description;
}

}  // namespace lorascope::text

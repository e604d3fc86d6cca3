// Tokenizer.cpp — loading tokenizer.json (+ tokenizer_config.json) and running the pipeline
// described in Tokenizer.h.
#include "text/Tokenizer.h"

#include "text/AddedVocabulary.h"
#include "text/BpeModel.h"
#include "text/Components.h"
#include "text/ConfigFiles.h"
#include "text/TextError.h"
#include "text/Utf8.h"

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
};

namespace {

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
  return fromJsonText(readTextFile(tokenizerJson, "tokenizer.json"), tokenizerJson.string());
}

Tokenizer Tokenizer::fromModelDir(const std::filesystem::path& dir) {
  const auto jsonPath = dir / "tokenizer.json";
  auto state = buildState(readTextFile(jsonPath, "tokenizer.json"), jsonPath.string());
  const auto configPath = dir / "tokenizer_config.json";
  std::error_code ec;
  if (!std::filesystem::exists(configPath, ec))
    return Tokenizer(std::move(state));
  const Json config =
      parseJsonText(readTextFile(configPath, "tokenizer_config.json"), configPath.string());
  if (!config.is_object())
    throw TextError(configPath.string() + ": must be a JSON object");
  state->bosToken = configTokenText(config, "bos_token");
  state->eosToken = configTokenText(config, "eos_token");
  for (const auto& token : {state->bosToken, state->eosToken}) {
    if (token && !state->added.idOf(*token) && !state->model->tokenId(*token)) {
      throw TextError(configPath.string() + ": token '" + *token +
                      "' is not in the vocabulary of " + state->source);
    }
  }
  return Tokenizer(std::move(state));
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const {
  if (const auto bad = utf8::firstInvalidByte(text)) {
    throw TextError("text to encode is not valid UTF-8 (byte " + std::to_string(*bad) + ")");
  }
  const State& s = *state_;
  std::vector<std::int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
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
  return ids;
}

std::vector<std::int32_t> Tokenizer::encodeWithPostProcessor(std::string_view text) const {
  std::vector<std::int32_t> ids = encode(text);
  if (state_->postProcessor)
    state_->postProcessor(ids);
  return ids;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skipSpecial) const {
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
    } else {
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

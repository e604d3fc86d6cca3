// job/Generation.cpp — sampling, the adapter's projection hook, the prompt, and the decode loop
// that streams whole UTF-8 pieces.
#include "job/Generation.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/OsError.h"            // defines: pathFromUtf8, pathText
#include "job/CliArgs.h"               // defines: UsageError
#include "model/JsonFile.h"            // defines: readJsonFile
#include "model/KvCache.h"             // defines: CachedDecoder
#include "model/WeightQuantization.h"  // defines: quantizationName
#include "runs/RunFolder.h"            // defines: runModelPath
#include "text/ChatTemplate.h"
#include "text/Tokenizer.h"
#include "train/Lora.h"
#include "train/PeftExport.h"   // defines: readPeftAdapter, checkAdapterFitsModel
#include "train/RandomDraws.h"  // defines: uniformFloat
#include "train/RunDirectory.h"

namespace lorascope::job {
namespace fs = std::filesystem;
using compute::Tensor;

namespace {

constexpr std::uint64_t kSamplingStream = std::uint64_t{3} << 60;  // apart from training's streams

// "x\xEF\xBF\xBD": the decoder's replacement character, while a multi-byte character is split
// across tokens.
bool endsInsideCharacter(const std::string& text) {
  constexpr std::string_view kReplacement = "\xEF\xBF\xBD";
  return text.size() >= kReplacement.size() &&
         text.compare(text.size() - kReplacement.size(), kReplacement.size(), kReplacement) == 0;
}

void addEosIds(const nlohmann::json& value, std::set<std::int32_t>& ids) {
  if (value.is_number_integer()) {
    ids.insert(value.get<std::int32_t>());
  } else if (value.is_array()) {
    for (const nlohmann::json& id : value) {
      if (id.is_number_integer())
        ids.insert(id.get<std::int32_t>());
    }
  }
}

}  // namespace

std::int32_t pickToken(std::span<const float> logits, const SamplingOptions& options,
                       std::uint64_t step) {
  if (!(options.temperature >= 0.0) || !std::isfinite(options.temperature)) {
    throw std::invalid_argument("temperature must be a finite number ≥ 0 (0 = greedy)");
  }
  if (!(options.topP > 0.0 && options.topP <= 1.0)) {
    throw std::invalid_argument("top-p must be in (0, 1]");
  }
  if (logits.empty()) {
    throw std::invalid_argument("no logits to pick a token from");
  }
  if (options.temperature == 0.0) {
    return static_cast<std::int32_t>(std::max_element(logits.begin(), logits.end()) -
                                     logits.begin());  // the first of equal maxima
  }
  const float maxLogit = *std::max_element(logits.begin(), logits.end());
  std::vector<double> weights(logits.size());
  for (std::size_t i = 0; i < logits.size(); ++i) {
    weights[i] = std::exp((static_cast<double>(logits[i]) - maxLogit) / options.temperature);
  }
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::int32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return weights[static_cast<std::size_t>(a)] > weights[static_cast<std::size_t>(b)];
  });
  // The nucleus: the most probable tokens until their mass reaches top-p (at least one).
  double kept = 0.0;
  std::size_t count = 0;
  while (count < order.size() && (count == 0 || kept < options.topP * total)) {
    kept += weights[static_cast<std::size_t>(order[count++])];
  }
  const double target =
      static_cast<double>(train::uniformFloat(options.seed, kSamplingStream, step)) * kept;
  double running = 0.0;
  for (std::size_t i = 0; i < count; ++i) {
    running += weights[static_cast<std::size_t>(order[i])];
    if (target < running) {
      return order[i];
    }
  }
  return order[count - 1];
}

fs::path resolveAdapterDir(const fs::path& runOrDir) {
  if (fs::exists(runOrDir / train::kAdapterConfigFile)) {
    return runOrDir;
  }
  const fs::path finalAdapter = runOrDir / train::kFinalAdapterDir;
  if (fs::exists(finalAdapter / train::kAdapterConfigFile)) {
    return finalAdapter;
  }
  if (fs::exists(runOrDir / train::kRunConfigFile)) {
    const std::vector<std::int64_t> steps = train::RunDirectory::open(runOrDir).checkpointSteps();
    if (!steps.empty()) {
      return train::RunDirectory::open(runOrDir).checkpointDir(steps.back());
    }
  }
  throw UsageError(common::pathText(runOrDir) +
                   ": not an adapter (no adapter_config.json) and not a run folder with an "
                   "adapter/ or a checkpoint; give a PEFT adapter folder or a run folder");
}

void refuseRunAsModel(const std::string& dir, const std::string& given,
                      const std::string& instead) {
  if (const std::optional<std::string> base = runs::runModelPath(common::pathFromUtf8(dir))) {
    throw UsageError(given + " " + dir + " is a LoRAscope run, not a model folder (it trained on " +
                     *base + "): " + instead);
  }
}

std::set<std::int32_t> modelEosIds(const fs::path& modelDir) {
  std::set<std::int32_t> ids;
  for (const char* file : {"config.json", "generation_config.json"}) {
    const fs::path path = modelDir / file;
    if (fs::exists(path)) {
      const nlohmann::json j = model::readJsonFile(common::pathText(path));
      if (j.is_object() && j.contains("eos_token_id"))
        addEosIds(j["eos_token_id"], ids);
    }
  }
  return ids;
}

// y += scale · (x·Aᵀ)·Bᵀ after every adapted projection (train/Lora.h), A and B on the backend.
class TextGenerator::AdapterHook : public model::ProjectionHook {
 public:
  AdapterHook(compute::Backend& backend, const train::LoraAdapter& adapter)
      : backend_(backend), scale_(static_cast<float>(adapter.config.scale())) {
    for (const train::LoraWeights& w : adapter.weights) {
      const std::int64_t rank = static_cast<std::int64_t>(w.a.size()) / w.site.inFeatures;
      Site site{w.site.layer, w.site.module,
                backend.upload(w.a, compute::DType::F32, {rank, w.site.inFeatures}),
                backend.upload(w.b, compute::DType::F32, {w.site.outFeatures, rank})};
      sites_.push_back(std::move(site));
    }
  }
  void afterProjection(int layer, model::Projection projection, const Tensor& x,
                       Tensor& y) override {
    for (const Site& s : sites_) {
      if (s.layer == layer && s.projection == projection) {
        Tensor u = backend_.empty(backend_.capabilities().activationDType, {x.dim(0), s.a.dim(0)});
        backend_.matmul(x, false, s.a, true, u, 1.0f, 0.0f);
        backend_.matmul(u, false, s.b, true, y, scale_, 1.0f);
      }
    }
  }

 private:
  struct Site {
    int layer;
    model::Projection projection;
    Tensor a;  // (r, in) f32
    Tensor b;  // (out, r) f32
  };
  compute::Backend& backend_;
  float scale_;
  std::vector<Site> sites_;
};

TextGenerator::TextGenerator(const std::string& model, const std::string& adapter,
                             const std::string& device, const DeviceLog& log,
                             model::WeightQuantization quantization)
    : folder_(model::ModelFolder::open(model)), quantization_(quantization) {
  const fs::path dir = common::pathFromUtf8(folder_.dir());  // UTF-8 text, not the code page
  if (fs::exists(dir / "tokenizer.json")) {
    tokenizer_ = std::make_unique<text::Tokenizer>(text::Tokenizer::fromModelDir(dir));
    chatTemplate_ = std::make_unique<text::ChatTemplate>(text::ChatTemplate::forModelDir(dir));
  }
  eosIds_ = modelEosIds(dir);
  if (tokenizer_ && tokenizer_->eosId()) {
    eosIds_.insert(*tokenizer_->eosId());
  }
  backend_ = openBackend(device, log);
  // As stored (as PEFT users load a base for an adapter), or the NF4 base a QLoRA run trained on.
  weights_ = placeWeightsLogged(*backend_, folder_.weights(), log, quantization_);
  if (!adapter.empty()) {
    adapterDir_ = resolveAdapterDir(common::pathFromUtf8(adapter));
    const train::PeftAdapterFiles files = train::readPeftAdapter(adapterDir_);
    train::checkAdapterFitsModel(files.adapter, folder_.config(),
                                 common::pathText(adapterDir_ / train::kAdapterWeightsFile));
    train::requireFiniteAdapter(files.adapter, common::pathText(adapterDir_));
    hook_ = std::make_unique<AdapterHook>(*backend_, files.adapter);
  }
}

TextGenerator::~TextGenerator() = default;

std::vector<std::int32_t> TextGenerator::promptIds(const std::string& prompt,
                                                   const std::string& system,
                                                   bool useChatTemplate) const {
  if (!tokenizer_) {
    throw UsageError(folder_.dir() + " has no tokenizer.json: give the prompt as --ids");
  }
  if (!useChatTemplate) {
    return tokenizer_->encodeWithPostProcessor(prompt);
  }
  std::vector<text::ChatMessage> messages;
  if (!system.empty()) {
    messages.push_back({"system", system});
  }
  messages.push_back({"user", prompt});
  return tokenizer_->encode(chatTemplate_->render(messages, true));
}

GenerationResult TextGenerator::generate(std::span<const std::int32_t> prompt,
                                         const SamplingOptions& options,
                                         const std::function<bool(const std::string&)>& onText,
                                         const std::function<bool(std::int32_t)>& onToken,
                                         const std::atomic<bool>* cancel) {
  if (options.maxNewTokens < 1) {
    throw std::invalid_argument("max new tokens must be at least 1");
  }
  using Clock = std::chrono::steady_clock;
  GenerationResult result;
  model::CachedDecoder decoder(*backend_, folder_.config(), weights_,
                               static_cast<std::int64_t>(prompt.size()) + options.maxNewTokens,
                               adapterEnabled_ ? hook_.get() : nullptr);
  const auto start = Clock::now();
  std::vector<float> logits = decoder.feed(prompt);
  const auto afterPrompt = Clock::now();
  result.promptMs = std::chrono::duration<double, std::milli>(afterPrompt - start).count();
  std::vector<std::int32_t> textIds;  // the new tokens without end-of-sequence ids
  std::size_t shown = 0;              // bytes of result.text already handed to onText
  result.stopReason = "max-new-tokens";
  for (std::int64_t n = 0; n < options.maxNewTokens; ++n) {
    const std::int32_t id = pickToken(logits, options, static_cast<std::uint64_t>(n));
    result.ids.push_back(id);
    bool keepGoing = !onToken || onToken(id);
    if (eosIds_.count(id) != 0) {
      result.stopReason = "eos";
      break;
    }
    textIds.push_back(id);
    if (tokenizer_) {
      std::string text = tokenizer_->decode(textIds, true, text::Tokenizer::UnknownIds::Skip);
      if (!endsInsideCharacter(text) && text.size() >= shown &&
          text.compare(0, shown, result.text, 0, shown) == 0) {
        if (onText && text.size() > shown) {
          keepGoing = onText(text.substr(shown)) && keepGoing;
        }
        shown = text.size();
      }
      result.text = std::move(text);
    }
    if (!keepGoing || (cancel != nullptr && cancel->load())) {
      result.stopReason = "stopped";
      break;
    }
    if (n + 1 < options.maxNewTokens) {
      logits = decoder.feed(std::span<const std::int32_t>(&id, 1));
    }
  }
  if (onText && result.text.size() > shown) {
    onText(result.text.substr(shown));  // a last piece that ended inside a character
  }
  const double decodeS = std::chrono::duration<double>(Clock::now() - afterPrompt).count();
  if (result.ids.size() > 1 && decodeS > 0) {
    result.tokensPerS = static_cast<double>(result.ids.size() - 1) / decodeS;
  }
  return result;
}

std::string TextGenerator::describe() const {
  std::string text = common::pathText(common::pathFromUtf8(folder_.dir()).filename()) + " on " +
                     backend_->capabilities().name;
  if (quantization_ != model::WeightQuantization::None) {
    text += std::string(", base weights ") + model::quantizationName(quantization_);
  }
  if (hook_) {
    text += ", adapter " + common::pathText(adapterDir_);
  }
  return text;
}

}  // namespace lorascope::job

// job/Generation.h — text from a model, with or without a LoRA adapter: `lorascope-train
// generate` and the app's Try it page.
//
// - The prompt is rendered with the model's chat template (text/ChatTemplate: the folder's own
//   Jinja template, else a built-in family) with the generation prompt, and tokenized as
//   transformers' apply_chat_template does (no post-processor tokens: the template writes them);
//   raw text goes through the tokenizer's post-processor as tokenizer(text) does.
// - The base weights are placed as stored, or with --quantize nf4 as a QLoRA run trained on them
//   (model/DeviceWeights.h: the seven projections in NF4, dequantised by every matmul), so that
//   an adapter trained on the 4-bit base can be tried on that base.
// - Decoding uses a KV cache on the chosen backend (model/KvCache.h). An adapter adds
//   scale · (x·Aᵀ)·Bᵀ after every adapted projection, as training computes it (no dropout).
// - Greedy picks the highest logit (the lowest id among equals, as torch.argmax). Sampling draws
//   from softmax(logits / temperature) cut to the smallest set of most probable tokens whose
//   mass reaches top-p (transformers' TopPLogitsWarper), with Philox draws of (seed, step): the
//   same seed gives the same text.
// - Generation stops at max-new-tokens or an end-of-sequence id (config.json's and
//   generation_config.json's eos_token_id, and the tokenizer's eos_token).
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "compute/Backend.h"
#include "job/RunDevice.h"        // defines: DeviceLog
#include "model/DeviceWeights.h"  // defines: WeightQuantization
#include "model/ModelFolder.h"

namespace lorascope::text {
class Tokenizer;
class ChatTemplate;
}  // namespace lorascope::text
namespace lorascope::train {
struct LoraAdapter;
}  // namespace lorascope::train

namespace lorascope::job {

struct SamplingOptions {
  std::int64_t maxNewTokens = 256;
  double temperature = 0.0;  // 0: greedy
  double topP = 1.0;         // (0, 1]; 1 keeps every token
  std::uint64_t seed = 0;
};

// The token to emit after `logits` (vocab floats); `step` numbers the draws of one generation.
// Throws std::invalid_argument for a negative temperature or top-p outside (0, 1].
std::int32_t pickToken(std::span<const float> logits, const SamplingOptions& options,
                       std::uint64_t step);

// The PEFT adapter folder `runOrDir` names: the folder itself (adapter_config.json), a run's
// final adapter/, or else its newest checkpoint. Throws UsageError naming the path otherwise.
std::filesystem::path resolveAdapterDir(const std::filesystem::path& runOrDir);
// Throws UsageError when `dir`, given where a model folder is asked for (`given`, e.g. "--model"),
// is a LoRAscope run: its config.json is the run's, which no model reader parses. The message
// names the model the run trained on and says `instead` (what to give).
void refuseRunAsModel(const std::string& dir, const std::string& given, const std::string& instead);

// End-of-sequence ids of a model folder (config.json, generation_config.json).
std::set<std::int32_t> modelEosIds(const std::filesystem::path& modelDir);

struct GenerationResult {
  std::vector<std::int32_t> ids;  // the new tokens (an end-of-sequence id included)
  std::string text;               // their text (special tokens skipped); empty without tokenizer
  std::string stopReason;         // "eos", "max-new-tokens" or "stopped"
  double promptMs = 0.0;          // the prompt's pass
  double tokensPerS = 0.0;        // new tokens after the first, per second
};

class TextGenerator {
 public:
  // Opens the model folder (or hub id), its tokenizer when it has one, and the adapter when
  // `adapter` is not empty (resolveAdapterDir); places the weights on the backend of `device`
  // (cpu, gpu, auto) with `quantization`. Throws ModelError / CheckpointError / UsageError
  // naming what is wrong.
  TextGenerator(const std::string& model, const std::string& adapter, const std::string& device,
                const DeviceLog& log,
                model::WeightQuantization quantization = model::WeightQuantization::None);
  ~TextGenerator();
  TextGenerator(const TextGenerator&) = delete;
  TextGenerator& operator=(const TextGenerator&) = delete;

  bool hasTokenizer() const { return tokenizer_ != nullptr; }
  // The prompt's ids (chat template or raw text, see above). Throws UsageError without a
  // tokenizer, text::TextError when the template refuses the conversation.
  std::vector<std::int32_t> promptIds(const std::string& prompt, const std::string& system,
                                      bool useChatTemplate) const;
  // Generates after `prompt`; `onText` hears each new piece of text as soon as it is whole UTF-8
  // (never with a tokenizer-less model) and `onToken` each new id; either returning false, or
  // `cancel` becoming true, stops it ("stopped").
  GenerationResult generate(std::span<const std::int32_t> prompt, const SamplingOptions& options,
                            const std::function<bool(const std::string&)>& onText = {},
                            const std::function<bool(std::int32_t)>& onToken = {},
                            const std::atomic<bool>* cancel = nullptr);
  bool hasAdapter() const { return hook_ != nullptr; }
  // With false, generate() runs the base model alone (the same weights, the adapter kept): the
  // Try it page compares both answers without loading the model twice.
  void setAdapterEnabled(bool enabled) { adapterEnabled_ = enabled; }
  // "Qwen2.5-0.5B on cpu (fp32), base weights nf4, adapter RUN/adapter" (nf4 only when
  // quantised).
  std::string describe() const;
  compute::Backend& backend() { return *backend_; }

 private:
  class AdapterHook;
  model::ModelFolder folder_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  std::unique_ptr<text::ChatTemplate> chatTemplate_;
  std::set<std::int32_t> eosIds_;
  std::unique_ptr<compute::Backend> backend_;
  model::ModelWeights weights_;
  model::WeightQuantization quantization_;
  std::filesystem::path adapterDir_;
  std::unique_ptr<AdapterHook> hook_;
  bool adapterEnabled_ = true;
};

}  // namespace lorascope::job

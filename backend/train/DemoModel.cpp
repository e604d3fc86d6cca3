// train/DemoModel.cpp — the demo model's config, tokenizer and seeded weights, and the demo base
// assembled from them and the committed pretraining adapter.
#include "train/DemoModel.h"

#include <atomic>
#include <cstdlib>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/DurableFile.h"
#include "common/OsError.h"   // defines: pathFromUtf8
#include "common/Platform.h"  // defines: environmentVariable
#include "compute/Philox.h"   // defines: compute::philox4x32
#include "model/Projections.h"
#include "train/DemoBaseAdapter.h"
#include "train/Merge.h"
#include "train/PeftExport.h"
#include "train/SafetensorsWriter.h"

namespace lorascope::train {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

constexpr std::int64_t kHidden = 256;
constexpr std::int64_t kLayers = 4;
constexpr std::int64_t kHeads = 4;
constexpr std::int64_t kKvHeads = 2;
constexpr std::int64_t kHeadDim = kHidden / kHeads;
constexpr std::int64_t kIntermediate = 688;
constexpr std::int64_t kMaxPositions = 512;
constexpr std::uint64_t kWeightSeed = 20250101;
constexpr std::uint64_t kCaseStream = 1000;  // the case direction's Philox stream
constexpr double kInitStd = 0.02;            // transformers' initializer_range for projections
constexpr double kEmbeddingStd = 0.05;       // a wider tied embedding lets logits separate more

constexpr std::int32_t kEndOfTextId = 256;
constexpr std::int32_t kImStartId = 257;
constexpr std::int32_t kImEndId = 258;

// The ChatML template of Qwen2-style chat models, without a default system prompt.
constexpr const char* kChatTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\\n' }}{% endif %}";

// GPT-2's byte → printable-character map of byte-level BPE, as UTF-8.
std::string byteLevelChar(int byte) {
  int codepoint = byte;
  const bool printable = (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
                         (byte >= 0xAE && byte <= 0xFF);
  if (!printable) {
    int n = 0;
    for (int b = 0; b < byte; ++b) {
      const bool p = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      n += p ? 0 : 1;
    }
    codepoint = 256 + n;
  }
  std::string out;
  if (codepoint < 0x80) {
    out += static_cast<char>(codepoint);
  } else {
    out += static_cast<char>(0xC0 | (codepoint >> 6));
    out += static_cast<char>(0x80 | (codepoint & 0x3F));
  }
  return out;
}

ordered_json addedToken(std::int32_t id, const char* content) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", true}};
}

// Approximately normal(0, std) values: the sum of 12 uniforms minus 6 (Irwin–Hall, variance 1),
// drawn from Philox stream `stream`. Sums of 24-bit fractions are exact in double, so the
// weights are the same bits on every platform (no libm transcendental is involved).
std::vector<float> normalValues(std::int64_t count, std::uint64_t stream, double std) {
  constexpr double kTwoToMinus24 = 1.0 / 16777216.0;
  std::vector<float> out(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    double sum = 0.0;
    for (std::uint64_t block = 0; block < 3; ++block) {
      for (std::uint32_t word :
           compute::philox4x32(kWeightSeed, stream, static_cast<std::uint64_t>(i) * 3 + block)
               .word) {
        sum += static_cast<double>(word >> 8) * kTwoToMinus24;
      }
    }
    out[static_cast<std::size_t>(i)] = static_cast<float>((sum - 6.0) * std);
  }
  return out;
}

struct NamedWeight {
  std::string name;
  compute::Shape shape;
  std::vector<float> values;
};

std::vector<NamedWeight> demoWeights() {
  std::vector<NamedWeight> weights;
  std::uint64_t stream = 0;
  const auto normal = [&](std::string name, compute::Shape shape, double std) {
    const std::int64_t n = compute::numelOf(shape);
    weights.push_back({std::move(name), std::move(shape), normalValues(n, stream++, std)});
  };
  const auto ones = [&](std::string name, std::int64_t n) {
    weights.push_back(
        {std::move(name), {n}, std::vector<float>(static_cast<std::size_t>(n), 1.0f)});
  };
  normal("model.embed_tokens.weight", {kDemoVocabSize, kHidden}, kEmbeddingStd);
  for (std::int64_t l = 0; l < kLayers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    ones(p + "input_layernorm.weight", kHidden);
    const auto projection = [&](model::Projection proj, compute::Shape shape) {
      normal(model::projectionTensorName(l, proj, "weight"), std::move(shape), kInitStd);
    };
    projection(model::Projection::Q, {kHeads * kHeadDim, kHidden});
    projection(model::Projection::K, {kKvHeads * kHeadDim, kHidden});
    projection(model::Projection::V, {kKvHeads * kHeadDim, kHidden});
    projection(model::Projection::O, {kHidden, kHeads * kHeadDim});
    ones(p + "post_attention_layernorm.weight", kHidden);
    projection(model::Projection::Gate, {kIntermediate, kHidden});
    projection(model::Projection::Up, {kIntermediate, kHidden});
    projection(model::Projection::Down, {kHidden, kIntermediate});
  }
  ones("model.norm.weight", kHidden);
  return weights;
}

// Each letter pair's rows of the tied embedding: lower = e − c/2, upper = e + c/2, with e the
// untrained lower-case row and c one vector for all pairs (float arithmetic, exact halves).
void pairLetterCases(std::vector<float>& embedding) {
  const std::vector<float> caseDirection = normalValues(kHidden, kCaseStream, kEmbeddingStd);
  for (int letter = 0; letter < 26; ++letter) {
    float* lower = embedding.data() + ('a' + letter) * kHidden;
    float* upper = embedding.data() + ('A' + letter) * kHidden;
    for (std::int64_t i = 0; i < kHidden; ++i) {
      const float half = 0.5f * caseDirection[static_cast<std::size_t>(i)];
      const float shared = lower[i];
      lower[i] = shared - half;
      upper[i] = shared + half;
    }
  }
}

}  // namespace

std::string demoConfigJson() {
  const ordered_json config = {
      {"architectures", {"LlamaForCausalLM"}},
      {"model_type", "llama"},
      {"vocab_size", kDemoVocabSize},
      {"hidden_size", kHidden},
      {"intermediate_size", kIntermediate},
      {"num_hidden_layers", kLayers},
      {"num_attention_heads", kHeads},
      {"num_key_value_heads", kKvHeads},
      {"head_dim", kHeadDim},
      {"hidden_act", "silu"},
      {"max_position_embeddings", kMaxPositions},
      {"rms_norm_eps", 1e-5},
      {"rope_theta", 10000.0},
      {"rope_scaling", nullptr},
      {"attention_bias", false},
      {"mlp_bias", false},
      {"tie_word_embeddings", true},
      {"initializer_range", kInitStd},
      {"bos_token_id", nullptr},
      {"eos_token_id", kImEndId},
      {"pad_token_id", kEndOfTextId},
      {"torch_dtype", "float32"},
      {"use_cache", true},
  };
  return config.dump(2) + "\n";
}

std::string demoTokenizerJson() {
  ordered_json vocab = ordered_json::object();
  for (int b = 0; b < 256; ++b) {
    vocab[byteLevelChar(b)] = b;
  }
  const ordered_json byteLevel = {{"type", "ByteLevel"},
                                  {"add_prefix_space", false},
                                  {"trim_offsets", true},
                                  {"use_regex", true}};
  const ordered_json tokenizer = {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens",
       {addedToken(kEndOfTextId, "<|endoftext|>"), addedToken(kImStartId, "<|im_start|>"),
        addedToken(kImEndId, "<|im_end|>")}},
      {"normalizer", nullptr},
      {"pre_tokenizer", byteLevel},
      {"post_processor", byteLevel},
      {"decoder", byteLevel},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", nullptr},
        {"end_of_word_suffix", nullptr},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", ordered_json::array()}}},
  };
  return tokenizer.dump(2) + "\n";
}

std::string demoTokenizerConfigJson() {
  ordered_json decoder = ordered_json::object();
  for (const auto& [id, content] :
       {std::pair{kEndOfTextId, "<|endoftext|>"}, std::pair{kImStartId, "<|im_start|>"},
        std::pair{kImEndId, "<|im_end|>"}}) {
    ordered_json token = addedToken(id, content);
    token.erase("id");
    decoder[std::to_string(id)] = token;
  }
  const ordered_json config = {
      {"added_tokens_decoder", decoder}, {"bos_token", nullptr},
      {"chat_template", kChatTemplate},  {"clean_up_tokenization_spaces", false},
      {"eos_token", "<|im_end|>"},       {"model_max_length", kMaxPositions},
      {"pad_token", "<|endoftext|>"},    {"tokenizer_class", "PreTrainedTokenizerFast"},
  };
  return config.dump(2) + "\n";
}

namespace {

void writeModelFolder(const fs::path& dir, const std::vector<NamedWeight>& weights) {
  fs::create_directories(dir);
  std::vector<TensorToWrite> tensors;
  for (const NamedWeight& w : weights) {
    tensors.push_back(f32TensorToWrite(w.name, w.shape, w.values));
  }
  writeSafetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
  common::writeFileDurably(dir / "config.json", demoConfigJson());
  common::writeFileDurably(dir / "tokenizer.json", demoTokenizerJson());
  common::writeFileDurably(dir / "tokenizer_config.json", demoTokenizerConfigJson());
  const ordered_json generation = {{"eos_token_id", kImEndId}, {"pad_token_id", kEndOfTextId}};
  common::writeFileDurably(dir / "generation_config.json", generation.dump(2) + "\n");
}

}  // namespace

void writeUntrainedDemoModel(const fs::path& dir) {
  writeModelFolder(dir, demoWeights());
}

void writeDemoPretrainingStart(const fs::path& dir) {
  std::vector<NamedWeight> weights = demoWeights();
  pairLetterCases(weights.front().values);  // model.embed_tokens.weight
  writeModelFolder(dir, weights);
}

LoraConfig demoBaseLoraConfig() {
  LoraConfig config;
  config.rank = kDemoBaseRank;
  config.alpha = 2.0 * kDemoBaseRank;
  return config;
}

fs::path defaultCacheDir() {
  // UTF-8 values, read as UTF-16 on Windows: a cache under a non-ASCII user name works.
  if (const auto explicitDir = common::environmentVariable("LORASCOPE_CACHE_DIR")) {
    return common::pathFromUtf8(*explicitDir);
  }
  if (const auto xdg = common::environmentVariable("XDG_CACHE_HOME")) {
    return common::pathFromUtf8(*xdg) / "lorascope";
  }
  if (const auto home = common::environmentVariable("HOME")) {
    return common::pathFromUtf8(*home) / ".cache" / "lorascope";
  }
  return fs::temp_directory_path() / "lorascope-cache";
}

fs::path ensureDemoModel(const fs::path& cacheDir) {
  const fs::path dir = cacheDir / kDemoModelName;
  const auto published = [&] {
    // Assembled under a temp name and renamed: present means complete.
    return fs::exists(dir / "model.safetensors") && fs::exists(dir / "config.json");
  };
  if (published()) {
    return dir;
  }
  fs::create_directories(cacheDir);
  // A staging folder of this call's own: the setup page's inspection and an in-process engine
  // may assemble the demo base at the same time.
  static std::atomic<int> calls{0};
  const fs::path staging = cacheDir / ("." + std::string(kDemoModelName) + common::tempSuffix() +
                                       "-" + std::to_string(calls++));
  fs::remove_all(staging);
  writeDemoPretrainingStart(staging / "start");
  const fs::path adapterDir = staging / "pretraining-adapter";
  fs::create_directories(adapterDir);
  common::writeFileDurably(adapterDir / kAdapterWeightsFile, std::as_bytes(demoBaseAdapterBytes()));
  common::writeFileDurably(adapterDir / kAdapterConfigFile,
                           peftAdapterConfig(demoBaseLoraConfig(), "").dump(2) + "\n");
  mergeAdapterIntoModel(staging / "start", readPeftAdapter(adapterDir).adapter, staging / "model");
  if (!published()) {  // else another caller published the same bytes meanwhile, maybe in use
    common::replaceDirectory(staging / "model", dir);
  }
  fs::remove_all(staging);
  return dir;
}

}  // namespace lorascope::train

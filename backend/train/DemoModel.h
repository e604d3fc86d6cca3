// train/DemoModel.h — the built-in demo model of `lorascope-train train --demo`: a small
// Llama-architecture model (hidden 256, 4 layers, 4 heads, 2 KV heads, intermediate 688, tied
// embeddings; ≈3.0 M parameters) over a byte-level tokenizer (256 byte tokens, no merges, plus
// <|endoftext|>, <|im_start|>, <|im_end|>) with a ChatML chat template; transformers loads the
// folder as it loads any Llama checkpoint.
//
// The demo base is pretrained, so that the demo's adapter has something to build on and Try it
// shows what it learned (a random model answers nothing). It is made in three parts, each the
// same bits on every platform:
//   1. the untrained model: weights drawn from fixed Philox seeds (no libm function involved);
//   2. the pretraining start: the same with the byte embeddings of each letter pair sharing all
//      but a common case direction (upper = lower + that vector), as a trained model's would;
//   3. the demo base: the start with the pretraining adapter (kDemoBaseRank, on every
//      projection) merged into its weights (train/Merge.h: fp32 products and sums in a fixed
//      order). scripts/make-demo-base.sh trained that adapter once, on the pretraining tasks of
//      train/DemoDataset.h (copying a word of the demo's list, writing it in lower case), with
//      `lorascope-make-demo-base`; its tensors are committed
//      (backend/train/demo_base/pretraining_adapter.safetensors) and compiled into the program,
//      so no install trains it again. The base spells the words of that list only (copying any
//      letters would need far longer training).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "train/Lora.h"

namespace lorascope::train {

inline constexpr const char* kDemoModelName = "lorascope-demo-llama-v2";
inline constexpr std::int64_t kDemoVocabSize = 259;  // 256 bytes + 3 special tokens
inline constexpr int kDemoBaseRank = 24;

// The file contents (deterministic).
std::string demoConfigJson();
std::string demoTokenizerJson();
std::string demoTokenizerConfigJson();

// Each writes config.json, model.safetensors, tokenizer.json, tokenizer_config.json and
// generation_config.json into `dir` (created; each file atomically): the untrained model (1
// above), and the pretraining start (2).
void writeUntrainedDemoModel(const std::filesystem::path& dir);
void writeDemoPretrainingStart(const std::filesystem::path& dir);

// The pretraining adapter's configuration (rank kDemoBaseRank on every projection).
LoraConfig demoBaseLoraConfig();

// The per-user cache: $LORASCOPE_CACHE_DIR, else $XDG_CACHE_HOME/lorascope, else
// ~/.cache/lorascope.
std::filesystem::path defaultCacheDir();

// cacheDir/kDemoModelName, the demo base (3 above), written (assembled under a temp name, then
// renamed) when absent; it takes about a second.
std::filesystem::path ensureDemoModel(const std::filesystem::path& cacheDir);

}  // namespace lorascope::train

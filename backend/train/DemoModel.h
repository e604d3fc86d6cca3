// train/DemoModel.h — the built-in demo model of `lorascope-train train --demo`: a small
// Llama-architecture model (hidden 256, 4 layers, 4 heads, 2 KV heads, intermediate 688, tied
// embeddings; ≈3.0 M parameters) over a byte-level tokenizer (256 byte tokens, no merges, plus
// <|endoftext|>, <|im_start|>, <|im_end|>) with a ChatML chat template. Everything is generated
// from fixed seeds, so every install writes the same bytes; transformers loads the folder as it
// loads any Llama checkpoint.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace lorascope::train {

inline constexpr const char* kDemoModelName = "lorascope-demo-llama-v1";
inline constexpr std::int64_t kDemoVocabSize = 259;  // 256 bytes + 3 special tokens

// The file contents (deterministic).
std::string demoConfigJson();
std::string demoTokenizerJson();
std::string demoTokenizerConfigJson();

// Writes config.json, model.safetensors, tokenizer.json, tokenizer_config.json and
// generation_config.json into `dir` (created; each file atomically).
void writeDemoModel(const std::filesystem::path& dir);

// The per-user cache: $LORASCOPE_CACHE_DIR, else $XDG_CACHE_HOME/lorascope, else
// ~/.cache/lorascope.
std::filesystem::path defaultCacheDir();

// cacheDir/kDemoModelName, written (under a temp name, then renamed) when absent.
std::filesystem::path ensureDemoModel(const std::filesystem::path& cacheDir);

}  // namespace lorascope::train

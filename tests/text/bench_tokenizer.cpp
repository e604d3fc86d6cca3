// bench_tokenizer.cpp — tokenization throughput of backend/text on an alpaca-style dataset (a
// JSON array of {instruction, input, output}); a benchmark program, not a test.
//   bench_tokenizer TOKENIZER_JSON_OR_MODEL_DIR DATASET_JSON [REPEATS]
// Each text is instruction + "\n" + input + "\n" + output (as scripts/reference/tokenizers.py
// --bench builds them for the Hugging Face baseline). "cold" is one pass with a freshly loaded
// tokenizer (empty word cache: what a one-off validation report sees); "warm" the best later pass.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/Tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
using lorascope::text::Tokenizer;

Tokenizer load(const std::filesystem::path& path) {
  return std::filesystem::is_directory(path) ? Tokenizer::fromModelDir(path)
                                             : Tokenizer::fromFile(path);
}

double encodeAll(const Tokenizer& tokenizer, const std::vector<std::string>& texts,
                 std::size_t& tokens) {
  tokens = 0;
  const auto start = Clock::now();
  for (const std::string& text : texts)
    tokens += tokenizer.encode(text).size();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_tokenizer TOKENIZER DATASET_JSON [REPEATS]\n");
    return 2;
  }
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  try {
    std::ifstream in(argv[2], std::ios::binary);
    if (!in)
      throw std::runtime_error(std::string(argv[2]) + ": cannot open");
    const nlohmann::json rows = nlohmann::json::parse(in);
    std::vector<std::string> texts;
    std::size_t bytes = 0;
    for (const auto& row : rows) {
      texts.push_back(row.value("instruction", "") + "\n" + row.value("input", "") + "\n" +
                      row.value("output", ""));
      bytes += texts.back().size();
    }
    std::size_t tokens = 0;
    const double coldSeconds = encodeAll(load(argv[1]), texts, tokens);
    const Tokenizer tokenizer = load(argv[1]);
    double warmSeconds = encodeAll(tokenizer, texts, tokens);
    for (int i = 1; i < repeats; ++i)
      warmSeconds = std::min(warmSeconds, encodeAll(tokenizer, texts, tokens));
    std::printf("%s\n", tokenizer.describe().c_str());
    std::printf("%zu texts, %zu bytes, %zu tokens (%.2f bytes/token)\n", texts.size(), bytes,
                tokens, static_cast<double>(bytes) / static_cast<double>(tokens));
    std::printf("cold: %.2f MB/s, %.0f tokens/s (%.1f ms)\n", bytes / coldSeconds / 1e6,
                tokens / coldSeconds, coldSeconds * 1e3);
    std::printf("warm: %.2f MB/s, %.0f tokens/s (%.1f ms, best of %d)\n", bytes / warmSeconds / 1e6,
                tokens / warmSeconds, warmSeconds * 1e3, repeats);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_tokenizer: %s\n", e.what());
    return 1;
  }
  return 0;
}

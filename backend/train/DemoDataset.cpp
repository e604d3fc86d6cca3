// train/DemoDataset.cpp — the demo tasks, drawn from a fixed Philox seed.
#include "train/DemoDataset.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "common/DurableFile.h"
#include "train/Philox.h"

namespace lorascope::train {
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kDatasetSeed = 7;
enum Stream : std::uint64_t { kReverseWords = 1, kAdd, kUpper, kSpellBackwards };

constexpr const char* kWords[] = {
    "apple", "river", "stone", "cloud", "green", "light", "music", "paper", "tiger", "ocean",
    "bread", "chair", "dream", "earth", "flame", "grape", "house", "juice", "lemon", "money",
    "night", "piano", "queen", "radio", "snake", "table", "water", "zebra", "cat",   "dog",
    "sun",   "moon",  "tree",  "bird",  "fish",  "road",  "rain",  "snow",  "wind",  "fire",
    "blue",  "red",   "gold",  "sand",  "milk",  "star",  "book",  "door",  "lamp",  "ship"};
constexpr std::uint64_t kWordCount = std::size(kWords);

// Draws from one stream of the dataset seed, in order.
class Draws {
 public:
  explicit Draws(std::uint64_t stream) : stream_(stream) {}
  std::uint64_t below(std::uint64_t bound) {
    return uniformBelow(kDatasetSeed, stream_, index_, bound);
  }
  std::string word() { return kWords[below(kWordCount)]; }
  std::vector<std::string> words(std::uint64_t minCount, std::uint64_t maxCount) {
    const std::uint64_t n = minCount + below(maxCount - minCount + 1);
    std::vector<std::string> out;
    for (std::uint64_t i = 0; i < n; ++i) {
      out.push_back(word());
    }
    return out;
  }

 private:
  std::uint64_t stream_;
  std::uint64_t index_ = 0;
};

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) {
    out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

DemoExample reverseWords(Draws& d) {
  std::vector<std::string> words = d.words(3, 5);
  const std::string input = join(words);
  std::reverse(words.begin(), words.end());
  return {"Reverse the order of the words.", input, join(words)};
}

DemoExample addNumbers(Draws& d) {
  const std::uint64_t a = d.below(90) + 10;
  const std::uint64_t b = d.below(90) + 10;
  return {"Add the two numbers.", std::to_string(a) + " + " + std::to_string(b),
          std::to_string(a + b)};
}

DemoExample upperCase(Draws& d) {
  const std::string input = join(d.words(2, 4));
  std::string output = input;
  std::transform(output.begin(), output.end(), output.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return {"Write the text in upper case.", input, output};
}

DemoExample spellBackwards(Draws& d) {
  const std::string input = d.word();
  return {"Spell the word backwards.", input, std::string(input.rbegin(), input.rend())};
}

}  // namespace

std::vector<DemoExample> demoExamples() {
  Draws reverse(kReverseWords), add(kAdd), upper(kUpper), backwards(kSpellBackwards);
  std::vector<DemoExample> out;
  for (int i = 0; i < kDemoExamplesPerTask; ++i) {
    out.push_back(reverseWords(reverse));
    out.push_back(addNumbers(add));
    out.push_back(upperCase(upper));
    out.push_back(spellBackwards(backwards));
  }
  return out;
}

std::string demoDatasetJsonl() {
  std::string out;
  for (const DemoExample& e : demoExamples()) {
    const nlohmann::ordered_json line = {
        {"instruction", e.instruction}, {"input", e.input}, {"output", e.output}};
    out += line.dump() + "\n";
  }
  return out;
}

fs::path ensureDemoDataset(const fs::path& cacheDir) {
  const fs::path file = cacheDir / kDemoDatasetName;
  if (!fs::exists(file)) {
    fs::create_directories(cacheDir);
    common::writeFileDurably(file, demoDatasetJsonl());
  }
  return file;
}

}  // namespace lorascope::train

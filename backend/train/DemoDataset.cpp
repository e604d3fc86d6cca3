// train/DemoDataset.cpp — the demo's tasks, drawn from a fixed Philox seed.
#include "train/DemoDataset.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "common/DurableFile.h"
#include "train/RandomDraws.h"

namespace lorascope::train {
namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kDatasetSeed = 7;
enum Stream : std::uint64_t { kHeldOut = 1, kCopy, kLower };

constexpr const char* kUpperInstruction = "Write the word in upper case.";
constexpr const char* kCopyInstruction = "Copy the word.";
constexpr const char* kLowerInstruction = "Write the word in lower case.";

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

 private:
  std::uint64_t stream_;
  std::uint64_t index_ = 0;
};

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return text;
}

// The word as written in lower case, capitalised or upper case (with `lowerToo` false, only the
// last two).
std::string cased(Draws& d, const std::string& word, bool lowerToo) {
  switch (d.below(lowerToo ? 3 : 2)) {
    case 0:
      return upper(word);
    case 1:
      return upper(word.substr(0, 1)) + word.substr(1);
    default:
      return word;
  }
}

DemoExample upperCaseExample(const std::string& word) {
  return {std::string(kUpperInstruction) + "\n" + word, upper(word)};
}

// The words of the held-out prompts: kDemoHeldOutCount distinct ones drawn from the list.
std::set<std::string> heldOutWords() {
  Draws d(kHeldOut);
  std::set<std::string> words;
  while (static_cast<int>(words.size()) < kDemoHeldOutCount) {
    words.insert(d.word());
  }
  return words;
}

}  // namespace

std::vector<DemoExample> demoHeldOutPrompts() {
  std::vector<DemoExample> out;
  for (const std::string& word : heldOutWords()) {
    out.push_back(upperCaseExample(word));
  }
  return out;
}

std::vector<DemoExample> demoExamples() {
  const std::set<std::string> heldOut = heldOutWords();
  std::vector<DemoExample> out;
  for (const char* word : kWords) {
    if (heldOut.count(word) == 0) {
      out.push_back(upperCaseExample(word));
    }
  }
  return out;
}

std::vector<DemoExample> demoPretrainingExamples(int count) {
  Draws copy(kCopy), lowerCase(kLower);
  std::vector<DemoExample> out;
  for (int i = 0; static_cast<int>(out.size()) < count; ++i) {
    if (i % 2 == 0) {
      const std::string word = cased(copy, copy.word(), true);
      out.push_back({std::string(kCopyInstruction) + "\n" + word, word});
    } else {
      const std::string word = lowerCase.word();
      out.push_back({std::string(kLowerInstruction) + "\n" + cased(lowerCase, word, false), word});
    }
  }
  return out;
}

std::string demoJsonl(const std::vector<DemoExample>& examples) {
  std::string out;
  for (const DemoExample& e : examples) {
    const nlohmann::ordered_json line = {{"messages",
                                          {{{"role", "user"}, {"content", e.prompt}},
                                           {{"role", "assistant"}, {"content", e.answer}}}}};
    out += line.dump() + "\n";
  }
  return out;
}

std::string demoDatasetJsonl() {
  return demoJsonl(demoExamples());
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

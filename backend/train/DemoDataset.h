// train/DemoDataset.h — the built-in dataset of the demo: instruction/response pairs of tasks a
// small model visibly learns (reversing the order of words, adding two numbers, upper-casing,
// spelling a word backwards), generated from a fixed seed and written as alpaca JSONL
// ({"instruction", "input", "output"} per line). Same bytes on every install.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lorascope::train {

inline constexpr const char* kDemoDatasetName = "lorascope-demo-tasks-v1.jsonl";
inline constexpr int kDemoExamplesPerTask = 80;

struct DemoExample {
  std::string instruction;
  std::string input;
  std::string output;
};

// kDemoExamplesPerTask examples of each of the four tasks, interleaved.
std::vector<DemoExample> demoExamples();
std::string demoDatasetJsonl();  // one alpaca JSON object per line

// cacheDir/kDemoDatasetName, written atomically when absent.
std::filesystem::path ensureDemoDataset(const std::filesystem::path& cacheDir);

}  // namespace lorascope::train

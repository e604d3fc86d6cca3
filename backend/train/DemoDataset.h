// train/DemoDataset.h — the tasks of the built-in demo, generated from a fixed seed (same bytes
// on every install). Every example is one user message — the task's instruction, a newline, its
// input, as `lorascope-train generate --prompt` and the Try it page take a prompt — and the
// assistant's answer:
//   - the demo's dataset (what `train --demo` teaches): "Write the word in upper case.", a
//     task the demo's base model never saw, on 40 of the 50 words of the demo's list; written as
//     chat JSONL ({"messages": [...]}) without a repeated example, so that validate-data finds
//     nothing to warn about;
//   - the demo's held-out prompts: the same task on the other 10 words, the check that the
//     adapter learned the task rather than its examples (the base alone answers none);
//   - the base's pretraining tasks on the same words (copying the word as written, in lower
//     case, capitalised or upper case, and writing it in lower case), which
//     scripts/make-demo-base.sh trained into the demo base once (train/DemoModel.h).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace lorascope::train {

inline constexpr const char* kDemoDatasetName = "lorascope-demo-tasks-v2.jsonl";
inline constexpr int kDemoExampleCount = 40;
inline constexpr int kDemoHeldOutCount = 10;

struct DemoExample {
  std::string prompt;  // the user's message: instruction, "\n", input
  std::string answer;  // the assistant's reply
};

// The dataset: kDemoExampleCount distinct upper-casing examples, in the list's order.
std::vector<DemoExample> demoExamples();
std::string demoDatasetJsonl();  // one {"messages": [user, assistant]} object per line

// kDemoHeldOutCount prompts of the same task on the words the dataset leaves out.
std::vector<DemoExample> demoHeldOutPrompts();

// `count` examples of the base's pretraining tasks, interleaved; none of them upper-cases.
std::vector<DemoExample> demoPretrainingExamples(int count);
std::string demoJsonl(const std::vector<DemoExample>& examples);

// cacheDir/kDemoDatasetName, written atomically when absent.
std::filesystem::path ensureDemoDataset(const std::filesystem::path& cacheDir);

}  // namespace lorascope::train

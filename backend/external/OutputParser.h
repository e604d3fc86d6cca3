// external/OutputParser.h — progress read from an external trainer's output lines.
//
// Formats (the --parser option of `lorascope-train supervise`):
//   hf         Hugging Face Trainer's log dicts, {'loss': 2.31, 'grad_norm': 1.2,
//              'learning_rate': 4.9e-05, 'epoch': 0.1}, with the step taken from its tqdm bar
//              (" 12/300 [00:04<...]") when one was seen, else counted (one per dict with a loss)
//   tqdm       tqdm / accelerate progress bars with the loss in the postfix:
//              "45/100 [00:10<00:12, 4.50it/s, loss=2.31, lr=1e-4]"
//   kohya      kohya-ss sd-scripts and musubi-tuner: "steps: 10%|█ | 100/1000 [...,
//   avr_loss=0.123]" lightning  PyTorch Lightning's bar: "Epoch 2: 50%|█████ | 50/100 [...,
//   train_loss=2.31]";
//              the global step is epoch × batches per epoch + the batch
//   regex:P    a PCRE2 pattern with named groups step, loss, lr (at least step or loss)
// A line is what ends in '\n' or '\r' (tqdm redraws its bar with '\r'). Lines that carry no
// progress give nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace lorascope::external {

// Bad input to `supervise`: a parser that does not exist, a regex that does not compile, a
// command that cannot be found, a profile that may not be used. Raised before anything runs.
class ExternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Progress {
  std::optional<std::int64_t> step;
  std::optional<std::int64_t> totalSteps;
  std::optional<double> loss;
  std::optional<double> learningRate;
  // The step was counted from this process's own output (hf without a bar or a 'step' key), so
  // it starts at 1 again in a process resumed from a checkpoint.
  bool counted = false;
};

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // The progress one line reports, or nullopt.
  virtual std::optional<Progress> parse(std::string_view line) = 0;
};

// "hf", "tqdm", "kohya", "lightning" or "regex:PATTERN"; throws ExternalError naming the problem
// (an unknown name with the list, a regex's compile error at its offset, a regex without a step or
// loss group).
std::unique_ptr<OutputParser> makeOutputParser(const std::string& spec);

}  // namespace lorascope::external

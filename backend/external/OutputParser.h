// external/OutputParser.h — progress read from an external trainer's output lines.
//
// One announcement per optimizer step, with that step's own loss; a value the output does not
// give stays unknown. Formats (the --parser option of `lorascope-train supervise`):
//   hf         Hugging Face Trainer's log dicts, {'loss': 2.31, 'grad_norm': 1.2, ...} as
//              transformers 4 prints them and {'loss': '2.31', ...} (numbers as strings) as
//              transformers 5 does. Each dict with a loss is one step: its 'step' when it has one,
//              else counted (logging_steps=1 gives every step its own dict). The tqdm bar gives
//              the total only: it is drawn on the other stream, behind the dicts and not at every
//              step, so its counter cannot number them (the first bar gives the total; evaluation
//              bars come later). Evaluation dicts ({'eval_loss': ...})
//              give the evaluation after the last step.
//   tqdm       tqdm / accelerate progress bars with the loss in the postfix:
//              "Steps:  45%|...| 45/100 [00:10<00:12, 4.50it/s, loss=2.31, lr=1e-4]"
//   kohya      kohya-ss sd-scripts and musubi-tuner: "steps:  10%|█ | 100/1000 [...,
//   avr_loss=0.123]" lightning  PyTorch Lightning's tqdm bar "Epoch 2:  50%|█████ | 50/100 [...,
//   train_loss=2.31]"
//              and the last frame of its rich bar "Epoch 2/4 ━━━━ 50/100 0:00:10 • ... loss: 2.31";
//              the global step is epoch × batches per epoch + the batch
//   regex:P    a PCRE2 pattern with named groups step, loss, lr, epoch (at least step or loss)
// A bar is redrawn many times within a step, and trainers (accelerate's and diffusers' examples,
// kohya, Lightning) advance it before they set that step's loss in its postfix: the bar's step is
// announced with the last loss drawn for it, once the bar moves on or the output ends (finish()).
// A line is what ends in '\n' or '\r' (tqdm redraws its bar with '\r'). Lines that carry no
// progress give nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace lorascope::external {

// Bad input to `supervise`: a parser that does not exist, a regex that does not compile, a
// command that cannot be found, a profile that may not be used. Raised before anything runs.
class ExternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One completed optimizer step (a loss), or an evaluation after the last step (evalLoss only).
struct Progress {
  std::optional<std::int64_t> step;
  std::optional<std::int64_t> totalSteps;
  std::optional<double> loss;
  std::optional<double> learningRate;
  std::optional<double> gradNorm;
  // Epochs done, as the trainer counts them: a Trainer dict's 'epoch' (0.33: a third into the
  // first), Lightning's bar epoch plus the fraction of its batches, a regex's epoch group.
  std::optional<double> epoch;
  std::optional<double> evalLoss;
  // The step was counted from this process's own output (hf dicts without a 'step' key), so it
  // starts at 1 again in a process resumed from a checkpoint.
  bool counted = false;
};

class OutputParser {
 public:
  virtual ~OutputParser() = default;
  // The step (or evaluation) one line completes, or nullopt.
  virtual std::optional<Progress> parse(std::string_view line) = 0;
  // The output has ended: a step still held back (a bar's last step), or nullopt.
  virtual std::optional<Progress> finish() { return std::nullopt; }
  // The run's step count, once a progress bar has shown it.
  std::optional<std::int64_t> totalSteps() const { return totalSteps_; }

 protected:
  std::optional<std::int64_t> totalSteps_;
};

// "[rank1]: text" or "[default1]: text" (torchrun --tee / --log-dir, accelerate): the rank and
// the text after the prefix; nullopt without one.
std::optional<std::pair<int, std::string_view>> splitRankPrefix(std::string_view line);

// "hf", "tqdm", "kohya", "lightning" or "regex:PATTERN"; throws ExternalError naming the problem
// (an unknown name with the list, a regex's compile error at its offset, a regex without a step or
// loss group).
std::unique_ptr<OutputParser> makeOutputParser(const std::string& spec);

}  // namespace lorascope::external

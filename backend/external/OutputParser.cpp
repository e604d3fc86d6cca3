// external/OutputParser.cpp — the built-in formats and the user regex.
#include "external/OutputParser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <vector>

#include "text/Regex.h"
#include "text/TextError.h"

namespace lorascope::external {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

// A number as Python and tqdm print it: 2.31, 1e-4, 4.9e-05, nan, inf; a trailing unit-less
// tensor repr such as "tensor(2.31)" is not handled (trainers print floats).
std::optional<double> number(std::string_view text) {
  text = trim(text);
  if (!text.empty() && (text.front() == '\'' || text.front() == '"'))
    text = text.substr(1, text.size() >= 2 ? text.size() - 2 : 0);
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "nan")
    return std::nan("");
  if (lower == "inf" || lower == "+inf")
    return HUGE_VAL;
  if (lower == "-inf")
    return -HUGE_VAL;
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  if (!text.empty() && *begin == '+')
    ++begin;
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end)
    return std::nullopt;
  return value;
}

std::optional<std::int64_t> whole(std::string_view text) {
  text = trim(text);
  std::int64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || value < 0)
    return std::nullopt;
  return value;
}

// An epoch count as a trainer prints it: a number that is finite and not negative.
std::optional<double> epochCount(std::optional<double> value) {
  if (value && std::isfinite(*value) && *value >= 0)
    return value;
  return std::nullopt;
}

// "a=1, b=2" (tqdm's postfix, separator '=') or "'a': 1, 'b': 2" (a Python dict's body, ':'):
// keys without their quotes, values trimmed.
std::map<std::string, std::string> keyValues(std::string_view text, char separator) {
  std::map<std::string, std::string> values;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view item = trim(text.substr(start, comma - start));
    start = comma + 1;
    const std::size_t at = item.find(separator);
    if (at == std::string_view::npos)
      continue;
    std::string_view key = trim(item.substr(0, at));
    if (key.size() >= 2 && (key.front() == '\'' || key.front() == '"'))
      key = key.substr(1, key.size() - 2);
    values[std::string(key)] = std::string(trim(item.substr(at + 1)));
  }
  return values;
}

// A tqdm bar: "<desc>: 45%|████▌     | 45/100 [00:10<00:12,  4.50it/s, loss=2.31, lr=1e-4]".
struct Bar {
  std::string description;  // before the percentage ("Epoch 2", "steps"), trimmed, no colon
  std::int64_t n = 0;
  std::optional<std::int64_t> total;
  std::map<std::string, std::string> postfix;  // key=value pairs after the rate
};

std::optional<Bar> parseBar(std::string_view line) {
  // "n/total [" or "n/? [" after the last '|' (the bar's right edge), else anywhere.
  const std::size_t edge = line.rfind('|');
  std::string_view rest = edge == std::string_view::npos ? line : line.substr(edge + 1);
  const std::size_t bracket = rest.find('[');
  if (bracket == std::string_view::npos)
    return std::nullopt;
  const std::string_view counts = trim(rest.substr(0, bracket));
  const std::size_t slash = counts.find('/');
  if (slash == std::string_view::npos)
    return std::nullopt;
  Bar bar;
  const auto n = whole(counts.substr(0, slash));
  if (!n)
    return std::nullopt;
  bar.n = *n;
  bar.total = whole(counts.substr(slash + 1));
  if (!bar.total && trim(counts.substr(slash + 1)) != "?")
    return std::nullopt;
  std::string_view inside = rest.substr(bracket + 1);
  if (const std::size_t close = inside.rfind(']'); close != std::string_view::npos)
    inside = inside.substr(0, close);
  bar.postfix = keyValues(inside, '=');
  if (edge != std::string_view::npos) {
    std::string_view head = line.substr(0, edge);
    if (const std::size_t bar1 = head.rfind('|'); bar1 != std::string_view::npos)
      head = head.substr(0, bar1);
    if (const std::size_t pct = head.rfind('%'); pct != std::string_view::npos) {
      head = head.substr(0, pct);
      while (!head.empty() &&
             (std::isdigit(static_cast<unsigned char>(head.back())) || head.back() == ' '))
        head.remove_suffix(1);
    }
    head = trim(head);
    if (!head.empty() && head.back() == ':')
      head.remove_suffix(1);
    bar.description = std::string(trim(head));
  }
  return bar;
}

std::optional<double> firstNumber(const std::map<std::string, std::string>& values,
                                  std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    if (auto it = values.find(key); it != values.end()) {
      if (auto v = number(it->second))
        return v;
    }
  }
  return std::nullopt;
}

// The step a bar is drawn at, held until the bar moves on: its last drawing carries the loss.
class HeldStep {
 public:
  // A drawing of the bar at `step`: the step it completes (the held one, when the bar moved on).
  // A bar at 0 (an epoch's start) has completed no step.
  std::optional<Progress> draw(std::int64_t step, std::int64_t n, Progress drawn) {
    std::optional<Progress> done;
    if (held_ && *held_->step != step)
      done = release();
    if (!drawn.loss || n == 0)
      return done;  // a drawing before the step's loss was set: nothing to keep
    drawn.step = step;
    held_ = std::move(drawn);
    return done;
  }
  std::optional<Progress> release() { return std::exchange(held_, std::nullopt); }

 private:
  std::optional<Progress> held_;
};

// A bar whose postfix carries the loss under one of `lossKeys`.
class BarParser : public OutputParser {
 public:
  explicit BarParser(std::initializer_list<const char*> lossKeys) : lossKeys_(lossKeys) {}

  std::optional<Progress> parse(std::string_view line) override {
    auto bar = parseBar(line);
    if (!bar)
      return std::nullopt;
    Progress p;
    for (const char* key : lossKeys_) {
      if (!p.loss)
        p.loss = firstNumber(bar->postfix, {key});
    }
    // Bars without a loss (an evaluation's, a data loader's) are not the training bar.
    if (!p.loss && bar->description != description_)
      return std::nullopt;
    if (p.loss && bar->description != description_) {
      std::optional<Progress> done = held_.release();
      description_ = bar->description;
      held_.draw(bar->n, bar->n, withTotal(*bar, std::move(p)));
      return done;
    }
    return held_.draw(bar->n, bar->n, withTotal(*bar, std::move(p)));
  }
  std::optional<Progress> finish() override { return held_.release(); }

 private:
  Progress withTotal(const Bar& bar, Progress p) {
    if (bar.total)
      totalSteps_ = bar.total;
    p.totalSteps = bar.total;
    p.learningRate = firstNumber(bar.postfix, {"lr", "learning_rate", "lr/unet", "lr/textencoder"});
    return p;
  }

  std::vector<const char*> lossKeys_;
  std::string description_;
  HeldStep held_;
};

// "Epoch 2/4 ━━━━━━ 50/100 0:00:10 • 0:00:10 5.00it/s loss: 2.31 v_num: 0": rich's bar, as
// Lightning's RichProgressBar leaves its last frame in a pipe.
struct RichFrame {
  std::int64_t epoch = 0;
  std::int64_t n = 0;
  std::int64_t total = 0;
  std::map<std::string, std::string> metrics;
};

std::optional<RichFrame> parseRichFrame(std::string_view line) {
  line = trim(line);
  if (line.rfind("Epoch ", 0) != 0)
    return std::nullopt;
  std::vector<std::string_view> words;
  for (std::size_t at = 0; at < line.size();) {
    const std::size_t end = std::min(line.find(' ', at), line.size());
    if (end > at)
      words.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  if (words.size() < 3)
    return std::nullopt;
  RichFrame frame;
  const std::string_view epoch = words[1].substr(0, words[1].find('/'));
  const auto e = whole(epoch);
  if (!e)
    return std::nullopt;
  frame.epoch = *e;
  bool counted = false;
  for (std::size_t i = 2; i < words.size(); ++i) {
    const std::string_view w = words[i];
    const std::size_t slash = w.find('/');
    if (!counted && slash != std::string_view::npos) {
      const auto n = whole(w.substr(0, slash));
      const auto total = whole(w.substr(slash + 1));
      if (n && total) {
        frame.n = *n;
        frame.total = *total;
        counted = true;
      }
      continue;
    }
    if (counted && w.size() > 1 && w.back() == ':' && i + 1 < words.size()) {
      frame.metrics[std::string(w.substr(0, w.size() - 1))] = std::string(words[i + 1]);
      ++i;
    }
  }
  if (!counted)
    return std::nullopt;
  return frame;
}

// Lightning restarts its bar every epoch: "Epoch 2: ... 50/100".
class LightningParser : public OutputParser {
 public:
  std::optional<Progress> parse(std::string_view line) override {
    if (auto frame = parseRichFrame(line))
      return held_.draw(frame->epoch * frame->total + frame->n, frame->n,
                        values(frame->metrics, frame->epoch, frame->n, frame->total));
    auto bar = parseBar(line);
    if (!bar || bar->description.rfind("Epoch ", 0) != 0)
      return std::nullopt;
    const auto epoch = whole(std::string_view(bar->description).substr(6));
    if (!epoch)
      return std::nullopt;
    return held_.draw(*epoch * bar->total.value_or(0) + bar->n, bar->n,
                      values(bar->postfix, *epoch, bar->n, bar->total.value_or(0)));
  }
  std::optional<Progress> finish() override { return held_.release(); }

 private:
  // The bar's epoch (0-based) and its batch n of total: epochs done, as a Trainer counts them.
  static Progress values(const std::map<std::string, std::string>& metrics, std::int64_t epoch,
                         std::int64_t n, std::int64_t total) {
    Progress p;
    if (total > 0) {
      p.epoch = static_cast<double>(epoch) + static_cast<double>(n) / static_cast<double>(total);
    }
    p.loss = firstNumber(metrics, {"train_loss_step", "train_loss", "loss", "train_loss_epoch"});
    p.learningRate = firstNumber(metrics, {"lr", "learning_rate", "lr-AdamW", "lr-Adam"});
    return p;
  }

  HeldStep held_;
};

// Hugging Face Trainer: a Python dict repr per logging step.
class HfParser : public OutputParser {
 public:
  std::optional<Progress> parse(std::string_view line) override {
    const std::string_view t = trim(line);
    if (t.size() >= 2 && t.front() == '{' && t.back() == '}') {
      const std::map<std::string, std::string> values = keyValues(t.substr(1, t.size() - 2), ':');
      if (values.count("train_runtime"))  // the closing summary is not a step
        return std::nullopt;
      Progress p;
      p.totalSteps = totalSteps_;
      if (const auto eval = firstNumber(values, {"eval_loss"}); eval && !values.count("loss")) {
        p.evalLoss = eval;
        return p;
      }
      p.loss = firstNumber(values, {"loss", "train_loss"});
      if (!p.loss)
        return std::nullopt;
      p.learningRate = firstNumber(values, {"learning_rate", "lr"});
      p.gradNorm = firstNumber(values, {"grad_norm"});
      p.epoch = epochCount(firstNumber(values, {"epoch"}));
      if (auto step = values.find("step"); step != values.end() && whole(step->second)) {
        p.step = whole(step->second);
      } else {
        p.step = ++counted_;
        p.counted = true;
      }
      return p;
    }
    // Its progress bar: the total only, the first bar's (evaluation bars come later).
    if (auto bar = parseBar(line); bar && bar->total && !totalSteps_)
      totalSteps_ = bar->total;
    return std::nullopt;
  }

 private:
  std::int64_t counted_ = 0;
};

class RegexParser : public OutputParser {
 public:
  explicit RegexParser(text::Regex regex) : regex_(std::move(regex)) {}
  std::optional<Progress> parse(std::string_view line) override {
    const auto groups = regex_.matchNamed(line);
    if (!groups)
      return std::nullopt;
    Progress p;
    for (const auto& [name, value] : *groups) {
      if (name == "step")
        p.step = whole(value);
      else if (name == "loss")
        p.loss = number(value);
      else if (name == "lr")
        p.learningRate = number(value);
      else if (name == "epoch")
        p.epoch = epochCount(number(value));
    }
    if (!p.step && !p.loss)
      return std::nullopt;
    if (!p.step) {  // a loss without a step number: the next step
      p.step = ++counted_;
      p.counted = true;
    }
    return p;
  }

 private:
  text::Regex regex_;
  std::int64_t counted_ = 0;
};

}  // namespace

std::optional<std::pair<int, std::string_view>> splitRankPrefix(std::string_view line) {
  if (line.empty() || line.front() != '[')
    return std::nullopt;
  const std::size_t close = line.find("]:");
  if (close == std::string_view::npos)
    return std::nullopt;
  std::string_view name = line.substr(1, close - 1);
  for (const std::string_view prefix : {"rank", "default"}) {
    if (name.rfind(prefix, 0) == 0) {
      const auto rank = whole(name.substr(prefix.size()));
      if (rank && *rank <= 1'000'000) {
        std::string_view text = line.substr(close + 2);
        return std::pair{static_cast<int>(*rank), text};
      }
    }
  }
  return std::nullopt;
}

std::unique_ptr<OutputParser> makeOutputParser(const std::string& spec) {
  if (spec == "hf")
    return std::make_unique<HfParser>();
  if (spec == "tqdm")
    return std::make_unique<BarParser>(std::initializer_list<const char*>{"loss", "train_loss"});
  if (spec == "kohya")
    return std::make_unique<BarParser>(
        std::initializer_list<const char*>{"avr_loss", "loss", "current_loss"});
  if (spec == "lightning")
    return std::make_unique<LightningParser>();
  if (spec.rfind("regex:", 0) == 0) {
    const std::string pattern = spec.substr(6);
    if (pattern.empty())
      throw ExternalError(
          "--parser regex: the pattern is empty (regex:PATTERN with named groups "
          "step, loss, lr, epoch)");
    try {
      text::Regex regex(pattern, "--parser regex");
      const auto names = regex.groupNames();
      const bool useful = std::find(names.begin(), names.end(), "step") != names.end() ||
                          std::find(names.begin(), names.end(), "loss") != names.end();
      if (!useful) {
        throw ExternalError("--parser regex: '" + pattern +
                            "' has no named group step or loss; write (?<step>\\d+) or "
                            "(?<loss>[0-9.e+-]+)");
      }
      return std::make_unique<RegexParser>(std::move(regex));
    } catch (const text::TextError& e) {
      throw ExternalError(e.what());
    }
  }
  throw ExternalError("--parser: unknown format '" + spec +
                      "' (one of hf, tqdm, kohya, lightning, regex:PATTERN)");
}

}  // namespace lorascope::external

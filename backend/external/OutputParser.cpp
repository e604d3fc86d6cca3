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

// A bar whose postfix carries the loss under one of `lossKeys`.
class BarParser : public OutputParser {
 public:
  BarParser(std::initializer_list<const char*> lossKeys, std::string requiredPrefix)
      : lossKeys_(lossKeys), prefix_(std::move(requiredPrefix)) {}

  std::optional<Progress> parse(std::string_view line) override {
    auto bar = parseBar(line);
    if (!bar || (!prefix_.empty() && bar->description.rfind(prefix_, 0) != 0))
      return std::nullopt;
    Progress p;
    p.step = bar->n;
    p.totalSteps = bar->total;
    for (const char* key : lossKeys_) {
      if (!p.loss)
        p.loss = firstNumber(bar->postfix, {key});
    }
    p.learningRate =
        firstNumber(bar->postfix, {"lr", "learning_rate", "lr/unet", "lr/textencoder"});
    return p;
  }

 private:
  std::vector<const char*> lossKeys_;
  std::string prefix_;
};

// Lightning restarts its bar every epoch: "Epoch 2: ... 50/100".
class LightningParser : public OutputParser {
 public:
  std::optional<Progress> parse(std::string_view line) override {
    auto bar = parseBar(line);
    if (!bar || bar->description.rfind("Epoch ", 0) != 0)
      return std::nullopt;
    const auto epoch = whole(std::string_view(bar->description).substr(6));
    if (!epoch)
      return std::nullopt;
    Progress p;
    const std::int64_t perEpoch = bar->total.value_or(0);
    p.step = *epoch * perEpoch + bar->n;
    p.loss =
        firstNumber(bar->postfix, {"train_loss_step", "train_loss", "loss", "train_loss_epoch"});
    p.learningRate = firstNumber(bar->postfix, {"lr", "learning_rate", "lr-AdamW", "lr-Adam"});
    return p;
  }
};

// Hugging Face Trainer: a Python dict repr per logging step.
class HfParser : public OutputParser {
 public:
  std::optional<Progress> parse(std::string_view line) override {
    const std::string_view t = trim(line);
    if (t.size() >= 2 && t.front() == '{' && t.back() == '}') {
      const std::map<std::string, std::string> values = keyValues(t.substr(1, t.size() - 2), ':');
      const auto loss = firstNumber(values, {"loss", "train_loss"});
      if (!loss || values.count("train_runtime"))  // the closing summary is not a step
        return std::nullopt;
      Progress p;
      p.loss = loss;
      p.learningRate = firstNumber(values, {"learning_rate"});
      if (auto step = values.find("step"); step != values.end()) {
        p.step = whole(step->second);
      } else if (lastBarStep_) {
        p.step = lastBarStep_;
      } else {
        p.step = ++counted_;
        p.counted = true;
      }
      p.totalSteps = total_;
      return p;
    }
    // Its progress bar: remember the step for the next dict; progress without a loss.
    if (auto bar = parseBar(line)) {
      lastBarStep_ = bar->n;
      total_ = bar->total;
      Progress p;
      p.step = bar->n;
      p.totalSteps = bar->total;
      return p;
    }
    return std::nullopt;
  }

 private:
  std::optional<std::int64_t> lastBarStep_;
  std::optional<std::int64_t> total_;
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
    }
    if (!p.step && !p.loss)
      return std::nullopt;
    return p;
  }

 private:
  text::Regex regex_;
};

}  // namespace

std::unique_ptr<OutputParser> makeOutputParser(const std::string& spec) {
  if (spec == "hf")
    return std::make_unique<HfParser>();
  if (spec == "tqdm")
    return std::make_unique<BarParser>(std::initializer_list<const char*>{"loss", "train_loss"},
                                       "");
  if (spec == "kohya")
    return std::make_unique<BarParser>(
        std::initializer_list<const char*>{"avr_loss", "loss", "current_loss"}, "");
  if (spec == "lightning")
    return std::make_unique<LightningParser>();
  if (spec.rfind("regex:", 0) == 0) {
    const std::string pattern = spec.substr(6);
    if (pattern.empty())
      throw ExternalError(
          "--parser regex: the pattern is empty (regex:PATTERN with named groups "
          "step, loss, lr)");
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

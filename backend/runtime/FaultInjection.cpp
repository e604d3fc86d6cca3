// FaultInjection.cpp — spec parsing, rule matching and the injected failures.
#include "runtime/FaultInjection.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "common/EnumNames.h"
#include "common/Format.h"   // defines: trimBlanks
#include "common/OsError.h"  // defines: pathText

namespace lorascope::runtime {
namespace {

// The spec's spelling of each kind (both directions).
constexpr common::EnumName<FaultKind> kKindNames[] = {
    {FaultKind::OutOfMemory, "oom"},
    {FaultKind::IllegalAddress, "illegal_address"},
    {FaultKind::BlasInternal, "blas"},
    {FaultKind::Hang, "hang"}};
static_assert(common::coversEnum(kKindNames));

FaultKind parseKind(std::string_view text, std::string_view entry) {
  if (const std::optional<FaultKind> kind = common::parseEnum(kKindNames, text)) {
    return *kind;
  }
  throw FaultSpecError(std::string(kFaultEnvVar) + ": unknown fault kind '" + std::string(text) +
                       "' in '" + std::string(entry) +
                       "' (known: " + common::enumNameList(kKindNames) + ")");
}

std::uint64_t parseCount(std::string_view text, std::string_view entry) {
  std::uint64_t value = 0;
  bool any = false;
  for (const char c : text) {
    if (c < '0' || c > '9' || value > (UINT64_MAX - 9) / 10) {
      any = false;
      break;
    }
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
    any = true;
  }
  if (!any || value == 0) {
    throw FaultSpecError(std::string(kFaultEnvVar) + ": '" + std::string(entry) +
                         "' needs a positive whole number, got '" + std::string(text) + "'");
  }
  return value;
}

const char* errorNameOf(FaultKind kind) {
  switch (kind) {
    case FaultKind::OutOfMemory:
      return "hipErrorOutOfMemory";
    case FaultKind::IllegalAddress:
      return "hipErrorIllegalAddress";
    case FaultKind::BlasInternal:
      return "HIPBLAS_STATUS_INTERNAL_ERROR";
    case FaultKind::Hang:
      break;
  }
  return "hang";
}

const char* messageOf(FaultKind kind) {
  switch (kind) {
    case FaultKind::OutOfMemory:
      return "out of memory";
    case FaultKind::IllegalAddress:
      return "an illegal memory access was encountered";
    case FaultKind::BlasInternal:
      return "hipblasLtMatmul returned HIPBLAS_STATUS_INTERNAL_ERROR";
    case FaultKind::Hang:
      break;
  }
  return "the op hung and was released";
}

}  // namespace

const char* faultKindName(FaultKind kind) {
  return common::enumName(kKindNames, kind);
}

std::string toSpec(const FaultRule& rule) {
  return std::string(faultKindName(rule.kind)) + "@" + rule.op + "#" + std::to_string(rule.nth);
}

FaultConfig parseFaultSpec(std::string_view spec) {
  FaultConfig config;
  bool kindsGiven = false;
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view entry = common::trimBlanks(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (entry.empty()) {
      continue;
    }
    if (const std::size_t eq = entry.find('='); eq != std::string_view::npos) {
      const std::string_view key = entry.substr(0, eq);
      const std::string value(entry.substr(eq + 1));
      if (key == "random") {
        char* end = nullptr;
        config.randomRate = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' ||
            !(config.randomRate >= 0.0 && config.randomRate <= 1.0)) {
          throw FaultSpecError(std::string(kFaultEnvVar) + ": random=" + value +
                               " must be a probability between 0 and 1");
        }
      } else if (key == "seed") {
        config.seed = static_cast<std::uint32_t>(parseCount(value.empty() ? "x" : value, entry));
      } else if (key == "random_kinds") {
        config.randomKinds.clear();
        kindsGiven = true;
        std::string_view kinds = entry.substr(eq + 1);
        while (!kinds.empty()) {
          const std::size_t bar = kinds.find('|');
          config.randomKinds.push_back(parseKind(common::trimBlanks(kinds.substr(0, bar)), entry));
          kinds = bar == std::string_view::npos ? std::string_view{} : kinds.substr(bar + 1);
        }
      } else {
        throw FaultSpecError(std::string(kFaultEnvVar) + ": unknown setting '" + std::string(key) +
                             "' (known: random, random_kinds, seed)");
      }
      continue;
    }
    const std::size_t at = entry.find('@');
    const std::size_t hash = entry.find('#');
    if (at == std::string_view::npos || hash == std::string_view::npos || hash < at ||
        hash == at + 1) {
      throw FaultSpecError(std::string(kFaultEnvVar) + ": '" + std::string(entry) +
                           "' is not KIND@OP#N (e.g. oom@matmul#3, hang@step#10)");
    }
    FaultRule rule;
    rule.kind = parseKind(entry.substr(0, at), entry);
    rule.op = std::string(entry.substr(at + 1, hash - at - 1));
    rule.nth = parseCount(entry.substr(hash + 1), entry);
    config.rules.push_back(std::move(rule));
  }
  if (kindsGiven && config.randomKinds.empty()) {
    throw FaultSpecError(std::string(kFaultEnvVar) + ": random_kinds lists no kind");
  }
  return config;
}

FaultConfig faultConfigFromEnvironment() {
  const char* spec = std::getenv(kFaultEnvVar);
  return spec == nullptr ? FaultConfig{} : parseFaultSpec(spec);
}

InjectedFault::InjectedFault(FaultKind kind, std::string op, std::uint64_t count, bool repeat)
    : std::runtime_error(std::string(errorNameOf(kind)) + ": " + messageOf(kind) + " [injected " +
                         faultKindName(kind) + (repeat ? ", sticky repeat" : "") + " at '" + op +
                         "' #" + std::to_string(count) + "]"),
      kind_(kind),
      op_(std::move(op)),
      errorName_(errorNameOf(kind)) {}

FaultInjector::FaultInjector(FaultConfig config) {
  configure(std::move(config));
}

void FaultInjector::configure(FaultConfig config) {
  const std::lock_guard lock(mutex_);
  config_ = std::move(config);
  active_.store(!config_.empty());
  ruleCounts_.assign(config_.rules.size(), 0);
  ruleFired_.assign(config_.rules.size(), false);
  launchCount_ = 0;
  rng_.seed(config_.seed);
  sticky_.reset();
  history_.clear();
}

void FaultInjector::setObserver(std::function<void(const FiredFault&)> observer) {
  const std::lock_guard lock(mutex_);
  observer_ = std::move(observer);
}

std::optional<FaultKind> FaultInjector::decide(std::string_view op, bool atStep,
                                               std::uint64_t stepNumber, std::uint64_t& count,
                                               std::string& ruleText) {
  std::optional<FaultKind> chosen;
  for (std::size_t i = 0; i < config_.rules.size(); ++i) {
    const FaultRule& rule = config_.rules[i];
    const bool stepRule = rule.op == kStepSite;
    if (stepRule != atStep || (!atStep && rule.op != kAnyOp && rule.op != op)) {
      continue;
    }
    const std::uint64_t seen = atStep ? stepNumber : ++ruleCounts_[i];
    if (!chosen && !ruleFired_[i] && seen == rule.nth) {
      ruleFired_[i] = true;
      chosen = rule.kind;
      count = seen;
      ruleText = toSpec(rule);
    }
  }
  if (!atStep) {
    ++launchCount_;
    if (!chosen && config_.randomRate > 0.0 &&
        std::uniform_real_distribution<double>(0.0, 1.0)(rng_) < config_.randomRate) {
      chosen = config_.randomKinds[std::uniform_int_distribution<std::size_t>(
          0, config_.randomKinds.size() - 1)(rng_)];
      count = launchCount_;
    }
  }
  return chosen;
}

void FaultInjector::atLaunch(std::string_view op) {
  if (!active_.load(std::memory_order_relaxed)) {
    return;
  }
  std::unique_lock lock(mutex_);
  if (sticky_) {
    throw InjectedFault(sticky_->kind, std::string(op), sticky_->count, true);
  }
  std::uint64_t count = 0;
  std::string rule;
  if (const auto kind = decide(op, false, 0, count, rule)) {
    fire(FiredFault{*kind, std::string(op), count, std::move(rule)}, lock);
  }
}

void FaultInjector::atStep(std::int64_t step) {
  if (!active_.load(std::memory_order_relaxed) || step < 0) {
    return;
  }
  std::unique_lock lock(mutex_);
  std::uint64_t count = 0;
  std::string rule;
  if (const auto kind = decide(kStepSite, true, static_cast<std::uint64_t>(step), count, rule)) {
    fire(FiredFault{*kind, kStepSite, count, std::move(rule)}, lock);
  }
}

void FaultInjector::fire(FiredFault fault, std::unique_lock<std::mutex>& lock) {
  if (observer_) {
    observer_(fault);
  }
  const FaultKind kind = fault.kind;
  const std::uint64_t count = fault.count;
  std::string op = fault.op;
  history_.push_back(std::move(fault));
  if (kind == FaultKind::IllegalAddress) {
    sticky_ = history_.back();
  }
  if (kind == FaultKind::Hang) {
    ++hangingThreads_;
    const std::uint64_t generation = hangGeneration_;
    hangReleased_.wait(lock, [&] { return hangGeneration_ != generation; });
    --hangingThreads_;
  }
  throw InjectedFault(kind, std::move(op), count, false);
}

void FaultInjector::releaseHangs() {
  {
    const std::lock_guard lock(mutex_);
    ++hangGeneration_;
  }
  hangReleased_.notify_all();
}

std::vector<FiredFault> FaultInjector::history() const {
  const std::lock_guard lock(mutex_);
  return history_;
}

bool FaultInjector::hanging() const {
  const std::lock_guard lock(mutex_);
  return hangingThreads_ > 0;
}

FaultConfig FaultLedger::begin(FaultConfig config) const {
  if (config.empty()) {
    return config;
  }
  std::ifstream in(file_, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  std::uint32_t starts = 0;
  std::size_t begin = 0;
  // Only lines with their newline count: a torn last line is a record that never happened.
  for (std::size_t end; (end = all.find('\n', begin)) != std::string::npos; begin = end + 1) {
    const std::string_view line = std::string_view(all).substr(begin, end - begin);
    if (line == "start") {
      ++starts;
    } else if (line.starts_with("fired ")) {
      const std::string_view fired = line.substr(6);
      const auto it = std::find_if(config.rules.begin(), config.rules.end(),
                                   [&](const FaultRule& rule) { return toSpec(rule) == fired; });
      if (it != config.rules.end()) {
        config.rules.erase(it);  // one ledger line takes out one copy of a repeated rule
      }
    }
  }
  config.seed += starts;
  // After a torn last line, the new record starts on a line of its own.
  append(all.empty() || all.back() == '\n' ? "start" : "\nstart");
  return config;
}

void FaultLedger::record(const FiredFault& fault) const {
  if (!fault.rule.empty()) {
    append("fired " + fault.rule);
  }
}

void FaultLedger::append(const std::string& line) const {
  std::ofstream out(file_, std::ios::binary | std::ios::app);
  out << line + "\n";  // one buffer, written by one flush
  out.flush();
  if (!out) {
    throw std::runtime_error("cannot write the fault ledger " + common::pathText(file_) +
                             ": check that the run directory is writable");
  }
}

}  // namespace lorascope::runtime

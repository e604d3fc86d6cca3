// FaultInjection.h — make the Nth launch of a named op (or the Nth step, or random launches with a
// seed) fail the way a real GPU fails: out of memory, illegal address, a BLAS internal error, or a
// hang. For tests of the recovery path and for users reproducing a report; works in cpu builds.
//
// Spec (env LORASCOPE_FAULTS, or parseFaultSpec), comma-separated:
//   KIND@OP#N     KIND in oom, illegal_address, blas, hang; OP an op name, * for any op, or
//                 step for the step boundary (N is then the step number); N counts from 1
//   random=P      each launch fails with probability P (0..1), drawing KINDs from random_kinds
//   random_kinds=KIND|KIND   default oom|illegal_address|blas
//   seed=S        seed of the random draws (default 1), so a run is reproducible
// Example: LORASCOPE_FAULTS="blas@matmul#3,hang@step#10,random=0.001,seed=7"
//
// Each rule fires once per process; the engine makes that once per run with a FaultLedger in the
// run directory, so "oom@step#120" means step 120 of the run however often the engine restarts.
// After an injected illegal address every later launch throws it again, as the real sticky error
// would.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lorascope::runtime {

enum class FaultKind : std::uint8_t { OutOfMemory, IllegalAddress, BlasInternal, Hang };
const char* faultKindName(FaultKind kind);  // the spec's spelling: "oom", "illegal_address", ...

inline constexpr const char* kFaultEnvVar = "LORASCOPE_FAULTS";
inline constexpr const char* kAnyOp = "*";
inline constexpr const char* kStepSite = "step";

struct FaultRule {
  FaultKind kind = FaultKind::OutOfMemory;
  std::string op = kAnyOp;  // op name, "*" or "step"
  std::uint64_t nth = 1;    // the Nth matching launch, or step number N
};
// The rule as a spec spells it ("oom@step#12"); the ledger's and the reports' name for it.
std::string toSpec(const FaultRule& rule);

struct FaultConfig {
  std::vector<FaultRule> rules;
  double randomRate = 0.0;  // probability per launch
  std::vector<FaultKind> randomKinds{FaultKind::OutOfMemory, FaultKind::IllegalAddress,
                                     FaultKind::BlasInternal};
  std::uint32_t seed = 1;
  bool empty() const { return rules.empty() && randomRate == 0.0; }
};

// A malformed spec; the message quotes the bad entry and lists what is accepted.
class FaultSpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

FaultConfig parseFaultSpec(std::string_view spec);
// The spec in LORASCOPE_FAULTS, or an empty config when it is unset or blank.
FaultConfig faultConfigFromEnvironment();

// An injected failure. errorName() and what() carry the real runtime's name and text (plus
// "[injected ...]"), so classifyError() treats it exactly like the real error.
class InjectedFault : public std::runtime_error {
 public:
  InjectedFault(FaultKind kind, std::string op, std::uint64_t count, bool repeat);
  FaultKind kind() const { return kind_; }
  const std::string& op() const { return op_; }
  const std::string& errorName() const { return errorName_; }

 private:
  FaultKind kind_;
  std::string op_;
  std::string errorName_;
};

struct FiredFault {
  FaultKind kind;
  std::string op;
  std::uint64_t count;  // which launch of the op (or which step)
  std::string rule;     // toSpec() of the rule that fired; "" for a random draw
};

class FaultInjector {
 public:
  explicit FaultInjector(FaultConfig config = {});

  // Replaces the rules and clears counters, history and a sticky fault.
  void configure(FaultConfig config);
  // Told of every fault before it takes effect (before the throw, before a hang blocks), on the
  // thread that hit it and under the injector's lock: it must not call back into the injector.
  void setObserver(std::function<void(const FiredFault&)> observer);
  // Called before every launch of `op`: throws InjectedFault, or blocks for an injected hang
  // until releaseHangs(). Does nothing (one relaxed check) when no fault is configured.
  void atLaunch(std::string_view op);
  // Called at the step boundary with the step about to run.
  void atStep(std::int64_t step);
  // Wakes threads blocked in an injected hang; they throw InjectedFault(Hang) (tests, shutdown).
  void releaseHangs();

  std::vector<FiredFault> history() const;
  bool hanging() const;  // a thread is blocked in an injected hang now

 private:
  std::optional<FaultKind> decide(std::string_view op, bool atStep, std::uint64_t stepNumber,
                                  std::uint64_t& count, std::string& ruleText);
  void fire(FiredFault fault, std::unique_lock<std::mutex>& lock);

  mutable std::mutex mutex_;
  std::condition_variable hangReleased_;
  FaultConfig config_;
  std::atomic<bool> active_{false};  // read without the lock on every launch
  std::vector<std::uint64_t> ruleCounts_;
  std::vector<bool> ruleFired_;
  std::uint64_t launchCount_ = 0;
  std::mt19937 rng_;
  std::optional<FiredFault> sticky_;
  std::vector<FiredFault> history_;
  std::function<void(const FiredFault&)> observer_;
  int hangingThreads_ = 0;
  std::uint64_t hangGeneration_ = 0;
};

// Makes the rules fire once per run instead of once per process. The engine keeps the ledger in
// the run directory: every engine start appends "start", every rule that fires appends
// "fired RULE" before it takes effect — in one write, so a SIGKILL leaves whole lines and at most
// a torn last line without its newline, which is ignored. A restarted engine leaves out the rules
// that fired (a sticky fault at step N would otherwise kill every engine that redoes step N) and
// draws random faults from seed + the number of earlier starts (the same seed would replay the
// previous engine's draws), so a faulted run stays reproducible from its spec alone.
class FaultLedger {
 public:
  explicit FaultLedger(std::filesystem::path file) : file_(std::move(file)) {}

  // Records this engine's start and returns the config it runs with. An empty config is
  // returned as it is and leaves no file. Throws std::runtime_error naming the file when it
  // cannot be read or written.
  FaultConfig begin(FaultConfig config) const;
  // Appends a fired rule (random draws are not replayed by design and are not recorded).
  void record(const FiredFault& fault) const;

 private:
  void append(const std::string& line) const;

  std::filesystem::path file_;
};

}  // namespace lorascope::runtime

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
// Each rule fires once per process (the supervisor's restarted engine gets a new spec). After an
// injected illegal address every later launch throws it again, as the real sticky error would.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
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
};

class FaultInjector {
 public:
  explicit FaultInjector(FaultConfig config = {});

  // Replaces the rules and clears counters, history and a sticky fault.
  void configure(FaultConfig config);
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
                                  std::uint64_t& count);
  void fire(FaultKind kind, std::string_view op, std::uint64_t count,
            std::unique_lock<std::mutex>& lock);

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
  int hangingThreads_ = 0;
  std::uint64_t hangGeneration_ = 0;
};

}  // namespace lorascope::runtime

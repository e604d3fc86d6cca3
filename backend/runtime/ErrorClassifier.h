// ErrorClassifier.h — turns a GPU/BLAS error (its name, its message, the op) into what to do:
// a category, whether the process can go on, advice, and the rung of the recovery ladder.
//
// The ladder (DESIGN.md): vendor BLAS -> built-in GEMM -> serialize -> smaller micro-batch -> CPU.
// Names of both vendors are known (hipError*, cudaError*, HIPBLAS_STATUS_*, CUBLAS_STATUS_*,
// rocblas_status_*), so the same table serves AMD, NVIDIA and injected faults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "settings/Ladder.h"  // defines: Rung, rungName

namespace lorascope::runtime {

enum class ErrorCategory : std::uint8_t {
  OutOfMemory,           // device or BLAS workspace allocation failed
  IllegalAddress,        // a kernel touched memory it does not own (memory access fault)
  LaunchFailure,         // a kernel died or timed out (driver watchdog / TDR)
  BlasFailure,           // vendor BLAS internal or execution failure
  CommandBufferFailure,  // the driver could not submit work (PAL command buffers on Windows)
  Hang,                  // our watchdog: nothing completed for too long
  NoDevice,              // no GPU or driver
  InvalidUsage,          // a bad argument: a bug of ours, not the device's
  Killed,                // ended by a signal from outside (OOM killer, a user's kill): not the GPU
  HostCrash,             // crashed outside GPU code (preparing the run: data, chat templates)
  Unknown,
};

// The recovery ladder is the settings registry's (settings/Ladder.h): the rungs, their names, and
// (Setting::ladder) what each rung sets.
using RecoveryRung = settings::Rung;
using settings::rungName;  // "vendor_blas", "builtin_gemm", ...

struct ErrorClass {
  ErrorCategory category = ErrorCategory::Unknown;
  bool sticky = true;               // the GPU context is unusable until the process restarts
  bool processCanContinue = false;  // recover in place (free cache, switch GEMM) without restart
  RecoveryRung rung = RecoveryRung::Serialize;  // the lowest rung that addresses the cause
  std::string signature;  // the text that matched, for the incident log ("" when none did)
  std::string advice;     // what to try, for people
};

const char* categoryName(ErrorCategory category);  // "out_of_memory", "illegal_address", ...

// `errorName`: hipGetErrorName / BLAS status name; `message`: the runtime's text or a log line;
// `op`: the op that raised it, when known (a GEMM's illegal address points at the BLAS).
// `errorName` "hang" is the engine watchdog's report: classifyHang().
ErrorClass classifyError(std::string_view errorName, std::string_view message,
                         std::string_view op = {});
// What the watchdog reports.
ErrorClass classifyHang();

// Host memory when the engine was last heard from (its memory reading) and the host's total.
struct HostMemory {
  std::uint64_t availableBytes = 0;
  std::uint64_t totalBytes = 0;
};
// Who was killed: LoRAscope's engine (it resumes from its last completed step), or a command
// under `lorascope-train supervise` (it resumes from its own checkpoints, if any).
enum class KilledProcess { Engine, Command };
// A process killed by `signal` ("SIGKILL", "SIGTERM", ...): a Killed class for the signals other
// processes send (KILL, TERM, INT, HUP, QUIT), whose advice names the likely sender — the kernel's
// out-of-memory killer for a SIGKILL while host memory was nearly full (under 5% or 512 MiB
// available), either that or a kill from outside with no reading — and which does not step down
// the ladder; nullopt for the signals a process raises on itself (SEGV, ABRT, BUS, ILL, FPE...),
// which the runtime's messages classify.
std::optional<ErrorClass> classifyKill(std::string_view signal,
                                       const std::optional<HostMemory>& hostMemory,
                                       KilledProcess who = KilledProcess::Engine);

// An engine that crashed with `signal` ("SIGSEGV", "SIGABRT") while it prepared the run (opening
// the model, reading and tokenizing the data, rendering chat templates: before its first GPU
// step), with no GPU error reported: a HostCrash, which says so and does not step down the
// ladder (no GPU setting addresses it).
ErrorClass classifyHostCrash(std::string_view signal);

// The rung to restart on after `error` at rung `current`: at least one rung up (out-of-memory may
// stay on smaller micro-batch, which steps down again; a kill from outside or a crash outside GPU
// code stays where it is), at least the error's own rung; nullopt when the ladder is exhausted.
std::optional<RecoveryRung> nextRung(RecoveryRung current, const ErrorClass& error);

}  // namespace lorascope::runtime

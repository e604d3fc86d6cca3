// ErrorClassifier.cpp — the signature table. Order matters: the first row whose text occurs
// (case-insensitively) in the error name or message wins, so specific rows come first.
#include "runtime/ErrorClassifier.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace lorascope::runtime {
namespace {

struct Signature {
  const char* text;
  ErrorCategory category;
};

constexpr std::array kSignatures{
    // Out of memory, from the runtime or a BLAS workspace.
    Signature{"HIPBLAS_STATUS_ALLOC_FAILED", ErrorCategory::OutOfMemory},
    Signature{"CUBLAS_STATUS_ALLOC_FAILED", ErrorCategory::OutOfMemory},
    Signature{"rocblas_status_memory_error", ErrorCategory::OutOfMemory},
    Signature{"hipErrorOutOfMemory", ErrorCategory::OutOfMemory},
    Signature{"cudaErrorMemoryAllocation", ErrorCategory::OutOfMemory},
    Signature{"out of memory", ErrorCategory::OutOfMemory},
    // Windows' PAL runtime (field note: "Failed PAL memory allocation!", "Video memory
    // allocation failed!").
    Signature{"Failed PAL memory allocation", ErrorCategory::OutOfMemory},
    Signature{"Video memory allocation failed", ErrorCategory::OutOfMemory},
    // Memory faults.
    Signature{"hipErrorIllegalAddress", ErrorCategory::IllegalAddress},
    Signature{"cudaErrorIllegalAddress", ErrorCategory::IllegalAddress},
    Signature{"illegal memory access", ErrorCategory::IllegalAddress},
    Signature{"Memory access fault by GPU", ErrorCategory::IllegalAddress},
    Signature{"illegal address", ErrorCategory::IllegalAddress},
    // Driver submission failures (Windows PAL: "PAL failed to finalize a command buffer (-28)").
    Signature{"failed to finalize a command buffer", ErrorCategory::CommandBufferFailure},
    Signature{"command buffer", ErrorCategory::CommandBufferFailure},
    // Vendor BLAS.
    Signature{"HIPBLAS_STATUS_INTERNAL_ERROR", ErrorCategory::BlasFailure},
    Signature{"HIPBLAS_STATUS_EXECUTION_FAILED", ErrorCategory::BlasFailure},
    Signature{"CUBLAS_STATUS_INTERNAL_ERROR", ErrorCategory::BlasFailure},
    Signature{"CUBLAS_STATUS_EXECUTION_FAILED", ErrorCategory::BlasFailure},
    Signature{"rocblas_status_internal_error", ErrorCategory::BlasFailure},
    // hipBLASLt's failures name its call or itself as the source; the bare word also appears in
    // lines that only echo a setting (TORCH_BLAS_PREFER_HIPBLASLT=0) or in PyTorch's warning that
    // it falls back from hipBLASLt to hipBLAS, which are not failures.
    Signature{"hipblasLtMatmul", ErrorCategory::BlasFailure},
    Signature{"hipBLASLt error", ErrorCategory::BlasFailure},
    // Kernel failures and timeouts.
    Signature{"hipErrorLaunchFailure", ErrorCategory::LaunchFailure},
    Signature{"cudaErrorLaunchFailure", ErrorCategory::LaunchFailure},
    Signature{"unspecified launch failure", ErrorCategory::LaunchFailure},
    Signature{"hipErrorLaunchTimeOut", ErrorCategory::LaunchFailure},
    Signature{"cudaErrorLaunchTimeout", ErrorCategory::LaunchFailure},
    Signature{"the launch timed out", ErrorCategory::LaunchFailure},
    Signature{"hipErrorAssert", ErrorCategory::LaunchFailure},
    Signature{"cudaErrorAssert", ErrorCategory::LaunchFailure},
    // No device.
    Signature{"hipErrorNoDevice", ErrorCategory::NoDevice},
    Signature{"cudaErrorNoDevice", ErrorCategory::NoDevice},
    Signature{"hipErrorInsufficientDriver", ErrorCategory::NoDevice},
    Signature{"cudaErrorInsufficientDriver", ErrorCategory::NoDevice},
    Signature{"no GPU", ErrorCategory::NoDevice},
    // PyTorch asked for a device index past the GPUs it sees (field note: "device >= 0 && device <
    // num_gpus INTERNAL ASSERT FAILED"): the visible-devices variables name a GPU that is not
    // there.
    Signature{"< num_gpus INTERNAL ASSERT", ErrorCategory::NoDevice},
    // Bugs of ours.
    Signature{"hipErrorInvalidValue", ErrorCategory::InvalidUsage},
    Signature{"cudaErrorInvalidValue", ErrorCategory::InvalidUsage},
    Signature{"hipErrorInvalidConfiguration", ErrorCategory::InvalidUsage},
    Signature{"cudaErrorInvalidConfiguration", ErrorCategory::InvalidUsage},
    Signature{"HIPBLAS_STATUS_INVALID_VALUE", ErrorCategory::InvalidUsage},
    Signature{"CUBLAS_STATUS_INVALID_VALUE", ErrorCategory::InvalidUsage},
};

bool containsIgnoringCase(std::string_view haystack, std::string_view needle) {
  const auto it = std::search(haystack.begin(), haystack.end(), needle.begin(), needle.end(),
                              [](char a, char b) {
                                return std::tolower(static_cast<unsigned char>(a)) ==
                                       std::tolower(static_cast<unsigned char>(b));
                              });
  return it != haystack.end();
}

bool isGemmOp(std::string_view op) {
  return containsIgnoringCase(op, "gemm") || containsIgnoringCase(op, "matmul") ||
         containsIgnoringCase(op, "blas");
}

ErrorClass describe(ErrorCategory category, std::string_view op) {
  ErrorClass c;
  c.category = category;
  switch (category) {
    case ErrorCategory::OutOfMemory:
      c = {category,
           false,
           true,
           RecoveryRung::SmallerMicroBatch,
           "",
           "Out of GPU memory: the engine frees its cache and retries, then halves the "
           "micro-batch (more gradient accumulation keeps the effective batch). Activation "
           "checkpointing, arena mode or max_split_size lower the peak further."};
      break;
    case ErrorCategory::IllegalAddress:
      c = {category,
           true,
           false,
           isGemmOp(op) ? RecoveryRung::BuiltinGemm : RecoveryRung::Serialize,
           "",
           "A kernel accessed memory it does not own; the GPU context is lost and the engine "
           "restarts. With serialize and blocking launches the error is pinned to the op that "
           "caused it; inside a vendor GEMM, the built-in GEMM avoids it."};
      break;
    case ErrorCategory::LaunchFailure:
      c = {category,
           true,
           false,
           RecoveryRung::Serialize,
           "",
           "A kernel failed or ran past the driver's timeout; the GPU context is lost and the "
           "engine restarts. Serialized launches and smaller micro-batches keep every kernel short "
           "(on Windows, the display driver resets kernels that run longer than about 2 s)."};
      break;
    case ErrorCategory::BlasFailure:
      c = {
          category,
          false,
          true,
          RecoveryRung::BuiltinGemm,
          "",
          "The vendor BLAS (hipBLASLt/rocBLAS or cuBLAS) failed internally; switch to the built-in "
          "GEMM, which needs nothing but the HIP runtime. Known on ROCm for some shapes and "
          "long runs (HIPBLAS_STATUS_INTERNAL_ERROR)."};
      break;
    case ErrorCategory::CommandBufferFailure:
      c = {category,
           true,
           false,
           RecoveryRung::Serialize,
           "",
           "The driver could not submit a command buffer; the device is in an unknown state and "
           "the engine restarts. Serialize kernels, lower GPU_MAX_HW_QUEUES (the HIP runtime's "
           "default is 4), use smaller micro-batches, and update the GPU driver."};
      break;
    case ErrorCategory::Hang:
      c = {category,
           true,
           false,
           RecoveryRung::Serialize,
           "",
           "The run made no progress within the hang limit; the engine is restarted. "
           "Serialized, blocking launches show which op hangs; smaller micro-batches shorten "
           "kernels."};
      break;
    case ErrorCategory::NoDevice:
      c = {category,
           false,
           true,
           RecoveryRung::Cpu,
           "",
           "No usable GPU or driver: training continues on the CPU. Check the driver, that the "
           "user may access the device (render/video groups on Linux) and that "
           "HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES or CUDA_VISIBLE_DEVICES name GPUs that are "
           "there."};
      break;
    case ErrorCategory::InvalidUsage:
      c = {category,
           false,
           false,
           RecoveryRung::Serialize,
           "",
           "The GPU runtime rejected an argument: a bug in LoRAscope. Please report it with the "
           "log; the engine restarts with serialized launches to pin it down."};
      break;
    case ErrorCategory::Killed:
      c = {category,
           false,
           false,
           RecoveryRung::VendorBlas,
           "",
           "Not a GPU error: the engine was ended from outside. It restarts on the same rung and "
           "resumes from the last completed step."};
      break;
    case ErrorCategory::HostCrash:
      c = {category,
           false,
           false,
           RecoveryRung::VendorBlas,
           "",
           "Not a GPU error: the engine crashed while preparing the run (reading the model and the "
           "data, rendering the chat template), before its first GPU step. It restarts on the same "
           "rung; a crash that repeats comes from the run's files or is a bug in LoRAscope "
           "(`lorascope-train validate-data` checks the data and its template; please report it "
           "with the log)."};
      break;
    case ErrorCategory::Unknown:
      c = {category,
           true,
           false,
           RecoveryRung::Serialize,
           "",
           "An unrecognised GPU error; assuming the context is lost, the engine restarts one rung "
           "further down the recovery ladder."};
      break;
  }
  return c;
}

}  // namespace

const char* categoryName(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::OutOfMemory:
      return "out_of_memory";
    case ErrorCategory::IllegalAddress:
      return "illegal_address";
    case ErrorCategory::LaunchFailure:
      return "launch_failure";
    case ErrorCategory::BlasFailure:
      return "blas_failure";
    case ErrorCategory::CommandBufferFailure:
      return "command_buffer_failure";
    case ErrorCategory::Hang:
      return "hang";
    case ErrorCategory::NoDevice:
      return "no_device";
    case ErrorCategory::InvalidUsage:
      return "invalid_usage";
    case ErrorCategory::Killed:
      return "killed";
    case ErrorCategory::HostCrash:
      return "host_crash";
    case ErrorCategory::Unknown:
      break;
  }
  return "unknown";
}

ErrorClass classifyError(std::string_view errorName, std::string_view message,
                         std::string_view op) {
  // The engine's watchdog reports its hangs under the category name "hang" (the word alone is too
  // common in messages to be a signature).
  if (errorName == "hang") {
    return classifyHang();
  }
  for (const Signature& signature : kSignatures) {
    if (containsIgnoringCase(errorName, signature.text) ||
        containsIgnoringCase(message, signature.text)) {
      ErrorClass c = describe(signature.category, op);
      c.signature = signature.text;
      return c;
    }
  }
  return describe(ErrorCategory::Unknown, op);
}

ErrorClass classifyHang() {
  ErrorClass c = describe(ErrorCategory::Hang, {});
  c.signature = "watchdog";
  return c;
}

std::optional<ErrorClass> classifyKill(std::string_view signal,
                                       const std::optional<HostMemory>& hostMemory,
                                       KilledProcess who) {
  constexpr std::array kFromOutside{"SIGKILL", "SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"};
  if (std::find(kFromOutside.begin(), kFromOutside.end(), signal) == kFromOutside.end()) {
    return std::nullopt;
  }
  ErrorClass c = describe(ErrorCategory::Killed, {});
  c.signature = signal;
  const std::string process = who == KilledProcess::Engine ? "the engine" : "the command";
  if (who == KilledProcess::Command) {
    c.advice = "Not a GPU error: the command was ended from outside. It restarts on the same rung.";
  }
  constexpr std::uint64_t kMiB = 1024 * 1024;
  constexpr std::uint64_t kNearlyFullBytes = 512 * kMiB;  // the OOM killer acts near zero
  std::string memory;
  bool nearlyFull = false;
  if (hostMemory && hostMemory->totalBytes > 0) {
    const std::uint64_t available = hostMemory->availableBytes;
    const double usedPercent = 100.0 * (1.0 - static_cast<double>(available) /
                                                  static_cast<double>(hostMemory->totalBytes));
    nearlyFull = available < kNearlyFullBytes || available * 20 < hostMemory->totalBytes;
    memory = "host memory was " + std::to_string(static_cast<int>(usedPercent + 0.5)) + "% used (" +
             std::to_string(available / kMiB) + " MiB available) at the last reading";
  }
  if (signal != "SIGKILL") {
    c.advice = std::string(signal) +
               " asks a process to end: someone or something (a user, a logout, a shutdown, a "
               "service manager) stopped " +
               process + ". " + c.advice;
  } else if (nearlyFull) {
    c.advice = "Most likely the kernel's out-of-memory killer: " + memory +
               (who == KilledProcess::Engine
                    ? ". Close other programs, or lower max_seq_len or the micro-batch (the CPU "
                      "run's activations live in host memory)"
                    : ". Close other programs, or lower the command's batch, sequence length or "
                      "data loader workers") +
               "; `journalctl -k | grep -i oom` confirms it. " + c.advice;
  } else if (memory.empty()) {  // no reading: either sender
    c.advice = "SIGKILL from outside " + process +
               ": the kernel's out-of-memory killer when host memory ran out (`journalctl -k | "
               "grep -i oom` says so), else kill -9, a task manager or a container's limit. " +
               c.advice;
  } else {
    c.advice = "SIGKILL from outside " + process +
               " (kill -9, a task manager, a container's limit); " + memory +
               ", so not the out-of-memory killer. " + c.advice;
  }
  return c;
}

ErrorClass classifyHostCrash(std::string_view signal) {
  ErrorClass c = describe(ErrorCategory::HostCrash, {});
  c.signature = signal;
  return c;
}

std::optional<RecoveryRung> nextRung(RecoveryRung current, const ErrorClass& error) {
  if (error.category == ErrorCategory::Killed || error.category == ErrorCategory::HostCrash) {
    return current;  // nothing was wrong with the device or the settings
  }
  const int now = static_cast<int>(current);
  const int floor = static_cast<int>(error.rung);
  const int step = error.category == ErrorCategory::OutOfMemory ? now : now + 1;
  const int next = std::max(step, floor);
  if (next > static_cast<int>(RecoveryRung::Cpu)) {
    return std::nullopt;
  }
  return static_cast<RecoveryRung>(next);
}

}  // namespace lorascope::runtime

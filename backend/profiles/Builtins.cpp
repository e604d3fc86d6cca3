// profiles/Builtins.cpp — the built-in profiles as profile JSON, each with its rationale.
#include "profiles/Builtins.h"

#include <array>
#include <string_view>

#include "profiles/ProfileJson.h"

namespace lorascope::profiles {
namespace {

constexpr std::array<std::string_view, 7> kBuiltinJson = {
    R"({"name": "Balanced", "description": "Default: vendor BLAS, asynchronous launches, caching allocator",
  "rationale": "Full speed with nothing switched off. Start here; LoRAscope watches for the errors that call for another profile and says which.",
  "toggles": {"serialize": false, "blocking": false, "cpu_fallback": false, "gemm": "vendor"},
  "allocator": {"mode": "caching"}, "ladder_rung": "none"})",
    R"({"name": "ROCm stable", "description": "Fine-grained PCIe memory, 2 hardware queues, max split 512 MB",
  "rationale": "For consumer Radeon cards that hang or report 'PAL failed to finalize a command buffer' under load: fewer hardware queues (GPU_MAX_HW_QUEUES=2, half the HIP runtime's default of 4) reduce queue oversubscription, HSA_FORCE_FINE_GRAIN_PCIE=1 avoids coarse-grained host memory over PCIe (ROCr's variable, on Linux), and capping splits at 512 MB keeps big blocks whole so variable-length batches fragment less. Changing these variables restarts the engine.",
  "environment": {"HSA_FORCE_FINE_GRAIN_PCIE": "1", "GPU_MAX_HW_QUEUES": "2"},
  "allocator": {"mode": "caching", "max_split_size_mb": 512}, "ladder_rung": "none"})",
    R"({"name": "Debug: serialize + blocking", "description": "Every kernel waits for the one before; errors point at the op that failed",
  "rationale": "For HIPBLAS_STATUS_INTERNAL_ERROR, illegal memory accesses and hangs in backward: AMD_SERIALIZE_KERNEL=3 makes the HIP runtime wait before and after each kernel and HIP_LAUNCH_BLOCKING=1 makes launches synchronous, so the failing op is the one reported. LoRAscope's own serialize and blocking toggles do the same without a restart. Several times slower: use it to find the culprit, then switch back.",
  "environment": {"AMD_SERIALIZE_KERNEL": "3", "HIP_LAUNCH_BLOCKING": "1"},
  "toggles": {"serialize": true, "blocking": true}, "ladder_rung": "serialize"})",
    R"({"name": "Low VRAM", "description": "Micro-batch 1, activation checkpointing, planned arena",
  "rationale": "For 'out of memory' on cards with 8-12 GB or when another program holds VRAM: micro-batch 1 with gradient accumulation keeps the effective batch, activation checkpointing recomputes instead of storing, and the planned arena sizes activations once so steady state allocates nothing and cannot fragment.",
  "toggles": {"micro_batch": 1, "activation_checkpointing": true},
  "allocator": {"mode": "arena"}, "ladder_rung": "smaller_batch"})",
    R"({"name": "Windows safe", "description": "Serialized kernels and micro-batch 1, clear of the driver timeout",
  "rationale": "For backward passes that hang or reset the driver on Windows: the display driver resets the GPU when one submission runs longer than its timeout (TDR, about 2 s). Serializing and a micro-batch of 1 keep each kernel short.",
  "toggles": {"serialize": true, "micro_batch": 1}, "ladder_rung": "serialize"})",
    R"({"name": "Built-in GEMM", "description": "LoRAscope's own HIP GEMM instead of hipBLAS/hipBLASLt",
  "rationale": "For HIPBLAS_STATUS_INTERNAL_ERROR and crashes inside hipBLASLt on shapes or cards it does not support: the built-in tiled GEMM needs nothing but the HIP runtime. Slower than vendor BLAS on large matrices, but it keeps the run going.",
  "toggles": {"gemm": "builtin"}, "ladder_rung": "builtin_gemm"})",
    R"({"name": "CPU only", "description": "Train on the CPU; the GPU is left alone",
  "rationale": "The last rung of the ladder, and for checking results: the fp32 CPU trainer is the reference every GPU kernel is tested against. Much slower, never crashes the GPU driver. The run continues from the same step, with the same weights and optimizer state.",
  "toggles": {"cpu_fallback": true}, "ladder_rung": "cpu"})",
};

}  // namespace

const std::vector<Profile>& builtinProfiles() {
  static const std::vector<Profile> profiles = [] {
    std::vector<Profile> out;
    for (std::string_view text : kBuiltinJson) {
      Profile p = parseProfile(text, "built-in profile").profile;
      p.builtin = true;
      out.push_back(std::move(p));
    }
    return out;
  }();
  return profiles;
}

const Profile& defaultProfile() {
  return builtinProfiles().front();
}

}  // namespace lorascope::profiles

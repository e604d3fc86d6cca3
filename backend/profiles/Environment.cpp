// profiles/Environment.cpp — the allow-list, the folklore table and allocator-conf mapping.
#include "profiles/Environment.h"

#include <algorithm>
#include <array>
#include <set>
#include <stdexcept>

#include "memory/AllocatorPolicy.h"
#include "settings/WatchdogSpec.h"  // defines: kWatchdogEnvVar, parseWatchdogSpec

namespace lorascope::profiles {
namespace {

// Every variable a profile may set, by name: the GPU runtimes' and libraries' documented tuning
// and debugging switches. Anything else is refused with the reason, so that a profile cannot
// smuggle in a library (HSA_TOOLS_LIB, CUDA_INJECTION64_PATH work like LD_PRELOAD) or change how
// programs are found.
constexpr std::array<std::string_view, 47> kAllowedVariables = {
    // Device selection
    "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "CUDA_VISIBLE_DEVICES",
    "CUDA_DEVICE_ORDER",
    // Serialising and blocking (debugging hangs and faults)
    "HIP_LAUNCH_BLOCKING", "AMD_SERIALIZE_KERNEL", "AMD_SERIALIZE_COPY", "CUDA_LAUNCH_BLOCKING",
    // Logging
    "AMD_LOG_LEVEL", "AMD_LOG_MASK", "ROCBLAS_LAYER", "HIPBLASLT_LOG_LEVEL", "HIPBLASLT_LOG_MASK",
    "MIOPEN_LOG_LEVEL", "CUBLAS_LOGINFO_DBG", "CUBLASLT_LOG_LEVEL",
    // HIP runtime (ROCclr) and ROCr/HSA behaviour
    "HIP_FORCE_DEV_KERNARG", "GPU_MAX_HW_QUEUES", "GPU_MAX_HEAP_SIZE", "GPU_MAX_ALLOC_PERCENT",
    "GPU_SINGLE_ALLOC_PERCENT", "HSA_OVERRIDE_GFX_VERSION", "HSA_ENABLE_SDMA",
    "HSA_AMD_SDMA_ENABLE", "HSA_FORCE_FINE_GRAIN_PCIE", "HSA_ENABLE_INTERRUPT", "HSA_XNACK",
    "HSA_NO_SCRATCH_RECLAIM", "HSA_ENABLE_SCRATCH_ASYNC_RECLAIM", "HSA_CU_MASK",
    // Math libraries
    "ROCBLAS_DEFAULT_ATOMICS_MODE", "ROCBLAS_CHECK_NUMERICS", "HIPBLASLT_ALLOW_TF32",
    "MIOPEN_FIND_MODE", "CUBLAS_WORKSPACE_CONFIG",
    // CUDA runtime
    "CUDA_MODULE_LOADING", "CUDA_DEVICE_MAX_CONNECTIONS", "CUDA_CACHE_DISABLE",
    "CUDA_CACHE_MAXSIZE", "CUDA_AUTO_BOOST", "CUDA_FORCE_PTX_JIT", "CUDA_DISABLE_PTX_JIT",
    // LoRAscope's engine: the hang watchdog's budgets (settings/WatchdogSpec.h)
    settings::kWatchdogEnvVar,
    // Folklore (read by nothing; allowed so that the profile loads with a note saying so)
    "HIP_SERIALIZE_KERNEL", "HIP_DISABLE_IPC", "HIP_SERIALIZE_COPY"};

// Variables that load code into the process: named in the refusal so that it says why.
constexpr std::array<std::string_view, 7> kInjectionVariables = {
    "HSA_TOOLS_LIB", "CUDA_INJECTION64_PATH", "CUDA_INJECTION32_PATH",
    "ROCP_TOOL_LIB", "HIP_TRACE_API_LIB",     "LD_PRELOAD",
    "LD_AUDIT"};

// One "NAME=value" entry of the environment may not exceed this on Linux (MAX_ARG_STRLEN, 32
// pages): execve fails with E2BIG, and the engine would not start.
constexpr std::size_t kMaxEnvironmentEntryBytes = 128 * 1024;

struct Folklore {
  std::string_view name;
  std::string_view advice;
};

// Variables passed around in forum answers that the HIP runtime (ROCclr) never reads.
constexpr std::array<Folklore, 3> kFolklore = {{
    {"HIP_SERIALIZE_KERNEL",
     "the HIP runtime does not read HIP_SERIALIZE_KERNEL; use AMD_SERIALIZE_KERNEL=3 (wait before "
     "and after every kernel) or LoRAscope's live Serialize toggle"},
    {"HIP_DISABLE_IPC",
     "the HIP runtime does not read HIP_DISABLE_IPC; where DataLoader worker processes fail on "
     "Windows, set the trainer's num_workers to 0 instead"},
    {"HIP_SERIALIZE_COPY",
     "the HIP runtime does not read HIP_SERIALIZE_COPY; use AMD_SERIALIZE_COPY=3"},
}};

// The keys of PYTORCH_*_ALLOC_CONF that memory::parseAllocatorConf implements (arena_mb sizes the
// arena, which the engine plans itself, so profiles do not carry it).
const std::set<std::string> kImplementedAllocatorKeys = {
    "max_split_size_mb", "garbage_collection_threshold", "roundup_power2_divisions", "mode"};

}  // namespace

std::string whyVariableIsForbidden(std::string_view name) {
  if (name.empty()) {
    return "an empty variable name";
  }
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) {
      return "variable names are upper-case letters, digits and '_'";
    }
  }
  if (isAllocatorConfVariable(name)) {
    return "";
  }
  if (std::find(kInjectionVariables.begin(), kInjectionVariables.end(), name) !=
      kInjectionVariables.end()) {
    return std::string(name) +
           " loads a library into the process (like LD_PRELOAD); a profile may not set it";
  }
  if (std::find(kAllowedVariables.begin(), kAllowedVariables.end(), name) !=
      kAllowedVariables.end()) {
    return "";
  }
  std::string list;
  for (std::string_view allowed : kAllowedVariables) {
    list += (list.empty() ? "" : ", ") + std::string(allowed);
  }
  return std::string(name) +
         " is not on LoRAscope's list of GPU runtime variables a profile may set: " + list +
         ", PYTORCH_HIP_ALLOC_CONF and PYTORCH_CUDA_ALLOC_CONF";
}

std::string whyValueIsForbidden(std::string_view name, std::string_view value) {
  if (name.size() + 1 + value.size() + 1 > kMaxEnvironmentEntryBytes) {
    return std::to_string(value.size()) +
           " bytes: longer than the operating system allows one environment variable (128 KiB "
           "with its name)";
  }
  if (name == settings::kWatchdogEnvVar) {  // the engine would refuse to start with it
    try {
      settings::parseWatchdogSpec(std::string(value));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
  }
  return "";
}

std::optional<std::string> folkloreAdvice(std::string_view name) {
  for (const Folklore& f : kFolklore) {
    if (f.name == name) {
      return std::string(f.advice);
    }
  }
  return std::nullopt;
}

bool isAllocatorConfVariable(std::string_view name) {
  return name == "PYTORCH_HIP_ALLOC_CONF" || name == "PYTORCH_CUDA_ALLOC_CONF";
}

AllocatorSettings parseAllocConf(std::string_view conf, const std::string& where,
                                 std::vector<ProfileNote>& notes) {
  // Keys our allocator implements go to memory::parseAllocatorConf (one parser for the syntax
  // and the value rules); the rest of PyTorch's keys are noted and left out.
  std::string supported;
  std::set<std::string> present;
  std::size_t start = 0;
  while (start <= conf.size()) {
    const std::size_t comma = std::min(conf.find(',', start), conf.size());
    const std::string item(conf.substr(start, comma - start));
    start = comma + 1;
    if (item.empty())
      continue;
    const std::string key = item.substr(0, item.find(':'));
    if (kImplementedAllocatorKeys.count(key) == 0) {
      notes.push_back({where + "." + key, key + " is a PyTorch allocator setting LoRAscope's "
                                                "allocator does not implement; it is ignored"});
      continue;
    }
    present.insert(key);
    supported += (supported.empty() ? "" : ",") + item;
  }
  memory::AllocatorPolicy policy;
  try {
    policy = memory::parseAllocatorConf(supported);
  } catch (const std::invalid_argument& e) {
    throw ProfileError(where + ": " + e.what());
  }
  AllocatorSettings settings;
  if (present.count("mode")) {
    settings.mode = policy.mode;
  }
  if (present.count("max_split_size_mb"))
    settings.maxSplitSizeBytes = policy.maxSplitBytes;
  if (present.count("garbage_collection_threshold")) {
    settings.garbageCollectionThreshold = policy.garbageCollectionThreshold;
  }
  if (present.count("roundup_power2_divisions")) {
    settings.roundupPower2Divisions = static_cast<int>(policy.roundupPower2Divisions);
  }
  return settings;
}

namespace {

// Families an external trainer (PyTorch, ROCm's libraries) reads verbatim.
constexpr std::array<std::string_view, 7> kExternalFamilies = {
    "PYTORCH_", "TORCH_", "MIOPEN_", "HIP_", "HSA_", "ROCBLAS_", "HIPBLASLT_"};

bool inExternalFamily(std::string_view name) {
  return std::any_of(kExternalFamilies.begin(), kExternalFamilies.end(),
                     [&](std::string_view prefix) { return name.rfind(prefix, 0) == 0; });
}

// A family name that makes the process load code or files from a place (tensile libraries,
// extension builds, tool libraries), or write to one (HIPBLASLT_LOG_FILE, ROCBLAS_LOG_TRACE_PATH:
// a log at any path the profile names): refused like LD_PRELOAD.
bool pointsAtCode(std::string_view name) {
  return name.find("LIB") != std::string_view::npos ||
         name.find("PATH") != std::string_view::npos ||
         name.find("_DIR") != std::string_view::npos || name.find("FILE") != std::string_view::npos;
}

}  // namespace

const char* toString(VariableUse use) {
  switch (use) {
    case VariableUse::Pass:
      return "pass";
    case VariableUse::Map:
      return "map";
    case VariableUse::Ignore:
      return "ignore";
    case VariableUse::Refuse:
      break;
  }
  return "refuse";
}

VariablePolicy variablePolicy(std::string_view name) {
  const std::string why = whyVariableIsForbidden(name);
  if (why.empty()) {
    if (isAllocatorConfVariable(name)) {
      return {VariableUse::Map, VariableUse::Pass,
              std::string(name) +
                  " is mapped onto LoRAscope's allocator settings for its engine and passed "
                  "verbatim to external trainers (PyTorch reads it)"};
    }
    return {VariableUse::Pass, VariableUse::Pass,
            std::string(name) + " is a GPU runtime or library variable on LoRAscope's list"};
  }
  const bool injection = why.find("loads a library") != std::string::npos;
  const bool validName = why.find("upper-case") == std::string::npos && !name.empty();
  if (!injection && validName && inExternalFamily(name)) {
    if (pointsAtCode(name)) {
      return {VariableUse::Refuse, VariableUse::Refuse,
              std::string(name) +
                  " points the process at code or files to load or write (like LD_PRELOAD); a "
                  "profile may not set it"};
    }
    return {VariableUse::Ignore, VariableUse::Pass,
            std::string(name) +
                " belongs to PyTorch's or ROCm's variables: passed verbatim to external "
                "trainers; LoRAscope's engine does not read it"};
  }
  return {VariableUse::Refuse, VariableUse::Refuse, why};
}

}  // namespace lorascope::profiles

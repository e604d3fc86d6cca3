// profiles/Environment.cpp — the allow-list, the folklore table and allocator-conf mapping.
#include "profiles/Environment.h"

#include <array>
#include <set>
#include <stdexcept>

#include "memory/AllocatorPolicy.h"

namespace lorascope::profiles {
namespace {

constexpr std::array<std::string_view, 12> kAllowedPrefixes = {
    "HIP_",     "AMD_",     "HSA_",       "GPU_",     "ROCR_",   "ROC_",
    "ROCBLAS_", "HIPBLAS_", "HIPBLASLT_", "TENSILE_", "MIOPEN_", "CUDA_"};

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
     "the HIP runtime does not read HIP_DISABLE_IPC; single-process training uses no IPC, so "
     "there is nothing to disable"},
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
  for (std::string_view prefix : kAllowedPrefixes) {
    if (name.substr(0, prefix.size()) == prefix) {
      return "";
    }
  }
  return std::string(name) +
         " is not a GPU runtime variable; profiles may only set HIP_*, AMD_*, HSA_*, GPU_*, "
         "ROCR_*, ROC_*, ROCBLAS_*, HIPBLAS_*, HIPBLASLT_*, TENSILE_*, MIOPEN_*, CUDA_* and "
         "PYTORCH_HIP_ALLOC_CONF";
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
    settings.mode =
        policy.mode == memory::AllocatorMode::Arena ? AllocatorMode::Arena : AllocatorMode::Caching;
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

}  // namespace lorascope::profiles

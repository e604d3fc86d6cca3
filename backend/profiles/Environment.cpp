// profiles/Environment.cpp — the allow-list, the folklore table and allocator-conf mapping.
#include "profiles/Environment.h"

#include <array>
#include <charconv>
#include <cmath>

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

bool parseNumber(std::string_view text, double& out) {
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && std::isfinite(out);
}

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
  AllocatorSettings settings;
  std::size_t start = 0;
  while (start <= conf.size()) {
    const std::size_t comma = std::min(conf.find(',', start), conf.size());
    const std::string_view item = conf.substr(start, comma - start);
    start = comma + 1;
    if (item.empty()) {
      continue;
    }
    const std::size_t colon = item.find(':');
    if (colon == std::string_view::npos) {
      throw ProfileError(where + ": '" + std::string(item) + "' is not key:value");
    }
    const std::string key(item.substr(0, colon));
    const std::string_view value = item.substr(colon + 1);
    double number = 0;
    const bool numeric = parseNumber(value, number);
    auto bad = [&](const char* expected) {
      return ProfileError(where + ": " + key + " must be " + expected + ", got '" +
                          std::string(value) + "'");
    };
    if (key == "max_split_size_mb") {
      if (!numeric || number < 1 || number != std::floor(number)) {
        throw bad("a whole number of MiB ≥ 1");
      }
      settings.maxSplitSizeBytes = static_cast<std::uint64_t>(number) << 20;
    } else if (key == "garbage_collection_threshold") {
      if (!numeric || number <= 0 || number >= 1) {
        throw bad("a fraction between 0 and 1");
      }
      settings.garbageCollectionThreshold = number;
    } else if (key == "roundup_power2_divisions") {
      if (!numeric || number < 1 || number > 64 || number != std::floor(number)) {
        throw bad("a whole number from 1 to 64");
      }
      settings.roundupPower2Divisions = static_cast<int>(number);
    } else {
      notes.push_back({where + "." + key, key + " is a PyTorch allocator setting LoRAscope's "
                                                "allocator does not implement; it is ignored"});
    }
    if (comma == conf.size()) {
      break;
    }
  }
  return settings;
}

}  // namespace lorascope::profiles

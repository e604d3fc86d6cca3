// profiles/Environment.h — which environment variables a profile may set, which ones are
// folklore (set widely, read by nothing), and the mapping of PyTorch allocator settings
// (PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF) onto our allocator.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profiles/Profile.h"

namespace lorascope::profiles {

// Empty when `name` may be set by a profile; otherwise why not. Allowed: an explicit list of
// the GPU runtimes' and math libraries' tuning and debugging variables (Environment.cpp), and
// PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF. Never: a variable that loads a library
// (HSA_TOOLS_LIB, CUDA_INJECTION64_PATH, LD_PRELOAD), PATH, or anything else not on the list.
std::string whyVariableIsForbidden(std::string_view name);

// Empty when `value` may be given to `name`; otherwise why not (longer than the OS allows).
std::string whyValueIsForbidden(std::string_view name, std::string_view value);

// For a variable that the HIP runtime does not read although guides recommend it: what to use.
std::optional<std::string> folkloreAdvice(std::string_view name);

// True for PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF, which parseAllocConf maps.
bool isAllocatorConfVariable(std::string_view name);

// "max_split_size_mb:512,garbage_collection_threshold:0.8" → settings; keys we do not implement
// (expandable_segments, ...) become notes. Throws ProfileError (prefixed by `where`) on bad values.
AllocatorSettings parseAllocConf(std::string_view conf, const std::string& where,
                                 std::vector<ProfileNote>& notes);

}  // namespace lorascope::profiles

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

// Empty when `name` may be set by a profile; otherwise why not. Allowed: names beginning with
// HIP_, AMD_, HSA_, GPU_, ROCR_, ROC_, ROCBLAS_, HIPBLAS_, HIPBLASLT_, TENSILE_, MIOPEN_, CUDA_.
// Never: LD_PRELOAD, LD_LIBRARY_PATH, PATH or anything outside the list.
std::string whyVariableIsForbidden(std::string_view name);

// For a variable that the HIP runtime does not read although guides recommend it: what to use.
std::optional<std::string> folkloreAdvice(std::string_view name);

// True for PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF, which parseAllocConf maps.
bool isAllocatorConfVariable(std::string_view name);

// "max_split_size_mb:512,garbage_collection_threshold:0.8" → settings; keys we do not implement
// (expandable_segments, ...) become notes. Throws ProfileError (prefixed by `where`) on bad values.
AllocatorSettings parseAllocConf(std::string_view conf, const std::string& where,
                                 std::vector<ProfileNote>& notes);

}  // namespace lorascope::profiles

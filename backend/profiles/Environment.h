// profiles/Environment.h — which environment variables a profile may set, which ones are
// folklore (set widely, read by nothing), and the mapping of PyTorch allocator settings
// (PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF) onto our allocator.
//
// One written policy (variablePolicy) covers LoRAscope's engine and the external trainers that
// `lorascope-train supervise` runs: a variable passes to both, is mapped for our engine and passed
// verbatim to external trainers, passes to external trainers only (PyTorch's and ROCm's families,
// which our engine does not read), or is refused for everyone — each with its reason.
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

// What happens to a variable a profile sets, for each kind of program it starts.
enum class VariableUse {
  Pass,    // set in the program's environment as written
  Map,     // our engine: translated into its own settings (the allocator), not set
  Ignore,  // our engine: not read, not set (kept for external trainers)
  Refuse,  // a profile may not set it at all
};
const char* toString(VariableUse use);

struct VariablePolicy {
  VariableUse engine = VariableUse::Refuse;    // LoRAscope's own engine
  VariableUse external = VariableUse::Refuse;  // a trainer run by `lorascope-train supervise`
  std::string reason;                          // why, in one sentence
};

// The policy for one name. Refused for everyone: what whyVariableIsForbidden refuses, except the
// families below. Passed to external trainers only: names of the families PYTORCH_, TORCH_,
// MIOPEN_, HIP_, HSA_, ROCBLAS_, HIPBLASLT_ that are not on the engine's list — unless the name
// points the process at code or files to load (it contains LIB, PATH or _DIR:
// ROCBLAS_TENSILE_LIBPATH, TORCH_EXTENSIONS_DIR), which is refused like LD_PRELOAD.
VariablePolicy variablePolicy(std::string_view name);

// For a variable that the HIP runtime does not read although guides recommend it: what to use.
std::optional<std::string> folkloreAdvice(std::string_view name);

// True for PYTORCH_HIP_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF, which parseAllocConf maps.
bool isAllocatorConfVariable(std::string_view name);

// "max_split_size_mb:512,garbage_collection_threshold:0.8" → settings; keys we do not implement
// (expandable_segments, ...) become notes. Throws ProfileError (prefixed by `where`) on bad values.
AllocatorSettings parseAllocConf(std::string_view conf, const std::string& where,
                                 std::vector<ProfileNote>& notes);

}  // namespace lorascope::profiles

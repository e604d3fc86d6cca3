// external/LaunchPlan.h — what `lorascope-train supervise` starts, attempt after attempt: the
// command, its arguments on the current rung (a smaller batch through the user's argument
// template, the resume argument pointing at the newest checkpoint), and the environment of the
// profile for that rung, mapped for an external trainer (profiles/Environment.h's policy).
//
// Rungs for an external trainer (runtime::RecoveryRung, each adds to the ones below it):
//   builtin_gemm  profile "Built-in GEMM":  TORCH_BLAS_PREFER_HIPBLASLT=0 (PyTorch on ROCm uses
//                 rocBLAS instead of hipBLASLt, where HIPBLAS_STATUS_INTERNAL_ERROR comes from)
//   serialize     profile "Debug: serialize + blocking": AMD_SERIALIZE_KERNEL=3,
//                 HIP_LAUNCH_BLOCKING=1, CUDA_LAUNCH_BLOCKING=1
//   smaller_micro_batch  the batch halved through --batch-arg (only with one, down to 1)
//   cpu           not available: LoRAscope cannot move someone else's trainer to the CPU
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "profiles/Profile.h"
#include "runtime/ErrorClassifier.h"

namespace lorascope::external {

struct SupervisedCommand {
  std::string program;  // a path (findExecutable resolved it)
  std::vector<std::string> arguments;
  std::string resumeArgument;    // template with {checkpoint_dir}, "" = none
  std::string checkpointGlob;    // "out/checkpoint-*", "" = none
  std::string batchArgument;     // template with {batch}, "" = none
  int batch = 0;                 // the first attempt's batch (with batchArgument)
  std::string workingDirectory;  // where it starts ("" = ours); relative globs start there
  std::string parser = "hf";
  int hangAfterSeconds = 0;  // 0 = no hang watch
  int maxRestarts = 8;
  // How long the command's process group has to end after SIGTERM (a stop, or the command's own
  // exit leaving processes behind) before SIGKILL, and the longest wait for output pipes that
  // something outside the group still holds.
  int graceSeconds = 10;
  // The first attempt resumes (the resume argument at the newest checkpoint): a run resumed from
  // the Runs page, after `resumedAfterStep` steps were announced.
  bool resumeFirst = false;
  std::int64_t resumedAfterStep = 0;
};

// A profile as an external trainer gets it: its environment (the engine's and the external-only
// variables) plus its toggles and allocator settings written as the variables PyTorch and the GPU
// runtimes read. `notes` say what could not be carried over.
struct ExternalEnvironment {
  std::map<std::string, std::string> variables;
  std::vector<std::string> notes;
};
ExternalEnvironment mapProfileForExternal(const profiles::Profile& profile);

// --profile: a profile JSON file (a name ending in .json or holding a '/'), or the name of a
// built-in or saved profile. Throws ExternalError naming the file and field of a profile that
// may not be used (a forbidden variable) or the profiles there are.
profiles::Profile findProfile(const std::string& nameOrFile);

// The built-in profile of a rung (nullptr for vendor_blas).
const profiles::Profile* profileForRung(runtime::RecoveryRung rung);

// Words of an argument template: split at blanks, '…' and "…" keep blanks inside one word.
std::vector<std::string> splitTemplate(const std::string& text);
// `words` with every `placeholder` replaced by `value`.
std::vector<std::string> fillTemplate(const std::vector<std::string>& words,
                                      const std::string& placeholder, const std::string& value);
// The checkpoint the glob finds that was modified last (ties: the larger number in its name);
// nullopt when nothing matches. Wildcards * ? in any part of the path; a relative glob starts in
// `base` ("" = the working directory).
std::optional<std::filesystem::path> newestCheckpoint(const std::string& glob,
                                                      const std::filesystem::path& base = {});

// The step a checkpoint holds, read from the last number in its name ("checkpoint-500",
// "at-step00000500"); 0 when it has none.
std::int64_t checkpointStep(const std::filesystem::path& checkpoint);

struct LaunchSpec {
  std::string program;
  std::string workingDirectory;
  std::vector<std::string> arguments;
  std::map<std::string, std::string> environment;   // set on top of this process's
  std::string profileName;                          // the profile of the rung
  std::optional<std::filesystem::path> checkpoint;  // what the resume argument points at
};

// The attempt on `rung` with `batch`; `resume`: add the resume argument (when a checkpoint is
// found).
LaunchSpec planLaunch(const SupervisedCommand& command, const profiles::Profile& profile,
                      runtime::RecoveryRung rung, int batch, bool resume);

// "A=1 B=2" for logs.
std::string describeEnvironment(const std::map<std::string, std::string>& environment);

}  // namespace lorascope::external

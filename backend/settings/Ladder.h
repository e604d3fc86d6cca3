// settings/Ladder.h — the one GEMM choice and the one recovery ladder. The compute backends take
// the GEMM choice (compute::GemmImplementation is this enum), the runtime's error classifier and
// the supervisors climb the ladder (runtime::RecoveryRung is this enum), and profile files name a
// rung (profiles::Profile::ladderRung). Each has its names here, once.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lorascope::settings {

// Which GEMM a backend's matmul runs on: the vendor BLAS (hipBLAS/cuBLAS; OpenBLAS on the CPU) or
// LoRAscope's built-in tiled GEMM. On the wire and in files: "vendor", "builtin".
enum class Gemm : std::uint8_t { Vendor, BuiltIn };
const char* gemmName(Gemm gemm);
std::optional<Gemm> parseGemm(std::string_view name);

// The recovery ladder, in the order the supervisors climb it; each rung adds to the ones below
// (the settings each rung sets are the registry's: Setting::ladder).
enum class Rung : std::uint8_t {
  VendorBlas,         // nothing switched off: the run as configured
  BuiltinGemm,        // the built-in GEMM instead of the vendor BLAS
  Serialize,          // serialized, blocking launches
  SmallerMicroBatch,  // half the micro-batch, the same effective batch
  Cpu,                // the run moves to the CPU
};
// The protocol's and the log's names: vendor_blas, builtin_gemm, serialize, smaller_micro_batch,
// cpu.
const char* rungName(Rung rung);
std::optional<Rung> parseRungName(std::string_view name);  // nullopt for any other word
// A profile file's names (its "ladder_rung"): none, builtin_gemm, serialize, smaller_batch, cpu.
const char* rungProfileName(Rung rung);
std::optional<Rung> parseRungProfileName(std::string_view name);
// Every rung's profile name, for messages: "none, builtin_gemm, …".
const char* rungProfileNameList();

}  // namespace lorascope::settings

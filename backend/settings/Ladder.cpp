// settings/Ladder.cpp — the names of the GEMM choice and of the ladder's rungs.
#include "settings/Ladder.h"

#include <string>

#include "common/EnumNames.h"

namespace lorascope::settings {
namespace {

constexpr common::EnumName<Gemm> kGemmNames[] = {{Gemm::Vendor, "vendor"},
                                                 {Gemm::BuiltIn, "builtin"}};
constexpr common::EnumName<Rung> kRungNames[] = {{Rung::VendorBlas, "vendor_blas"},
                                                 {Rung::BuiltinGemm, "builtin_gemm"},
                                                 {Rung::Serialize, "serialize"},
                                                 {Rung::SmallerMicroBatch, "smaller_micro_batch"},
                                                 {Rung::Cpu, "cpu"}};
// Profile files have named the rungs so since format 1; the names stay.
constexpr common::EnumName<Rung> kRungProfileNames[] = {{Rung::VendorBlas, "none"},
                                                        {Rung::BuiltinGemm, "builtin_gemm"},
                                                        {Rung::Serialize, "serialize"},
                                                        {Rung::SmallerMicroBatch, "smaller_batch"},
                                                        {Rung::Cpu, "cpu"}};
static_assert(common::coversEnum(kGemmNames) && common::coversEnum(kRungNames) &&
              common::coversEnum(kRungProfileNames));

}  // namespace

const char* gemmName(Gemm gemm) {
  return common::enumName(kGemmNames, gemm);
}
std::optional<Gemm> parseGemm(std::string_view name) {
  return common::parseEnum(kGemmNames, name);
}
const char* rungName(Rung rung) {
  return common::enumName(kRungNames, rung);
}
std::optional<Rung> parseRungName(std::string_view name) {
  return common::parseEnum(kRungNames, name);
}
const char* rungProfileName(Rung rung) {
  return common::enumName(kRungProfileNames, rung);
}
std::optional<Rung> parseRungProfileName(std::string_view name) {
  return common::parseEnum(kRungProfileNames, name);
}
const char* rungProfileNameList() {
  static const std::string list = common::enumNameList(kRungProfileNames);
  return list.c_str();
}

}  // namespace lorascope::settings

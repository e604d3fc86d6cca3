// test_settings_compat.cpp — files written by LoRAscope before the settings registry load, and are
// written back unchanged: two built-in profiles as Export saved them, a user profile as the
// profile editor saved it, and the config.json of a demo run and of a run given its options on the
// command line (fixtures/, made by fixtures/make-fixtures.sh from main at 8a4f8b9).
#include "TestRunner.h"

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "TestPaths.h"
#include "job/TrainRunConfig.h"  // defines: settingsFromJson, settingsToJson
#include "profiles/Builtins.h"
#include "profiles/ProfileJson.h"
#include "profiles/ProfileStore.h"  // defines: readProfileFile
#include "settings/Registry.h"

using namespace lorascope;
using nlohmann::json;
using settings::Toggle;

namespace {

std::string fixture(const std::string& name) {
  return std::string(lstest::sourcePath("tests/settings/fixtures")) + "/" + name;
}

std::string text(const std::string& name) {
  std::ifstream in(fixture(name), std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

TEST_CASE(exportedBuiltinProfilesLoadAndAreWrittenTheSame) {
  for (const std::string name : {"builtin-low-vram.json", "builtin-gemm.json"}) {
    const std::string saved = profiles::readProfileFile(fixture(name));
    const profiles::Profile p = profiles::parseProfile(saved, name).profile;
    COMPARE(profiles::profileToJson(p), saved);
    bool matched = false;
    for (const profiles::Profile& builtin : profiles::builtinProfiles()) {
      if (builtin.name == p.name) {
        COMPARE(profiles::profileToJson(builtin), saved);  // today's built-in is the same
        matched = true;
      }
    }
    VERIFY2(matched, name.c_str());
  }
  const profiles::Profile low =
      profiles::parseProfile(text("builtin-low-vram.json"), "low").profile;
  COMPARE(low.toggles.at(Toggle::MicroBatch), json(1));
  COMPARE(low.toggles.at(Toggle::ActivationCheckpointing), json(true));
  COMPARE(low.ladderRung, settings::Rung::SmallerMicroBatch);
  COMPARE(profiles::parseProfile(text("builtin-gemm.json"), "gemm").profile.ladderRung,
          settings::Rung::BuiltinGemm);
}

TEST_CASE(aUserProfileLoadsWithEveryToggleAndIsWrittenTheSame) {
  const std::string saved = profiles::readProfileFile(fixture("user-profile.json"));
  const profiles::ParsedProfile parsed = profiles::parseProfile(saved, "user-profile.json");
  const profiles::Profile& p = parsed.profile;
  COMPARE(p.name, std::string("My card"));
  COMPARE(p.toggles.size(), std::size_t{6});
  COMPARE(p.toggles.at(Toggle::Serialize), json(true));
  COMPARE(p.toggles.at(Toggle::Blocking), json(false));
  COMPARE(p.toggles.at(Toggle::MicroBatch), json(2));
  COMPARE(p.toggles.at(Toggle::CpuFallback), json(false));
  COMPARE(p.toggles.at(Toggle::GemmBackend), json("builtin"));
  COMPARE(p.toggles.at(Toggle::ActivationCheckpointing), json(true));
  VERIFY(p.allocator.mode == profiles::AllocatorMode::Arena);
  COMPARE(p.allocator.maxSplitSizeBytes.value_or(0), std::uint64_t{256} << 20);
  COMPARE(p.ladderRung, settings::Rung::SmallerMicroBatch);
  COMPARE(profiles::profileToJson(p), saved);
}

TEST_CASE(runConfigsLoadAndAreWrittenTheSame) {
  for (const std::string name : {"demo-config.json", "cli-config.json"}) {
    const json config = json::parse(text(name));
    const json& saved = config.at("training");
    const job::TrainRunSettings s = job::settingsFromJson(saved, name);
    json written = job::settingsToJson(s);
    // A setting added after the fixture was written (optional in config.json) is written with
    // the value it took, its default; the rest is written as it was.
    for (const settings::Setting& setting : settings::registry().all()) {
      const json::json_pointer key(setting.configKey);
      if (setting.optionalInConfig && !saved.contains(key) && written.contains(key)) {
        const json value = written.at(key);
        COMPARE(value.is_string() ? value.get<std::string>() : value.dump(),
                setting.option.defaultText);
        written.at(key.parent_pointer()).erase(key.back());
      }
      // A Bool that became a choice with a flag value (packing) is written as its choice:
      // false as the first, true as the flag value.
      const settings::OptionSpec& spec = setting.option;
      if (!spec.flagValue.empty() && saved.contains(key) && saved.at(key).is_boolean()) {
        COMPARE(written.at(key),
                json(saved.at(key).get<bool>() ? spec.flagValue : spec.choices.front()));
        written.at(key) = saved.at(key);
      }
    }
    COMPARE(written, saved);
  }
  const job::TrainRunSettings cli =
      job::settingsFromJson(json::parse(text("cli-config.json")).at("training"), "cli");
  COMPARE(cli.gemmBackend, std::string("builtin"));
  COMPARE(cli.allocatorPolicy, std::string("arena"));
  VERIFY(cli.serializeKernels);
  COMPARE(cli.train.lora.rank, 4);
  COMPARE(cli.train.microBatchSize, std::int64_t{2});
  COMPARE(cli.train.gradAccumulation, std::int64_t{2});
  COMPARE(cli.evalSplit, 0.1);
}

// test_profiles.cpp — profile files: built-ins, the allow-list, folklore flags, allocator-conf
// mapping, schema errors naming file and field (names escaped), the user store (non-ASCII names,
// a size cap) and switch plans.
#include "TempDir.h"
#include "TestRunner.h"

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "profiles/Builtins.h"
#include "profiles/Environment.h"
#include "profiles/ProfileJson.h"
#include "profiles/ProfileStore.h"
#include "profiles/SwitchPlan.h"
#include "settings/WatchdogSpec.h"

using namespace lorascope::profiles;
using lorascope::settings::Toggle;
namespace settings = lorascope::settings;

namespace {

// Runs `parse` and returns the ProfileError's message, or "<no error>" when none was thrown.
lstest::Message errorOf(std::string_view json) {
  try {
    parseProfile(json, "user.json");
  } catch (const ProfileError& e) {
    return {e.what()};
  }
  return {"<no error>"};
}

// Takes a C string, not a std::string: g++ 13's -Wdangling-reference flags a reference returned
// from a call that was handed a temporary std::string.
const Profile& builtin(const char* name) {
  for (const Profile& p : builtinProfiles()) {
    if (p.name == name)
      return p;
  }
  throw std::runtime_error(std::string("no built-in ") + name);
}

}  // namespace

TEST_CASE(builtinsAreTheSevenOfTheDesign) {
  std::vector<std::string> names;
  for (const Profile& p : builtinProfiles()) {
    names.push_back(p.name);
    VERIFY(p.builtin);
    VERIFY2(p.rationale.size() > 80, p.name.c_str());
  }
  COMPARE(names,
          (std::vector<std::string>{"Balanced", "ROCm stable", "Debug: serialize + blocking",
                                    "Low VRAM", "Windows safe", "Built-in GEMM", "CPU only"}));
  COMPARE(defaultProfile().name, std::string("Balanced"));
}

TEST_CASE(builtinsCarryTheirSettings) {
  const Profile& rocm = builtin("ROCm stable");
  COMPARE(rocm.environment.at("HSA_FORCE_FINE_GRAIN_PCIE"), std::string("1"));
  COMPARE(rocm.environment.at("GPU_MAX_HW_QUEUES"), std::string("2"));  // the runtime's is 4
  COMPARE(*rocm.allocator.maxSplitSizeBytes, std::uint64_t{512} << 20);
  const Profile& debug = builtin("Debug: serialize + blocking");
  COMPARE(debug.environment.at("AMD_SERIALIZE_KERNEL"), std::string("3"));
  COMPARE(debug.environment.at("HIP_LAUNCH_BLOCKING"), std::string("1"));
  VERIFY(debug.toggles.at(Toggle::Serialize) == true && debug.toggles.at(Toggle::Blocking) == true);
  const Profile& low = builtin("Low VRAM");
  COMPARE(low.toggles.at(Toggle::MicroBatch), nlohmann::json(1));
  VERIFY(low.toggles.at(Toggle::ActivationCheckpointing) == true);
  COMPARE(*low.allocator.mode, AllocatorMode::Arena);
  COMPARE(builtin("Built-in GEMM").toggles.at(Toggle::GemmBackend), nlohmann::json("builtin"));
  COMPARE(builtin("CPU only").ladderRung, settings::Rung::Cpu);
}

TEST_CASE(forbiddenVariablesAreRefusedByName) {
  for (const char* name : {"LD_PRELOAD", "PATH", "LD_LIBRARY_PATH", "HOME", "PYTHONPATH"}) {
    const lstest::Message message = errorOf(std::string(R"({"name": "x", "description": "d", )"
                                                        R"("environment": {")") +
                                            name + R"(": "1"}})");
    VERIFY2(message.contains("user.json") && message.contains(std::string("environment.") + name) &&
                message.contains("not allowed"),
            message.text);
  }
  VERIFY(whyVariableIsForbidden("HSA_OVERRIDE_GFX_VERSION").empty());
  VERIFY(whyVariableIsForbidden("MIOPEN_FIND_MODE").empty());
  VERIFY(!whyVariableIsForbidden("hip_visible_devices").empty());
}

TEST_CASE(aProfileSetsTheWatchdogBudgetsInTheirOneSpelling) {
  // The way out that a hang report names: a profile gives a slow card's first steps longer. A
  // value the engine could not read is refused when the profile loads, not when the engine starts.
  const ParsedProfile parsed = parseProfile(R"({"name": "slow iGPU", "description": "d", )"
                                            R"("environment": {"LORASCOPE_WATCHDOG": "30,600"}})",
                                            "user.json");
  COMPARE(parsed.profile.environment.at("LORASCOPE_WATCHDOG"), std::string("30,600"));
  COMPARE(
      settings::parseWatchdogSpec(parsed.profile.environment.at("LORASCOPE_WATCHDOG")).firstStepsMs,
      std::int64_t{600'000});
  const lstest::Message message = errorOf(R"({"name": "x", "description": "d", )"
                                          R"("environment": {"LORASCOPE_WATCHDOG": "ten"}})");
  VERIFY2(message.contains("user.json") && message.contains("environment.LORASCOPE_WATCHDOG") &&
              message.contains("'ten' is not GRACE_S[,FIRST_STEPS_S]"),
          message.text);
}

TEST_CASE(folkloreVariablesAreFlaggedWithTheRealAlternative) {
  const ParsedProfile parsed =
      parseProfile(R"({"name": "old habits", "description": "d", )"
                   R"("environment": {"HIP_SERIALIZE_KERNEL": "1", "HIP_DISABLE_IPC": "1"}})",
                   "user.json");
  COMPARE(parsed.notes.size(), std::size_t{2});
  COMPARE(parsed.notes[0].field, std::string("environment.HIP_DISABLE_IPC"));
  VERIFY(parsed.notes[1].message.find("AMD_SERIALIZE_KERNEL=3") != std::string::npos);
  VERIFY(!folkloreAdvice("AMD_SERIALIZE_KERNEL").has_value());
}

TEST_CASE(pytorchAllocConfIsMappedOntoOurAllocator) {
  const ParsedProfile parsed = parseProfile(
      R"({"name": "torchy", "description": "d", "environment": {"PYTORCH_HIP_ALLOC_CONF": )"
      R"("max_split_size_mb:256,garbage_collection_threshold:0.6,expandable_segments:True"}})",
      "user.json");
  COMPARE(*parsed.profile.allocator.maxSplitSizeBytes, std::uint64_t{256} << 20);
  COMPARE(*parsed.profile.allocator.garbageCollectionThreshold, 0.6);
  VERIFY(parsed.profile.environment.empty());  // mapped, not passed to the runtime
  bool ignoredNoted = false;
  for (const ProfileNote& n : parsed.notes) {
    ignoredNoted |= n.message.find("expandable_segments") != std::string::npos;
  }
  VERIFY(ignoredNoted);
  VERIFY(errorOf(R"({"name": "x", "description": "d", "environment": )"
                 R"({"PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:lots"}})")
             .contains("max_split_size_mb needs a non-negative number"));
}

TEST_CASE(schemaErrorsNameFileAndField) {
  VERIFY(errorOf("{not json").contains("user.json: not valid JSON"));
  VERIFY(errorOf(R"({"name": "x", "version": 1e400})").contains("user.json: not valid JSON"));
  VERIFY(errorOf("[1]").contains("must be a JSON object"));
  VERIFY(errorOf(R"({"description": "d"})").contains("name: missing"));
  VERIFY(errorOf(R"({"name": "x", "description": "d", "colour": "red"})")
             .contains("colour: unknown key"));
  VERIFY(
      errorOf(R"({"name": "x", "description": "d", "toggles": {"serialise": true}})")
          .contains("toggles.serialise: unknown key (the keys here: micro_batch, "
                    "activation_checkpointing, cpu_fallback, serialize, blocking, gemm, graph)"));
  VERIFY(errorOf(R"({"name": "x", "env": {}})")
             .contains("env: unknown key (the keys here: version, name, description, rationale, "
                       "environment, toggles, allocator, ladder_rung, engine)"));
  VERIFY(errorOf(R"({"name": "x", "description": "d", "toggles": {"micro_batch": 0}})")
             .contains("toggles.micro_batch: must be a whole number from 1"));
  VERIFY(errorOf(R"({"name": "x", "description": "d", "toggles": {"gemm": "fast"}})")
             .contains("toggles.gemm: must be \"vendor\" or \"builtin\", not \"fast\""));
  VERIFY(errorOf(R"({"name": "x", "description": "d", "ladder_rung": 3})")
             .contains("ladder_rung: must be a string"));
  VERIFY(errorOf(R"({"version": 2, "name": "x", "description": "d"})").contains("newer LoRAscope"));
  VERIFY(errorOf(R"({"name": "x", "description": "d", "environment": {"HIP_X": "a\nb"}})")
             .contains("line breaks"));
}

// One check names every problem of a file, a line each, not the first alone.
TEST_CASE(aProfileWithSeveralProblemsNamesEach) {
  const lstest::Message message = errorOf(
      R"({"name": "", "description": "d", "toggles": {"micro_batch": 0, "serialise": true}, )"
      R"("environment": {"HIPBLASLT_LOG_FILE": "/x", "GPU_MAX_HW_QUEUES": "4"}, )"
      R"("ladder_rung": "up"})");
  const std::vector<std::string> wanted{
      "user.json: name: must be 1 to 64 characters",
      "user.json: toggles.micro_batch: must be a whole number from 1",
      "user.json: toggles.serialise: unknown key",
      "user.json: environment.HIPBLASLT_LOG_FILE: not allowed",
      "user.json: ladder_rung: 'up' is not one of"};
  for (const std::string& w : wanted) {
    VERIFY2(message.contains(w), (w + " in: " + message.text).c_str());
  }
  COMPARE(static_cast<std::size_t>(std::count(message.text.begin(), message.text.end(), '\n')),
          wanted.size() - 1);
}

TEST_CASE(profilesRoundTripThroughJson) {
  for (const Profile& p : builtinProfiles()) {
    const Profile back = parseProfile(profileToJson(p), "round trip").profile;
    COMPARE(back.name, p.name);
    COMPARE(back.environment, p.environment);
    VERIFY(back.toggles == p.toggles);
    VERIFY(back.allocator == p.allocator);
    COMPARE(back.ladderRung, p.ladderRung);
  }
}

TEST_CASE(storeSavesLoadsAndReportsBadFilesWithoutHidingGoodOnes) {
  lstest::TempDir dir;
  const ProfileStore store(dir.path());
  Profile mine;
  mine.name = "My 7900 XTX";
  mine.description = "queues 2";
  mine.environment["GPU_MAX_HW_QUEUES"] = "2";
  const auto path = store.save(mine);
  COMPARE(path.filename().string(), std::string("my-7900-xtx.json"));
  std::ofstream(dir.filePath("broken.json")) << R"({"name": "b", "descr)";
  std::ofstream(dir.filePath("evil.json"))
      << R"({"name": "e", "description": "d", "environment": {"LD_PRELOAD": "/tmp/x.so"}})";

  const ProfileListing listing = store.load();
  COMPARE(listing.profiles.size(), builtinProfiles().size() + 1);
  COMPARE(listing.profiles.back().profile.name, std::string("My 7900 XTX"));
  COMPARE(listing.profiles.back().profile.environment.at("GPU_MAX_HW_QUEUES"), std::string("2"));
  COMPARE(listing.problems.size(), std::size_t{2});
  VERIFY(listing.problems[0].message.find("broken.json") != std::string::npos);
  VERIFY(listing.problems[1].message.find("LD_PRELOAD") != std::string::npos);

  VERIFY(store.remove("My 7900 XTX"));
  VERIFY(!store.remove("My 7900 XTX"));
  VERIFY(!store.remove("Balanced"));
}

// A store under C:\Users\Łukasz\日本 (a Windows user's %APPDATA%): profiles are saved and read
// back, and a bad file's problem names it as UTF-8 text (path::string() throws there).
TEST_CASE(storeUnderNonAsciiNamesLoadsAndNamesItsFiles) {
  lstest::TempDir dir;
  const ProfileStore store(dir.nonAsciiFolder() / "profiles");
  Profile mine;
  mine.name = "Zo\xc3\xab's card";
  mine.description = "queues 2";
  mine.environment["GPU_MAX_HW_QUEUES"] = "2";
  const std::filesystem::path saved = store.save(mine);
  COMPARE(saved.parent_path(), store.userDir());
  const std::filesystem::path broken = store.userDir() / "broken.json";
  std::ofstream(broken) << R"({"name": "b", "descr)";
  const std::filesystem::path twin = store.userDir() / "zz-twin.json";
  std::filesystem::copy_file(saved, twin);

  const ProfileListing listing = store.load();
  COMPARE(listing.profiles.size(), builtinProfiles().size() + 1);
  COMPARE(listing.profiles.back().profile.name, mine.name);
  COMPARE(listing.profiles.back().profile.environment.at("GPU_MAX_HW_QUEUES"), std::string("2"));
  COMPARE(listing.problems.size(), std::size_t{2});
  COMPARE(listing.problems[0].file, broken);
  const lstest::Message parseError{listing.problems[0].message};
  VERIFY2(parseError.contains(lstest::utf8Text(broken)), parseError.text.c_str());
  COMPARE(listing.problems[1].file, twin);
  const lstest::Message clash{listing.problems[1].message};
  VERIFY2(clash.contains(lstest::utf8Text(saved) + " already has") &&
              clash.contains(lstest::kNonAsciiSub),
          clash.text.c_str());
}

TEST_CASE(nonAsciiNamesAreDistinctFiles) {
  // Issue 31 item 8: "日本" and "中国" both mapped to "------.json", one overwriting the other.
  lstest::TempDir dir;
  const ProfileStore store(dir.path());
  Profile japan;
  japan.name = "\xe6\x97\xa5\xe6\x9c\xac";  // 日本
  japan.description = "one";
  Profile china = japan;
  china.name = "\xe4\xb8\xad\xe5\x9b\xbd";  // 中国
  china.description = "two";
  const std::filesystem::path first = store.save(japan);
  const std::filesystem::path second = store.save(china);
  VERIFY2(first != second, lstest::utf8Text(first));
  COMPARE(first.filename().string(), std::string("_e6_97_a5_e6_9c_ac.json"));
  const ProfileListing listing = store.load();
  COMPARE(listing.profiles.size(), builtinProfiles().size() + 2);
  COMPARE(listing.problems.size(), std::size_t{0});
}

TEST_CASE(messagesShowVariableNamesEscaped) {
  // A newline or a NUL in a name printed raw could forge lines of `profile check`'s output.
  const lstest::Message newline =
      errorOf(R"({"name": "n", "description": "d", "environment": {"A\nerror: forged": "1"}})");
  VERIFY2(
      newline.contains(R"(user.json: environment."A\nerror: forged": )") && !newline.contains("\n"),
      newline.text.c_str());
  const lstest::Message nul =
      errorOf(R"({"name": "n", "description": "d", "environment": {"A\u0000B": "1"}})");
  VERIFY2(nul.contains(R"(environment."A\u0000B")") && nul.text.find('\0') == std::string::npos,
          nul.text.c_str());
  const lstest::Message key = errorOf(R"({"name": "n", "description": "d", "x\ry": 1})");
  VERIFY2(key.contains(R"(user.json: "x\ry": unknown key)"), key.text.c_str());
}

TEST_CASE(logFilesAndOversizedProfilesAreRefused) {
  const lstest::Message log =
      errorOf(R"({"name": "n", "description": "d", "environment": {"HIPBLASLT_LOG_FILE": "/x"}})");
  VERIFY2(log.contains("environment.HIPBLASLT_LOG_FILE: not allowed") &&
              log.contains("files to load or write"),
          log.text.c_str());
  lstest::TempDir dir;
  const ProfileStore store(dir.path());
  std::ofstream(dir.path() / "huge.json") << std::string(2 * kMaxProfileFileBytes, ' ');
  const ProfileListing listing = store.load();
  COMPARE(listing.problems.size(), std::size_t{1});
  const lstest::Message big{listing.problems[0].message};
  VERIFY2(big.contains("huge.json: is 2.00 MiB, more than the 1.00 MiB limit of a profile file"),
          big.text.c_str());
}

TEST_CASE(storeRefusesBuiltinNames) {
  lstest::TempDir dir;
  const ProfileStore store(dir.path());
  Profile clash = builtin("Low VRAM");
  clash.builtin = false;
  VERIFY_THROWS_EXCEPTION(ProfileError, store.save(clash));
}

TEST_CASE(missingUserDirIsNotAnError) {
  const ProfileStore store("/nonexistent/lorascope/profiles");
  const ProfileListing listing = store.load();
  COMPARE(listing.profiles.size(), builtinProfiles().size());
  VERIFY(listing.problems.empty());
}

TEST_CASE(switchingEnvironmentRestartsTheEngineButTogglesDoNot) {
  const SwitchPlan toDebug = planSwitch(defaultProfile(), builtin("Debug: serialize + blocking"));
  VERIFY(toDebug.restartEngine);
  COMPARE(toDebug.environmentChanges.size(), std::size_t{2});
  COMPARE(toDebug.environmentChanges[0], std::string("AMD_SERIALIZE_KERNEL: (unset) → 3"));
  VERIFY(toDebug.toggles.at(Toggle::Serialize) == true);

  const SwitchPlan toGemm = planSwitch(defaultProfile(), builtin("Built-in GEMM"));
  VERIFY(!toGemm.restartEngine);
  COMPARE(toGemm.toggles.at(Toggle::GemmBackend), nlohmann::json("builtin"));
}

TEST_CASE(injectionVariablesOversizedValuesAndDuplicateNamesAreRefused) {
  // Issue 20 item 8: these passed the allow-list through their prefixes (HSA_, CUDA_).
  for (const char* name : {"HSA_TOOLS_LIB", "CUDA_INJECTION64_PATH"}) {
    const lstest::Message message = errorOf(std::string(R"({"name": "x", "description": "d", )"
                                                        R"("environment": {")") +
                                            name + R"(": "/tmp/evil.so"}})");
    VERIFY2(message.contains("loads a library into the process"), message.text);
  }
  // Every name is on the list or refused, also within the old prefixes.
  VERIFY(whyVariableIsForbidden("HIP_SOMETHING_MADE_UP").find("not on LoRAscope's list") !=
         std::string::npos);
  VERIFY(whyVariableIsForbidden("ROCBLAS_TENSILE_LIBPATH").find("HIP_VISIBLE_DEVICES") !=
         std::string::npos);  // the refusal lists what is allowed
  for (const Profile& p : builtinProfiles()) {
    for (const auto& [name, value] : p.environment) {
      VERIFY2(whyVariableIsForbidden(name).empty(), name.c_str());
    }
  }
  // A value over the 128 KiB the OS allows one variable.
  const std::string huge(128 * 1024, '1');
  VERIFY(errorOf(R"({"name": "x", "description": "d", "environment": {"AMD_LOG_LEVEL": ")" + huge +
                 R"("}})")
             .contains("longer than the operating system allows"));
  // Two files with one name: the first loads, the second is reported.
  lstest::TempDir dir;
  for (const char* file : {"a.json", "b.json"}) {
    std::ofstream(dir.filePath(file))
        << R"({"name": "twin", "description": "d", "environment": {"AMD_LOG_LEVEL": "1"}})";
  }
  const ProfileListing listing = ProfileStore(dir.path()).load();
  COMPARE(listing.problems.size(), std::size_t{1});
  VERIFY(listing.problems[0].file.filename() == "b.json");
  VERIFY2(listing.problems[0].message.find("a.json already has") != std::string::npos,
          listing.problems[0].message.c_str());
  COMPARE(std::count_if(listing.profiles.begin(), listing.profiles.end(),
                        [](const ParsedProfile& p) { return p.profile.name == "twin"; }),
          std::ptrdiff_t{1});
}

TEST_CASE(oneEnvironmentPolicyForTheEngineAndExternalTrainers) {
  // On the list: both. PyTorch's allocator conf: mapped for the engine, verbatim for trainers.
  COMPARE(variablePolicy("GPU_MAX_HW_QUEUES").engine, VariableUse::Pass);
  COMPARE(variablePolicy("GPU_MAX_HW_QUEUES").external, VariableUse::Pass);
  COMPARE(variablePolicy("PYTORCH_HIP_ALLOC_CONF").engine, VariableUse::Map);
  COMPARE(variablePolicy("PYTORCH_HIP_ALLOC_CONF").external, VariableUse::Pass);
  // PyTorch's and ROCm's families: external trainers only, said so in a note.
  for (const char* name : {"TORCH_BLAS_PREFER_HIPBLASLT", "MIOPEN_DEBUG_CONV_GEMM",
                           "HIP_SOMETHING_MADE_UP", "HSA_ENABLE_IPC_MODE_LEGACY"}) {
    COMPARE(variablePolicy(name).engine, VariableUse::Ignore);
    COMPARE(variablePolicy(name).external, VariableUse::Pass);
  }
  // Refused for everyone, with the reason: code loaders, also inside the families, and others.
  for (const char* name : {"LD_PRELOAD", "HSA_TOOLS_LIB", "ROCBLAS_TENSILE_LIBPATH",
                           "TORCH_EXTENSIONS_DIR", "PATH", "PYTHONPATH"}) {
    COMPARE(variablePolicy(name).external, VariableUse::Refuse);
    VERIFY(!variablePolicy(name).reason.empty());
  }
  const ParsedProfile parsed = parseProfile(
      R"({"name": "torch", "description": "d", "environment": {"PYTORCH_HIP_ALLOC_CONF": )"
      R"("expandable_segments:True", "TORCH_BLAS_PREFER_HIPBLASLT": "0"}})",
      "user.json");
  VERIFY(parsed.profile.environment.empty());  // the engine gets neither as a variable
  COMPARE(parsed.profile.externalEnvironment.at("PYTORCH_HIP_ALLOC_CONF"),
          std::string("expandable_segments:True"));
  COMPARE(parsed.profile.externalEnvironment.at("TORCH_BLAS_PREFER_HIPBLASLT"), std::string("0"));
  // Saved and read back, they stay where they were.
  const ParsedProfile again = parseProfile(profileToJson(parsed.profile), "user.json");
  COMPARE(again.profile.externalEnvironment, parsed.profile.externalEnvironment);
}

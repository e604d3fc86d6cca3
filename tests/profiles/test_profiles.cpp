// test_profiles.cpp — profile files: built-ins, the allow-list, folklore flags, allocator-conf
// mapping, schema errors naming file and field, the user store and switch plans.
#include <QTemporaryDir>
#include <QtTest>

#include <fstream>

#include "profiles/Builtins.h"
#include "profiles/Environment.h"
#include "profiles/ProfileJson.h"
#include "profiles/ProfileStore.h"
#include "profiles/SwitchPlan.h"

using namespace lorascope::profiles;

namespace {

// Runs `parse` and returns the ProfileError's message, or fails the test if none was thrown.
QString errorOf(std::string_view json) {
  try {
    parseProfile(json, "user.json");
  } catch (const ProfileError& e) {
    return QString::fromUtf8(e.what());
  }
  return QStringLiteral("<no error>");
}

const Profile& builtin(const std::string& name) {
  for (const Profile& p : builtinProfiles()) {
    if (p.name == name)
      return p;
  }
  throw std::runtime_error("no built-in " + name);
}

}  // namespace

class TestProfiles : public QObject {
  Q_OBJECT

 private slots:
  void builtinsAreTheSevenOfTheDesign();
  void builtinsCarryTheirSettings();
  void forbiddenVariablesAreRefusedByName();
  void folkloreVariablesAreFlaggedWithTheRealAlternative();
  void pytorchAllocConfIsMappedOntoOurAllocator();
  void oneEnvironmentPolicyForTheEngineAndExternalTrainers();
  void schemaErrorsNameFileAndField();
  void profilesRoundTripThroughJson();
  void storeSavesLoadsAndReportsBadFilesWithoutHidingGoodOnes();
  void storeRefusesBuiltinNames();
  void missingUserDirIsNotAnError();
  void switchingEnvironmentRestartsTheEngineButTogglesDoNot();
  void injectionVariablesOversizedValuesAndDuplicateNamesAreRefused();
};

// moc 6.4 cannot parse raw string literals, so it does not see the test bodies.
#ifndef Q_MOC_RUN

void TestProfiles::builtinsAreTheSevenOfTheDesign() {
  QStringList names;
  for (const Profile& p : builtinProfiles()) {
    names << QString::fromStdString(p.name);
    QVERIFY(p.builtin);
    QVERIFY2(p.rationale.size() > 80, p.name.c_str());
  }
  QCOMPARE(names, (QStringList{"Balanced", "ROCm stable", "Debug: serialize + blocking", "Low VRAM",
                               "Windows safe", "Built-in GEMM", "CPU only"}));
  QCOMPARE(defaultProfile().name, std::string("Balanced"));
}

void TestProfiles::builtinsCarryTheirSettings() {
  const Profile& rocm = builtin("ROCm stable");
  QCOMPARE(rocm.environment.at("HSA_FORCE_FINE_GRAIN_PCIE"), std::string("1"));
  QCOMPARE(rocm.environment.at("GPU_MAX_HW_QUEUES"), std::string("4"));
  QCOMPARE(*rocm.allocator.maxSplitSizeBytes, std::uint64_t{512} << 20);
  const Profile& debug = builtin("Debug: serialize + blocking");
  QCOMPARE(debug.environment.at("AMD_SERIALIZE_KERNEL"), std::string("3"));
  QCOMPARE(debug.environment.at("HIP_LAUNCH_BLOCKING"), std::string("1"));
  QVERIFY(*debug.toggles.serialize && *debug.toggles.blocking);
  const Profile& low = builtin("Low VRAM");
  QCOMPARE(*low.toggles.microBatch, 1);
  QVERIFY(*low.toggles.activationCheckpointing);
  QCOMPARE(*low.allocator.mode, AllocatorMode::Arena);
  QCOMPARE(*builtin("Built-in GEMM").toggles.gemm, GemmBackend::Builtin);
  QCOMPARE(builtin("CPU only").ladderRung, LadderRung::Cpu);
}

void TestProfiles::forbiddenVariablesAreRefusedByName() {
  for (const char* name : {"LD_PRELOAD", "PATH", "LD_LIBRARY_PATH", "HOME", "PYTHONPATH"}) {
    const QString message = errorOf(std::string(R"({"name": "x", "description": "d", )"
                                                R"("environment": {")") +
                                    name + R"(": "1"}})");
    QVERIFY2(message.contains("user.json") && message.contains(QString("environment.") + name) &&
                 message.contains("not allowed"),
             qPrintable(message));
  }
  QVERIFY(whyVariableIsForbidden("HSA_OVERRIDE_GFX_VERSION").empty());
  QVERIFY(whyVariableIsForbidden("MIOPEN_FIND_MODE").empty());
  QVERIFY(!whyVariableIsForbidden("hip_visible_devices").empty());
}

void TestProfiles::folkloreVariablesAreFlaggedWithTheRealAlternative() {
  const ParsedProfile parsed =
      parseProfile(R"({"name": "old habits", "description": "d", )"
                   R"("environment": {"HIP_SERIALIZE_KERNEL": "1", "HIP_DISABLE_IPC": "1"}})",
                   "user.json");
  QCOMPARE(parsed.notes.size(), std::size_t{2});
  QCOMPARE(parsed.notes[0].field, std::string("environment.HIP_DISABLE_IPC"));
  QVERIFY(parsed.notes[1].message.find("AMD_SERIALIZE_KERNEL=3") != std::string::npos);
  QVERIFY(!folkloreAdvice("AMD_SERIALIZE_KERNEL").has_value());
}

void TestProfiles::pytorchAllocConfIsMappedOntoOurAllocator() {
  const ParsedProfile parsed = parseProfile(
      R"({"name": "torchy", "description": "d", "environment": {"PYTORCH_HIP_ALLOC_CONF": )"
      R"("max_split_size_mb:256,garbage_collection_threshold:0.6,expandable_segments:True"}})",
      "user.json");
  QCOMPARE(*parsed.profile.allocator.maxSplitSizeBytes, std::uint64_t{256} << 20);
  QCOMPARE(*parsed.profile.allocator.garbageCollectionThreshold, 0.6);
  QVERIFY(parsed.profile.environment.empty());  // mapped, not passed to the runtime
  bool ignoredNoted = false;
  for (const ProfileNote& n : parsed.notes) {
    ignoredNoted |= n.message.find("expandable_segments") != std::string::npos;
  }
  QVERIFY(ignoredNoted);
  QVERIFY(errorOf(R"({"name": "x", "description": "d", "environment": )"
                  R"({"PYTORCH_HIP_ALLOC_CONF": "max_split_size_mb:lots"}})")
              .contains("max_split_size_mb needs a non-negative number"));
}

void TestProfiles::schemaErrorsNameFileAndField() {
  QVERIFY(errorOf("{not json").contains("user.json: not valid JSON"));
  QVERIFY(errorOf("[1]").contains("must be a JSON object"));
  QVERIFY(errorOf(R"({"description": "d"})").contains("name: missing"));
  QVERIFY(errorOf(R"({"name": "x", "description": "d", "colour": "red"})")
              .contains("colour: unknown key"));
  QVERIFY(errorOf(R"({"name": "x", "description": "d", "toggles": {"serialise": true}})")
              .contains("toggles.serialise: unknown key"));
  QVERIFY(errorOf(R"({"name": "x", "description": "d", "toggles": {"micro_batch": 0}})")
              .contains("toggles.micro_batch: must be a whole number from 1"));
  QVERIFY(errorOf(R"({"name": "x", "description": "d", "toggles": {"gemm": "fast"}})")
              .contains("'fast' is not one of: vendor, builtin"));
  QVERIFY(errorOf(R"({"name": "x", "description": "d", "ladder_rung": 3})")
              .contains("ladder_rung: must be a string"));
  QVERIFY(
      errorOf(R"({"version": 2, "name": "x", "description": "d"})").contains("newer LoRAscope"));
  QVERIFY(errorOf(R"({"name": "x", "description": "d", "environment": {"HIP_X": "a\nb"}})")
              .contains("line breaks"));
}

void TestProfiles::profilesRoundTripThroughJson() {
  for (const Profile& p : builtinProfiles()) {
    const Profile back = parseProfile(profileToJson(p), "round trip").profile;
    QCOMPARE(back.name, p.name);
    QCOMPARE(back.environment, p.environment);
    QVERIFY(back.toggles == p.toggles);
    QVERIFY(back.allocator == p.allocator);
    QCOMPARE(back.ladderRung, p.ladderRung);
  }
}

void TestProfiles::storeSavesLoadsAndReportsBadFilesWithoutHidingGoodOnes() {
  QTemporaryDir dir;
  const ProfileStore store(dir.path().toStdString());
  Profile mine;
  mine.name = "My 7900 XTX";
  mine.description = "queues 2";
  mine.environment["GPU_MAX_HW_QUEUES"] = "2";
  const auto path = store.save(mine);
  QCOMPARE(path.filename().string(), std::string("my-7900-xtx.json"));
  std::ofstream(dir.filePath("broken.json").toStdString()) << R"({"name": "b", "descr)";
  std::ofstream(dir.filePath("evil.json").toStdString())
      << R"({"name": "e", "description": "d", "environment": {"LD_PRELOAD": "/tmp/x.so"}})";

  const ProfileListing listing = store.load();
  QCOMPARE(listing.profiles.size(), builtinProfiles().size() + 1);
  QCOMPARE(listing.profiles.back().profile.name, std::string("My 7900 XTX"));
  QCOMPARE(listing.profiles.back().profile.environment.at("GPU_MAX_HW_QUEUES"), std::string("2"));
  QCOMPARE(listing.problems.size(), std::size_t{2});
  QVERIFY(listing.problems[0].message.find("broken.json") != std::string::npos);
  QVERIFY(listing.problems[1].message.find("LD_PRELOAD") != std::string::npos);

  QVERIFY(store.remove("My 7900 XTX"));
  QVERIFY(!store.remove("My 7900 XTX"));
  QVERIFY(!store.remove("Balanced"));
}

void TestProfiles::storeRefusesBuiltinNames() {
  QTemporaryDir dir;
  const ProfileStore store(dir.path().toStdString());
  Profile clash = builtin("Low VRAM");
  clash.builtin = false;
  QVERIFY_THROWS_EXCEPTION(ProfileError, store.save(clash));
}

void TestProfiles::missingUserDirIsNotAnError() {
  const ProfileStore store("/nonexistent/lorascope/profiles");
  const ProfileListing listing = store.load();
  QCOMPARE(listing.profiles.size(), builtinProfiles().size());
  QVERIFY(listing.problems.empty());
}

void TestProfiles::switchingEnvironmentRestartsTheEngineButTogglesDoNot() {
  const SwitchPlan toDebug = planSwitch(defaultProfile(), builtin("Debug: serialize + blocking"));
  QVERIFY(toDebug.restartEngine);
  QCOMPARE(toDebug.environmentChanges.size(), std::size_t{2});
  QCOMPARE(toDebug.environmentChanges[0], std::string("AMD_SERIALIZE_KERNEL: (unset) → 3"));
  QVERIFY(*toDebug.toggles.serialize);

  const SwitchPlan toGemm = planSwitch(defaultProfile(), builtin("Built-in GEMM"));
  QVERIFY(!toGemm.restartEngine);
  QCOMPARE(*toGemm.toggles.gemm, GemmBackend::Builtin);
}

void TestProfiles::injectionVariablesOversizedValuesAndDuplicateNamesAreRefused() {
  // Issue 20 item 8: these passed the allow-list through their prefixes (HSA_, CUDA_).
  for (const char* name : {"HSA_TOOLS_LIB", "CUDA_INJECTION64_PATH"}) {
    const QString message = errorOf(std::string(R"({"name": "x", "description": "d", )"
                                                R"("environment": {")") +
                                    name + R"(": "/tmp/evil.so"}})");
    QVERIFY2(message.contains("loads a library into the process"), qPrintable(message));
  }
  // Every name is on the list or refused, also within the old prefixes.
  QVERIFY(whyVariableIsForbidden("HIP_SOMETHING_MADE_UP").find("not on LoRAscope's list") !=
          std::string::npos);
  QVERIFY(whyVariableIsForbidden("ROCBLAS_TENSILE_LIBPATH").find("HIP_VISIBLE_DEVICES") !=
          std::string::npos);  // the refusal lists what is allowed
  for (const Profile& p : builtinProfiles()) {
    for (const auto& [name, value] : p.environment) {
      QVERIFY2(whyVariableIsForbidden(name).empty(), name.c_str());
    }
  }
  // A value over the 128 KiB the OS allows one variable.
  const std::string huge(128 * 1024, '1');
  QVERIFY(errorOf(R"({"name": "x", "description": "d", "environment": {"AMD_LOG_LEVEL": ")" + huge +
                  R"("}})")
              .contains("longer than the operating system allows"));
  // Two files with one name: the first loads, the second is reported.
  QTemporaryDir dir;
  for (const char* file : {"a.json", "b.json"}) {
    std::ofstream(dir.filePath(file).toStdString())
        << R"({"name": "twin", "description": "d", "environment": {"AMD_LOG_LEVEL": "1"}})";
  }
  const ProfileListing listing = ProfileStore(dir.path().toStdString()).load();
  QCOMPARE(listing.problems.size(), std::size_t{1});
  QVERIFY(listing.problems[0].file.filename() == "b.json");
  QVERIFY2(listing.problems[0].message.find("a.json already has") != std::string::npos,
           listing.problems[0].message.c_str());
  QCOMPARE(std::count_if(listing.profiles.begin(), listing.profiles.end(),
                         [](const ParsedProfile& p) { return p.profile.name == "twin"; }),
           std::ptrdiff_t{1});
}

#endif  // Q_MOC_RUN

void TestProfiles::oneEnvironmentPolicyForTheEngineAndExternalTrainers() {
  // On the list: both. PyTorch's allocator conf: mapped for the engine, verbatim for trainers.
  QCOMPARE(variablePolicy("GPU_MAX_HW_QUEUES").engine, VariableUse::Pass);
  QCOMPARE(variablePolicy("GPU_MAX_HW_QUEUES").external, VariableUse::Pass);
  QCOMPARE(variablePolicy("PYTORCH_HIP_ALLOC_CONF").engine, VariableUse::Map);
  QCOMPARE(variablePolicy("PYTORCH_HIP_ALLOC_CONF").external, VariableUse::Pass);
  // PyTorch's and ROCm's families: external trainers only, said so in a note.
  for (const char* name : {"TORCH_BLAS_PREFER_HIPBLASLT", "MIOPEN_DEBUG_CONV_GEMM",
                           "HIP_SOMETHING_MADE_UP", "HSA_ENABLE_IPC_MODE_LEGACY"}) {
    QCOMPARE(variablePolicy(name).engine, VariableUse::Ignore);
    QCOMPARE(variablePolicy(name).external, VariableUse::Pass);
  }
  // Refused for everyone, with the reason: code loaders, also inside the families, and others.
  for (const char* name : {"LD_PRELOAD", "HSA_TOOLS_LIB", "ROCBLAS_TENSILE_LIBPATH",
                           "TORCH_EXTENSIONS_DIR", "PATH", "PYTHONPATH"}) {
    QCOMPARE(variablePolicy(name).external, VariableUse::Refuse);
    QVERIFY(!variablePolicy(name).reason.empty());
  }
  const ParsedProfile parsed = parseProfile(
      R"({"name": "torch", "description": "d", "environment": {"PYTORCH_HIP_ALLOC_CONF": )"
      R"("expandable_segments:True", "TORCH_BLAS_PREFER_HIPBLASLT": "0"}})",
      "user.json");
  QVERIFY(parsed.profile.environment.empty());  // the engine gets neither as a variable
  QCOMPARE(parsed.profile.externalEnvironment.at("PYTORCH_HIP_ALLOC_CONF"),
           std::string("expandable_segments:True"));
  QCOMPARE(parsed.profile.externalEnvironment.at("TORCH_BLAS_PREFER_HIPBLASLT"), std::string("0"));
  // Saved and read back, they stay where they were.
  const ParsedProfile again = parseProfile(profileToJson(parsed.profile), "user.json");
  QCOMPARE(again.profile.externalEnvironment, parsed.profile.externalEnvironment);
}

QTEST_APPLESS_MAIN(TestProfiles)
#include "test_profiles.moc"

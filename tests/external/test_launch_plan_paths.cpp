// test_launch_plan_paths.cpp — external/LaunchPlan.h with the trainer's folder and a profile file
// under C:\Users\Łukasz\日本, named as the command line and the GUI give them (UTF-8 text): the
// checkpoint glob finds the newest checkpoint there and the resume argument names it; a profile
// file there is read, and a missing one is an error that names it. Qt-free, so that the Windows
// cross-build runs it under Wine, where a path made from a narrow string (or a file opened by one)
// goes through the ANSI code page and these names are lost.
#include "TempDir.h"
#include "TestRunner.h"

#include <filesystem>
#include <fstream>

#include "ExpectError.h"
#include "external/LaunchPlan.h"
#include "external/OutputParser.h"  // defines: ExternalError
#include "profiles/Builtins.h"
#include "profiles/ProfileJson.h"

using namespace lorascope;
namespace fs = std::filesystem;

TEST_CASE(checkpointGlobUnderNonAsciiNamesFindsTheNewest) {
  lstest::TempDir tmp;
  const fs::path work = tmp.nonAsciiFolder();
  const fs::path older = work / "out" / "checkpoint-500";
  const fs::path newer = work / "out" / "checkpoint-1000";
  // Made after the other, so newer by its time or (the same tick) by the number in its name. Not
  // fs::last_write_time: Wine cannot set a folder's time.
  fs::create_directories(older);
  fs::create_directories(newer);

  const auto absolute =
      external::newestCheckpoint(lstest::utf8Text(work / "out") + "/checkpoint-*");
  VERIFY(absolute.has_value());
  COMPARE(*absolute, newer);

  external::SupervisedCommand command;
  command.program = "python3";
  command.workingDirectory = lstest::utf8Text(work);
  command.checkpointGlob = "out/checkpoint-*";
  command.resumeArgument = "--resume_from_checkpoint {checkpoint_dir}";
  const external::LaunchSpec spec = external::planLaunch(
      command, profiles::defaultProfile(), runtime::RecoveryRung::VendorBlas, 0, true);
  VERIFY(spec.checkpoint.has_value());
  COMPARE(*spec.checkpoint, newer);
  COMPARE(spec.arguments,
          (std::vector<std::string>{"--resume_from_checkpoint", lstest::utf8Text(newer)}));
  COMPARE(external::checkpointStep(*spec.checkpoint), std::int64_t{1000});
}

TEST_CASE(profileFileUnderNonAsciiNamesIsReadAndNamed) {
  lstest::TempDir tmp;
  const fs::path file = tmp.nonAsciiFolder() / "mine.json";
  profiles::Profile mine;
  mine.name = "Mine";
  mine.description = "queues 2";
  mine.environment["GPU_MAX_HW_QUEUES"] = "2";
  std::ofstream(file, std::ios::binary) << profiles::profileToJson(mine);
  const profiles::Profile read = external::findProfile(lstest::utf8Text(file));
  COMPARE(read.name, std::string("Mine"));
  COMPARE(read.environment.at("GPU_MAX_HW_QUEUES"), std::string("2"));

  const fs::path missing = tmp.nonAsciiFolder() / "missing.json";
  VERIFY(test::throwsWith<external::ExternalError>(
      [&] { external::findProfile(lstest::utf8Text(missing)); },
      {"profile " + lstest::utf8Text(missing) + ": cannot be read"}));
}

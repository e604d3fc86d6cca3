// cli/Commands.h — the subcommands of lorascope-train. Each takes the arguments after its
// name and returns the process exit code; each lives in its own cmd_<name>.cpp with the table of
// its options (job::CommandSpec), from which its parser, its --help and the usage come.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/Protocol.h"
#include "job/CliArgs.h"  // defines: CommandSpec

namespace lorascope::cli {

using Args = std::vector<std::string>;

int runBench(const Args& args);         // cmd_bench.cpp
int runDemo(const Args& args);          // cmd_demo.cpp
int runDevices(const Args& args);       // cmd_devices.cpp
int runDoctor(const Args& args);        // cmd_doctor.cpp (+ cmd_doctor_bundle.cpp)
int runEngine(const Args& args);        // cmd_engine.cpp
int runEval(const Args& args);          // cmd_eval.cpp
int runExport(const Args& args);        // cmd_export.cpp
int runGenerate(const Args& args);      // cmd_generate.cpp
int runInspectModel(const Args& args);  // cmd_inspect_model.cpp
int runProfile(const Args& args);       // cmd_profile.cpp
int runSupervise(const Args& args);     // cmd_supervise.cpp (external/CommandHost.h)
int runTokenize(const Args& args);      // cmd_tokenize.cpp
int runTrain(const Args& args);         // cmd_train.cpp (options: job/RunOptions.h)
int runValidateData(const Args& args);  // cmd_validate_data.cpp

// "1, 2,3" -> {1, 2, 3}; throws UsageError naming --option and the item that is not an int32
// (cmd_eval.cpp; eval and generate take --ids).
std::vector<std::int32_t> parseIdList(const std::string& option, const std::string& text);

// How an engine of this build introduces itself (version, flavour, devices); cmd_engine.cpp.
engine::HelloEvent engineHello();
const job::CommandSpec& benchCommand();
const job::CommandSpec& demoCommand();
const job::CommandSpec& devicesCommand();
const job::CommandSpec& doctorCommand();
const job::CommandSpec& engineCommand();
const job::CommandSpec& evalCommand();
const job::CommandSpec& exportCommand();
const job::CommandSpec& generateCommand();
const job::CommandSpec& inspectModelCommand();
const job::CommandSpec& profileCommand();
const job::CommandSpec& superviseCommand();
const job::CommandSpec& tokenizeCommand();
const job::CommandSpec& validateDataCommand();

}  // namespace lorascope::cli

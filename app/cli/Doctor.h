// cli/Doctor.h — what `lorascope-train doctor` found (cmd_doctor.cpp), and the support bundle
// written from it (cmd_doctor_bundle.cpp).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::cli::doctor {

enum class Verdict { Pass, Warn, Fail, Skip };
const char* toString(Verdict verdict);  // "pass", "warn", "fail", "skip"

struct Check {
  std::string id;     // "runtime", "architecture", ...
  std::string title;  // "GPU runtime and driver"
  Verdict verdict = Verdict::Pass;
  std::string summary;             // one line
  std::vector<std::string> lines;  // details
  std::vector<std::string> fixes;  // what to try, most useful first (failures and warnings)
  nlohmann::json data = nlohmann::json::object();  // the numbers, for --json
};

struct Report {
  std::string header;  // "lorascope-train 0.1.0, hip-nvidia build for sm_90"
  // Without a GPU to check, the line the report leads with: "no GPU found: this is what runs on
  // the CPU (the cpu build has no GPU code)"; "" when the GPU checks ran.
  std::string cpuOnly;
  std::vector<Check> checks;
  bool failed() const;
};

nlohmann::json toJson(const Report& report);
std::string toText(const Report& report);

// The environment variables whose values a report or a bundle may show: those a profile may set
// (HIP_, AMD_, HSA_, ROCR_, CUDA_, ... see profiles/Environment.h) and PYTORCH_*_ALLOC_CONF.
bool variableAllowed(const std::string& name);

struct BundleInputs {
  const Report* report = nullptr;
  std::optional<std::filesystem::path> runDir;  // --run: its config, metrics and fault ledger
  std::optional<std::string> profileName;       // --profile: the active profile
};
// Writes the support archive (an uncompressed tar) to `file`: README.txt, versions.txt,
// report.txt, report.json, environment.txt, telemetry.json, profile.json, run/…; no dataset
// text, no weights, no variable outside variableAllowed, the home directory written as "~" and
// the user name as "<user>". Returns the names of the entries. Throws std::runtime_error naming
// the file when it cannot be written.
std::vector<std::string> writeBundle(const std::filesystem::path& file, const BundleInputs& inputs);

}  // namespace lorascope::cli::doctor

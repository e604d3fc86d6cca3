// cli/cmd_doctor_bundle.cpp — `doctor --bundle FILE`: the support archive a user attaches to a
// bug report. A plain tar (POSIX ustar) of text files:
//   README.txt       what the archive holds and what it leaves out
//   versions.txt     LoRAscope's build, the GPUs and runtime, the OS and kernel
//   report.txt/json  the doctor report
//   environment.txt  the GPU variables set (only names variableAllowed accepts, with values)
//   telemetry.json   three samples of every telemetry provider, 0.5 s apart
//   profile.json     the active profile (--profile NAME), when named
//   run/config.json, run/metrics.jsonl, run/faults.ledger   the run folder's (--run RUN_DIR)
// Left out on purpose: dataset text (a run's data file, any example), weights and checkpoints,
// every other environment variable. Every file passes through redact(): the home directory is
// written "~" and the user name "<user>".
#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli/Doctor.h"
#include "common/OsError.h"   // defines: pathText
#include "common/Platform.h"  // defines: currentUserName, homeDirectory
#include "compute/BuildInfo.h"
#include "job/EngineJob.h"  // defines: kFaultLedgerFile
#include "profiles/ProfileJson.h"
#include "profiles/ProfileStore.h"
#include "telemetry/Providers.h"
#include "train/RunDirectory.h"

extern char** environ;

namespace lorascope::cli::doctor {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Entry {
  std::string name;
  std::string text;
};

// The user's home directory and name, as they may appear in paths and logs.
struct Identity {
  std::string home;
  std::string user;
};

Identity identity() {
  Identity id;
  id.home = common::pathText(common::homeDirectory());
  id.user = common::currentUserName();
  while (id.home.size() > 1 && id.home.back() == '/') {
    id.home.pop_back();
  }
  return id;
}

void replaceAll(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty()) {
    return;
  }
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// The home directory first (so "/home/ann/x" becomes "~/x"), then any remaining user name, also
// inside other paths (/tmp/ann-cache); names of one or two letters are left, being too likely to
// be parts of other words.
std::string redact(std::string text, const Identity& id) {
  if (id.home.size() > 1) {
    replaceAll(text, id.home, "~");
  }
  if (id.user.size() >= 3 && id.user != "root") {
    replaceAll(text, id.user, "<user>");
  }
  return text;
}

std::string readText(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string versionsText() {
  std::ostringstream out;
  out << compute::describeBuildAndDevices(compute::queryGpuInventory());
  std::ifstream osRelease("/etc/os-release");
  for (std::string line; std::getline(osRelease, line);) {
    if (line.rfind("PRETTY_NAME=", 0) == 0) {
      out << "os: " << line.substr(12) << "\n";
    }
  }
  out << "kernel: " << readText("/proc/sys/kernel/osrelease");
  for (const fs::path file :
       {"/opt/rocm/.info/version", "/proc/driver/nvidia/version", "/sys/module/amdgpu/version"}) {
    if (fs::exists(file)) {
      out << file.string() << ": " << readText(file);
    }
  }
  return out.str();
}

std::string environmentText() {
  std::ostringstream out;
  out << "# The GPU variables set when the bundle was written (no other variable is included)\n";
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    if (variableAllowed(entry.substr(0, entry.find('=')))) {
      out << entry << "\n";
    }
  }
  return out.str();
}

json metricsJson(const telemetry::Snapshot& snapshot) {
  json devices = json::array();
  for (const telemetry::DeviceReading& d : snapshot.devices) {
    json reading = {{"index", d.index}};
    telemetry::forEachMetric(d, [&](const char* name, std::optional<double> value) {
      reading[name] = value ? json(*value) : json(nullptr);
    });
    devices.push_back(reading);
  }
  json processes = json::array();
  for (const telemetry::ProcessReading& p : snapshot.processes) {
    processes.push_back({{"pid", p.pid},
                         {"name", p.name},
                         {"device", p.deviceIndex ? json(*p.deviceIndex) : json(nullptr)},
                         {"vram_bytes", p.vramBytes ? json(*p.vramBytes) : json(nullptr)}});
  }
  json out = {{"devices", devices}, {"processes", processes}};
  if (snapshot.host) {
    json host = json::object();
    telemetry::forEachMetric(*snapshot.host, [&](const char* name, std::optional<double> value) {
      host[name] = value ? json(*value) : json(nullptr);
    });
    out["host"] = host;
  }
  return out;
}

std::string telemetryText() {
  telemetry::ProviderSet providers = telemetry::openProviders();
  std::vector<std::shared_ptr<telemetry::Provider>> all = providers.gpu;
  if (providers.host) {
    all.push_back(providers.host);
  }
  json doc = {{"unavailable", json::array()}, {"samples", json::array()}};
  for (const telemetry::UnavailableProvider& u : providers.unavailable) {
    doc["unavailable"].push_back({{"provider", u.name}, {"reason", u.reason}});
  }
  for (int sample = 0; sample < 3; ++sample) {
    if (sample > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    for (const auto& provider : all) {
      telemetry::Snapshot snapshot;
      json item = {{"sample", sample}, {"provider", provider->name()}};
      if (provider->refresh(snapshot)) {
        item["readings"] = metricsJson(snapshot);
      } else {
        item["error"] = provider->lastError();
      }
      doc["samples"].push_back(item);
    }
  }
  return doc.dump(2) + "\n";
}

std::string profileText(const std::optional<std::string>& name) {
  if (!name) {
    return "{\"note\": \"no profile named (the app passes its active one; on the command line: "
           "--profile NAME)\"}\n";
  }
  const profiles::ProfileStore store(profiles::ProfileStore::defaultUserDir());
  for (const profiles::ParsedProfile& p : store.load().profiles) {
    if (p.profile.name == *name) {
      return profiles::profileToJson(p.profile);
    }
  }
  return json({{"note", "no profile named '" + *name + "' (built-in or in " +
                            common::pathText(store.userDir()) + ")"}})
             .dump(2) +
         "\n";
}

// The run folder's own records: its config (paths, options; the data file is named, never
// copied), the metrics lines (numbers per step) and the fault ledger (incidents injected).
std::vector<Entry> runEntries(const fs::path& dir) {
  std::vector<Entry> out;
  for (const char* name : {train::kRunConfigFile, train::kMetricsFile, job::kFaultLedgerFile}) {
    const fs::path file = dir / name;
    if (fs::is_regular_file(file)) {
      out.push_back({std::string("run/") + name, readText(file)});
    }
  }
  if (out.empty()) {
    out.push_back({"run/MISSING.txt", "no config.json, metrics.jsonl or faults.ledger in " +
                                          common::pathText(dir) + "\n"});
  }
  return out;
}

// --- ustar --------------------------------------------------------------------------------

void octal(char* field, std::size_t width, std::uint64_t value) {
  std::snprintf(field, width, "%0*llo", static_cast<int>(width - 1),
                static_cast<unsigned long long>(value));
}

std::string tarEntry(const Entry& e, std::time_t now) {
  if (e.name.size() >= 100) {
    throw std::runtime_error("bundle entry name too long: " + e.name);
  }
  std::array<char, 512> header{};
  std::memcpy(header.data(), e.name.data(), e.name.size());
  octal(header.data() + 100, 8, 0644);
  octal(header.data() + 108, 8, 0);
  octal(header.data() + 116, 8, 0);
  octal(header.data() + 124, 12, e.text.size());
  octal(header.data() + 136, 12, static_cast<std::uint64_t>(now));
  header[156] = '0';
  std::memcpy(header.data() + 257, "ustar", 6);
  std::memcpy(header.data() + 263, "00", 2);
  std::memset(header.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (char ch : header) {
    sum += static_cast<unsigned char>(ch);
  }
  std::snprintf(header.data() + 148, 8, "%06o", sum);
  header[155] = ' ';
  std::string out(header.data(), header.size());
  out += e.text;
  out.append((512 - e.text.size() % 512) % 512, '\0');
  return out;
}

}  // namespace

std::vector<std::string> writeBundle(const fs::path& file, const BundleInputs& inputs) {
  const Identity id = identity();
  std::vector<Entry> entries;
  entries.push_back({"README.txt",
                     "LoRAscope support bundle, written by `lorascope-train doctor --bundle`.\n"
                     "Holds: versions, the doctor report, the GPU environment variables, "
                     "telemetry samples, the active profile and the run folder's config, "
                     "metrics and fault ledger.\n"
                     "Leaves out: dataset text, weights and checkpoints, every other "
                     "environment variable. The home directory reads \"~\" and the user name "
                     "\"<user>\".\n"});
  entries.push_back({"versions.txt", versionsText()});
  entries.push_back({"report.txt", toText(*inputs.report)});
  entries.push_back({"report.json", toJson(*inputs.report).dump(2) + "\n"});
  entries.push_back({"environment.txt", environmentText()});
  entries.push_back({"telemetry.json", telemetryText()});
  entries.push_back({"profile.json", profileText(inputs.profileName)});
  if (inputs.runDir) {
    for (Entry& e : runEntries(*inputs.runDir)) {
      entries.push_back(std::move(e));
    }
  }
  std::string archive;
  const std::time_t now = std::time(nullptr);
  std::vector<std::string> names;
  for (Entry& e : entries) {
    e.text = redact(std::move(e.text), id);
    archive += tarEntry(e, now);
    names.push_back(e.name);
  }
  archive.append(1024, '\0');
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(archive.data(), static_cast<std::streamsize>(archive.size()));
  out.close();
  if (!out) {
    throw std::runtime_error("--bundle " + common::pathText(file) + ": cannot be written");
  }
  return names;
}

}  // namespace lorascope::cli::doctor

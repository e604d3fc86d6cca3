// external/LaunchPlan.cpp — rung → profile → environment and arguments; templates; the glob.
#include "external/LaunchPlan.h"

#include <algorithm>
#include <cctype>

#include <fstream>
#include <sstream>

#include "common/OsError.h"         // defines: pathFromUtf8, pathText
#include "external/OutputParser.h"  // defines: ExternalError
#include "profiles/Builtins.h"
#include "profiles/ProfileJson.h"
#include "profiles/ProfileStore.h"

namespace lorascope::external {
namespace fs = std::filesystem;
namespace {

// fnmatch-style: * any run of characters but '/', ? one character.
bool wildcardMatch(std::string_view pattern, std::string_view name) {
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*')
    ++p;
  return p == pattern.size();
}

std::int64_t lastNumber(const std::string& name) {
  std::int64_t value = -1;
  std::size_t i = name.size();
  while (i > 0 && !std::isdigit(static_cast<unsigned char>(name[i - 1])))
    --i;
  std::size_t end = i;
  while (i > 0 && std::isdigit(static_cast<unsigned char>(name[i - 1])))
    --i;
  if (i < end && end - i < 18)
    value = std::stoll(name.substr(i, end - i));
  return value;
}

}  // namespace

ExternalEnvironment mapProfileForExternal(const profiles::Profile& profile) {
  ExternalEnvironment out;
  out.variables = profile.externalEnvironment;
  for (const auto& [name, value] : profile.environment)
    out.variables[name] = value;
  auto setIfAbsent = [&](const std::string& name, const std::string& value) {
    out.variables.emplace(name, value);
  };
  using settings::Toggle;
  auto on = [&](const Toggle& toggle, const nlohmann::json& value) {
    return profiles::toggleValue(profile.toggles, toggle) == value;
  };
  if (on(Toggle::GemmBackend, settings::gemmName(settings::Gemm::BuiltIn)))
    setIfAbsent("TORCH_BLAS_PREFER_HIPBLASLT", "0");
  if (on(Toggle::Serialize, true))
    setIfAbsent("AMD_SERIALIZE_KERNEL", "3");
  if (on(Toggle::Blocking, true)) {
    setIfAbsent("HIP_LAUNCH_BLOCKING", "1");
    setIfAbsent("CUDA_LAUNCH_BLOCKING", "1");
  }
  std::string conf;
  const auto& a = profile.allocator;
  if (a.maxSplitSizeBytes)
    conf += "max_split_size_mb:" + std::to_string(*a.maxSplitSizeBytes >> 20);
  if (a.garbageCollectionThreshold) {
    std::string v = std::to_string(*a.garbageCollectionThreshold);
    v.erase(v.find_last_not_of('0') + 1);
    conf += (conf.empty() ? "" : ",") + std::string("garbage_collection_threshold:") + v;
  }
  if (a.roundupPower2Divisions)
    conf += (conf.empty() ? "" : ",") + std::string("roundup_power2_divisions:") +
            std::to_string(*a.roundupPower2Divisions);
  if (!conf.empty()) {
    setIfAbsent("PYTORCH_HIP_ALLOC_CONF", conf);
    setIfAbsent("PYTORCH_CUDA_ALLOC_CONF", conf);
  }
  if (a.mode == profiles::AllocatorMode::Arena)
    out.notes.push_back("allocator mode arena is LoRAscope's own; PyTorch's allocator has none");
  if (on(Toggle::CpuFallback, true))
    out.notes.push_back("cpu_fallback: LoRAscope cannot move an external trainer to the CPU");
  if (on(Toggle::ActivationCheckpointing, true))
    out.notes.push_back(
        "activation_checkpointing is the trainer's own setting; LoRAscope cannot switch it");
  if (profile.toggles.count(Toggle::MicroBatch) != 0)
    out.notes.push_back("micro_batch: an external trainer's batch changes through --batch-arg");
  return out;
}

const profiles::Profile* profileForRung(runtime::RecoveryRung rung) {
  if (rung == runtime::RecoveryRung::VendorBlas)
    return nullptr;
  for (const profiles::Profile& p : profiles::builtinProfiles()) {
    if (p.ladderRung == rung)  // the first of the rung: "Debug: serialize + blocking"
      return &p;
  }
  return nullptr;
}

std::vector<std::string> splitTemplate(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  bool inWord = false;
  char quote = 0;
  for (char c : text) {
    if (quote != 0) {
      if (c == quote)
        quote = 0;
      else
        word += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      inWord = true;
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      if (inWord)
        words.push_back(std::move(word));
      word.clear();
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord)
    words.push_back(std::move(word));
  return words;
}

std::vector<std::string> fillTemplate(const std::vector<std::string>& words,
                                      const std::string& placeholder, const std::string& value) {
  std::vector<std::string> out;
  for (std::string word : words) {
    for (std::size_t at; (at = word.find(placeholder)) != std::string::npos;)
      word.replace(at, placeholder.size(), value);
    out.push_back(std::move(word));
  }
  return out;
}

std::int64_t checkpointStep(const fs::path& checkpoint) {
  return std::max<std::int64_t>(0, lastNumber(common::pathText(checkpoint.filename())));
}

std::optional<fs::path> newestCheckpoint(const std::string& glob, const fs::path& base) {
  if (glob.empty())
    return std::nullopt;
  // Walk the pattern one part at a time; parts without wildcards are taken as they are.
  const fs::path pattern = common::pathFromUtf8(glob);  // UTF-8 text, not the code page
  std::vector<fs::path> current{pattern.is_absolute() ? pattern.root_path() : base};
  for (const fs::path& part : pattern.relative_path()) {
    const std::string text = common::pathText(part);
    std::vector<fs::path> next;
    for (const fs::path& folder : current) {
      if (text.find_first_of("*?") == std::string::npos) {
        next.push_back(folder / part);
        continue;
      }
      std::error_code error;
      const fs::path dir = folder.empty() ? fs::path(".") : folder;
      for (const auto& entry : fs::directory_iterator(dir, error)) {
        if (wildcardMatch(text, common::pathText(entry.path().filename())))
          next.push_back(folder / entry.path().filename());
      }
    }
    current = std::move(next);
  }
  std::optional<fs::path> best;
  fs::file_time_type bestTime{};
  for (const fs::path& p : current) {
    std::error_code error;
    if (!fs::exists(p, error))
      continue;
    const auto time = fs::last_write_time(p, error);
    if (error)
      continue;
    if (!best || time > bestTime ||
        (time == bestTime && lastNumber(common::pathText(p.filename())) >
                                 lastNumber(common::pathText(best->filename())))) {
      best = p;
      bestTime = time;
    }
  }
  return best;
}

LaunchSpec planLaunch(const SupervisedCommand& command, const profiles::Profile& profile,
                      runtime::RecoveryRung rung, int batch, bool resume) {
  LaunchSpec spec;
  spec.program = command.program;
  spec.workingDirectory = command.workingDirectory;
  spec.arguments = command.arguments;
  spec.environment = mapProfileForExternal(profile).variables;
  spec.profileName = profile.name;
  // Rungs add caution on top of the user's profile, each the built-in profile of its rung.
  for (int r = 1; r <= static_cast<int>(rung); ++r) {
    if (const profiles::Profile* p = profileForRung(static_cast<runtime::RecoveryRung>(r))) {
      for (const auto& [name, value] : mapProfileForExternal(*p).variables)
        spec.environment[name] = value;
      spec.profileName = p->name;
    }
  }
  if (!command.batchArgument.empty() && batch > 0) {
    for (std::string& word :
         fillTemplate(splitTemplate(command.batchArgument), "{batch}", std::to_string(batch)))
      spec.arguments.push_back(std::move(word));
  }
  if (resume && !command.resumeArgument.empty()) {
    spec.checkpoint =
        newestCheckpoint(command.checkpointGlob, common::pathFromUtf8(command.workingDirectory));
    if (spec.checkpoint) {
      for (std::string& word : fillTemplate(splitTemplate(command.resumeArgument),
                                            "{checkpoint_dir}", common::pathText(*spec.checkpoint)))
        spec.arguments.push_back(std::move(word));
    }
  }
  return spec;
}

std::string describeEnvironment(const std::map<std::string, std::string>& environment) {
  std::string out;
  for (const auto& [name, value] : environment)
    out += (out.empty() ? "" : " ") + name + "=" + value;
  return out.empty() ? "(none)" : out;
}

profiles::Profile findProfile(const std::string& name) {
  if (name.ends_with(".json") || name.find('/') != std::string::npos) {
    std::ifstream in(common::pathFromUtf8(name), std::ios::binary);  // UTF-8, not the code page
    if (!in)
      throw ExternalError("profile " + name + ": cannot be read");
    std::ostringstream text;
    text << in.rdbuf();
    try {
      return profiles::parseProfile(text.str(), name).profile;
    } catch (const profiles::ProfileError& e) {
      throw ExternalError(std::string("profile: ") + e.what());
    }
  }
  const profiles::ProfileListing listing =
      profiles::ProfileStore(profiles::ProfileStore::defaultUserDir()).load();
  std::string names;
  for (const profiles::ParsedProfile& p : listing.profiles) {
    if (p.profile.name == name)
      return p.profile;
    names += (names.empty() ? "" : ", ") + ("'" + p.profile.name + "'");
  }
  std::string problems;
  for (const profiles::ProfileLoadProblem& p : listing.problems)
    problems += "; " + p.message;
  throw ExternalError("profile: no usable profile named '" + name + "' (profiles: " + names + ")" +
                      problems);
}

}  // namespace lorascope::external

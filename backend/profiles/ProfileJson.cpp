// profiles/ProfileJson.cpp — strict reading and writing of profile files.
#include "profiles/ProfileJson.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/EnumNames.h"
#include "common/JsonReader.h"
#include "memory/AllocatorPolicy.h"  // defines: kAllocatorModeNames, modeName
#include "profiles/Environment.h"
#include "settings/Registry.h"  // defines: registry, toggleValueProblem

namespace lorascope::profiles {
namespace {

using common::JsonReader;
using nlohmann::json;

// The names of the enums in profile files, one table each (both directions); the allocator's
// modes are memory/AllocatorPolicy.h's.
constexpr common::EnumName<EnginePaths> kEnginePathNames[] = {
    {EnginePaths::Same, "same"}, {EnginePaths::Wsl, "wsl"}, {EnginePaths::Prefixes, "prefixes"}};
static_assert(common::coversEnum(kEnginePathNames));

// A profile is read through the one strict reader (common/JsonReader.h), whose messages name the
// file and the field ("user.json: toggles.micro_batch: …") and are thrown as ProfileError.
JsonReader profileReader(const json& object, const std::string& source) {
  return JsonReader(object, source + ": ",
                    [](const std::string& message) { throw ProfileError(message); });
}

// A profile's problems, all of them: each part of the file (a field, a toggle, a variable) is
// read on its own, so that one check names every problem at once, not the first alone.
class Problems {
 public:
  // Runs `read`; a ProfileError it throws is kept and reading goes on.
  template <typename Read>
  void read(Read&& read) {
    try {
      std::forward<Read>(read)();
    } catch (const ProfileError& e) {
      messages_.push_back(e.what());
    }
  }
  // Throws one ProfileError naming every problem kept, a line each.
  void throwIfAny() const {
    if (messages_.empty()) {
      return;
    }
    std::string all;
    for (const std::string& m : messages_) {
      all += (all.empty() ? "" : "\n") + m;
    }
    throw ProfileError(all);
  }

 private:
  std::vector<std::string> messages_;
};

// The keys of "toggles" and the values they take are the settings registry's (a setting's
// profileKey and its toggle's value type).
LiveToggles readToggles(const JsonReader& t, Problems& problems) {
  const settings::Registry& registry = settings::registry();
  LiveToggles toggles;
  for (const auto& item : t.value().items()) {
    const std::string& key = item.key();  // named: a lambda may not capture a structured binding
    const json& value = item.value();     // (clang before 16)
    problems.read([&] {
      const settings::Setting* setting = registry.findProfileKey(key);
      if (setting == nullptr) {
        t.fail(key, "unknown key (the keys here: " + registry.profileKeys() + ")");
      }
      if (const std::string problem = settings::toggleValueProblem(*setting, value);
          !problem.empty()) {
        t.fail(key, problem);
      }
      toggles[*setting->toggle] = value;
    });
  }
  return toggles;
}

AllocatorSettings readAllocator(const JsonReader& a) {
  a.onlyKeys(
      {"mode", "max_split_size_mb", "garbage_collection_threshold", "roundup_power2_divisions"});
  AllocatorSettings s;
  if (a.has("mode")) {
    s.mode = a.choice("mode", memory::kAllocatorModeNames);
  }
  if (a.has("max_split_size_mb")) {
    s.maxSplitSizeBytes = static_cast<std::uint64_t>(a.integer("max_split_size_mb", 1, 1 << 20))
                          << 20;
  }
  if (a.has("garbage_collection_threshold")) {
    const json& v = a.at("garbage_collection_threshold");
    if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() >= 1) {
      a.fail("garbage_collection_threshold", "must be a fraction between 0 and 1");
    }
    s.garbageCollectionThreshold = v.get<double>();
  }
  if (a.has("roundup_power2_divisions")) {
    s.roundupPower2Divisions = static_cast<int>(a.integer("roundup_power2_divisions", 1, 64));
  }
  return s;
}

// "engine": {"launcher": ["wsl.exe", "-d", "Ubuntu", "--", "lorascope-train", "engine"],
//            "paths": "wsl"}  (or "same", or "prefixes" with "prefixes": [["/host", "/engine"]])
EngineLocation readEngine(const JsonReader& e) {
  e.onlyKeys({"launcher", "paths", "prefixes"});
  EngineLocation location;
  if (e.has("launcher")) {
    const json& launcher = e.at("launcher");
    if (!launcher.is_array() || launcher.empty()) {
      e.fail("launcher", "must be a list of strings: the program, then its arguments");
    }
    for (std::size_t i = 0; i < launcher.size(); ++i) {
      if (!launcher[i].is_string()) {
        e.fail("launcher[" + std::to_string(i) + "]", "must be a string");
      }
      location.launcher.push_back(launcher[i].get<std::string>());
    }
    if (location.launcher.front().empty()) {
      e.fail("launcher[0]", "the program may not be empty");
    }
  }
  if (e.has("paths")) {
    location.paths = e.choice("paths", kEnginePathNames);
  }
  if (e.has("prefixes")) {
    const json& pairs = e.at("prefixes");
    if (!pairs.is_array()) {
      e.fail("prefixes", "must be a list of [host prefix, engine prefix] pairs");
    }
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      if (!pairs[i].is_array() || pairs[i].size() != 2) {
        e.fail("prefixes[" + std::to_string(i) + "]",
               "must be a pair [host prefix, engine prefix]");
      }
      const common::JsonRow pair = e.row("prefixes", i);
      location.prefixes.emplace_back(pair.string(0), pair.string(1));
    }
  }
  if ((location.paths == EnginePaths::Prefixes) != !location.prefixes.empty()) {
    e.fail("prefixes", "are given exactly when engine.paths is \"prefixes\"");
  }
  if (location.launcher.empty() && location.paths != EnginePaths::Same) {
    e.fail("paths", "needs engine.launcher: a native engine sees this machine's paths");
  }
  return location;
}

// Explicit allocator fields win over values mapped from PYTORCH_*_ALLOC_CONF.
void mergeMissing(AllocatorSettings& into, const AllocatorSettings& from) {
  if (!into.maxSplitSizeBytes)
    into.maxSplitSizeBytes = from.maxSplitSizeBytes;
  if (!into.garbageCollectionThreshold)
    into.garbageCollectionThreshold = from.garbageCollectionThreshold;
  if (!into.roundupPower2Divisions)
    into.roundupPower2Divisions = from.roundupPower2Divisions;
}

// One variable of "environment" into `out`.
void readVariable(const JsonReader& env, const std::string& source, const std::string& name,
                  ParsedProfile& out) {
  const std::string text = env.string(name);
  if (text.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
    env.fail(name, "values may not contain line breaks or NUL characters");
  }
  const VariablePolicy policy = variablePolicy(name);
  if (policy.external == VariableUse::Refuse) {
    env.fail(name, "not allowed: " + policy.reason);
  }
  if (const std::string why = whyValueIsForbidden(name, text); !why.empty()) {
    env.fail(name, "value not allowed: " + why);
  }
  const std::string field = env.fieldName(name);
  if (policy.engine == VariableUse::Map) {
    mergeMissing(out.profile.allocator, parseAllocConf(text, source + ": " + field, out.notes));
    out.notes.push_back({field, policy.reason});
    out.profile.externalEnvironment[name] = text;
    return;
  }
  if (policy.engine == VariableUse::Ignore) {
    out.notes.push_back({field, policy.reason});
    out.profile.externalEnvironment[name] = text;
    return;
  }
  if (auto advice = folkloreAdvice(name)) {
    out.notes.push_back({field, *advice});
  }
  out.profile.environment[name] = text;
}

void readEnvironment(const JsonReader& env, const std::string& source, ParsedProfile& out,
                     Problems& problems) {
  for (const auto& item : env.value().items()) {
    const std::string& name = item.key();
    problems.read([&] { readVariable(env, source, name, out); });
  }
}

}  // namespace

ParsedProfile parseProfile(std::string_view jsonText, const std::string& source) {
  json root;
  try {
    root = json::parse(jsonText);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number no double holds (1e400)
    throw ProfileError(source + ": not valid JSON: " + e.what());
  }
  if (!root.is_object()) {
    throw ProfileError(source + ": a profile must be a JSON object");
  }
  const JsonReader r = profileReader(root, source);
  // Every part is read even after a problem in another, and all of them are reported together.
  Problems problems;
  problems.read([&] {
    r.onlyKeys({"version", "name", "description", "rationale", "environment", "toggles",
                "allocator", "ladder_rung", "engine"});
  });
  problems.read([&] {
    if (r.has("version") && r.integer("version", 1, 1 << 30) > kProfileFormatVersion) {
      r.fail("version", "written by a newer LoRAscope (format " + r.at("version").dump() +
                            "; this one reads " + std::to_string(kProfileFormatVersion) + ")");
    }
  });
  ParsedProfile out;
  Profile& p = out.profile;
  problems.read([&] {
    p.name = r.string("name");
    if (p.name.empty() || p.name.size() > 64) {
      r.fail("name", "must be 1 to 64 characters");
    }
  });
  problems.read([&] { p.description = r.string("description"); });
  problems.read([&] { p.rationale = r.stringOr("rationale", ""); });
  problems.read([&] {
    if (r.has("toggles")) {
      p.toggles = readToggles(r.object("toggles"), problems);
    }
  });
  problems.read([&] {
    if (r.has("allocator")) {
      p.allocator = readAllocator(r.object("allocator"));
    }
  });
  problems.read([&] {
    if (r.has("environment")) {
      readEnvironment(r.object("environment"), source, out, problems);
    }
  });
  problems.read([&] {
    if (r.has("ladder_rung")) {
      const std::string rung = r.string("ladder_rung");
      const std::optional<settings::Rung> parsed = settings::parseRungProfileName(rung);
      if (!parsed) {
        r.fail("ladder_rung", "'" + rung + "' is not one of: " + settings::rungProfileNameList());
      }
      p.ladderRung = *parsed;
    }
  });
  problems.read([&] {
    if (r.has("engine")) {
      p.engine = readEngine(r.object("engine"));
    }
  });
  problems.throwIfAny();
  return out;
}

std::string profileToJson(const Profile& p) {
  json root = {
      {"version", kProfileFormatVersion}, {"name", p.name}, {"description", p.description}};
  if (!p.rationale.empty())
    root["rationale"] = p.rationale;
  std::map<std::string, std::string> environment = p.externalEnvironment;
  environment.insert(p.environment.begin(), p.environment.end());
  if (!environment.empty())
    root["environment"] = environment;
  json t = json::object();
  for (const auto& [toggle, value] : p.toggles) {
    const settings::Setting* setting = settings::registry().findToggle(toggle);
    if (setting == nullptr || setting->profileKey.empty()) {
      throw std::logic_error("profile '" + p.name + "' sets " + toggle.name() +
                             ", which profiles do not set");
    }
    t[setting->profileKey] = value;
  }
  if (!t.empty())
    root["toggles"] = t;
  json a = json::object();
  if (p.allocator.mode)
    a["mode"] = memory::modeName(*p.allocator.mode);
  if (p.allocator.maxSplitSizeBytes)
    a["max_split_size_mb"] = *p.allocator.maxSplitSizeBytes >> 20;
  if (p.allocator.garbageCollectionThreshold) {
    a["garbage_collection_threshold"] = *p.allocator.garbageCollectionThreshold;
  }
  if (p.allocator.roundupPower2Divisions) {
    a["roundup_power2_divisions"] = *p.allocator.roundupPower2Divisions;
  }
  if (!a.empty())
    root["allocator"] = a;
  root["ladder_rung"] = settings::rungProfileName(p.ladderRung);
  if (p.engine != EngineLocation{}) {
    json e = {{"paths", toString(p.engine.paths)}};
    if (!p.engine.launcher.empty())
      e["launcher"] = p.engine.launcher;
    if (!p.engine.prefixes.empty())
      e["prefixes"] = p.engine.prefixes;
    root["engine"] = e;
  }
  return root.dump(2) + "\n";
}

const char* toString(EnginePaths paths) {
  return common::enumName(kEnginePathNames, paths);
}

}  // namespace lorascope::profiles

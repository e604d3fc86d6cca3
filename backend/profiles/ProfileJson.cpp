// profiles/ProfileJson.cpp — strict reading and writing of profile files.
#include "profiles/ProfileJson.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/EnumNames.h"
#include "memory/AllocatorPolicy.h"  // defines: kAllocatorModeNames, modeName
#include "profiles/Environment.h"
#include "settings/Registry.h"  // defines: registry, toggleValueProblem

namespace lorascope::profiles {
namespace {

using nlohmann::json;

// A key of the file as messages show it: as written when it is plain text, else as a JSON string
// (quoted, control characters escaped), so that a newline or a NUL in a variable's name cannot
// forge lines of the output.
std::string shownKey(const std::string& key) {
  const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  return plain ? key : json(key).dump(-1, ' ', false, json::error_handler_t::replace);
}

// The names of the enums in profile files, one table each (both directions); the allocator's
// modes are memory/AllocatorPolicy.h's.
constexpr common::EnumName<EnginePaths> kEnginePathNames[] = {
    {EnginePaths::Same, "same"}, {EnginePaths::Wsl, "wsl"}, {EnginePaths::Prefixes, "prefixes"}};
static_assert(common::coversEnum(kEnginePathNames));

class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    throw ProfileError(source_ + ": " + (field.empty() ? "" : field + ": ") + problem);
  }

  void onlyKeys(const json& object, const std::string& field,
                std::initializer_list<std::string_view> keys) const {
    for (const auto& [key, value] : object.items()) {
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        std::string known;
        for (const std::string_view name : keys) {
          known += (known.empty() ? "" : ", ") + std::string(name);
        }
        fail(field.empty() ? shownKey(key) : field + "." + shownKey(key),
             "unknown key (the keys here: " + known + ")");
      }
    }
  }

  const json& object(const json& parent, const std::string& key, const std::string& field) const {
    const json& v = parent.at(key);
    if (!v.is_object()) {
      fail(field, "must be an object");
    }
    return v;
  }

  std::string string(const json& v, const std::string& field) const {
    if (!v.is_string()) {
      fail(field, "must be a string");
    }
    return v.get<std::string>();
  }

  bool boolean(const json& v, const std::string& field) const {
    if (!v.is_boolean()) {
      fail(field, "must be true or false");
    }
    return v.get<bool>();
  }

  std::int64_t integer(const json& v, const std::string& field, std::int64_t min,
                       std::int64_t max) const {
    if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > max) {
      fail(field,
           "must be a whole number from " + std::to_string(min) + " to " + std::to_string(max));
    }
    return v.get<std::int64_t>();
  }

  template <typename Enum, std::size_t N>
  Enum choice(const json& v, const std::string& field,
              const common::EnumName<Enum> (&names)[N]) const {
    const std::string text = string(v, field);
    if (const std::optional<Enum> value = common::parseEnum(names, text)) {
      return *value;
    }
    fail(field, "'" + text + "' is not one of: " + common::enumNameList(names));
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

// The keys of "toggles" and the values they take are the settings registry's (a setting's
// profileKey and its toggle's value type).
LiveToggles readToggles(const Reader& r, const json& t) {
  const settings::Registry& registry = settings::registry();
  LiveToggles toggles;
  for (const auto& [key, value] : t.items()) {
    const settings::Setting* setting = registry.findProfileKey(key);
    if (setting == nullptr) {
      r.fail("toggles." + shownKey(key),
             "unknown key (the keys here: " + registry.profileKeys() + ")");
    }
    if (const std::string problem = settings::toggleValueProblem(*setting, value);
        !problem.empty()) {
      r.fail("toggles." + key, problem);
    }
    toggles[*setting->toggle] = value;
  }
  return toggles;
}

AllocatorSettings readAllocator(const Reader& r, const json& a) {
  r.onlyKeys(
      a, "allocator",
      {"mode", "max_split_size_mb", "garbage_collection_threshold", "roundup_power2_divisions"});
  AllocatorSettings s;
  if (a.contains("mode")) {
    s.mode = r.choice(a["mode"], "allocator.mode", memory::kAllocatorModeNames);
  }
  if (a.contains("max_split_size_mb")) {
    s.maxSplitSizeBytes = static_cast<std::uint64_t>(r.integer(
                              a["max_split_size_mb"], "allocator.max_split_size_mb", 1, 1 << 20))
                          << 20;
  }
  if (a.contains("garbage_collection_threshold")) {
    const json& v = a["garbage_collection_threshold"];
    if (!v.is_number() || v.get<double>() <= 0 || v.get<double>() >= 1) {
      r.fail("allocator.garbage_collection_threshold", "must be a fraction between 0 and 1");
    }
    s.garbageCollectionThreshold = v.get<double>();
  }
  if (a.contains("roundup_power2_divisions")) {
    s.roundupPower2Divisions = static_cast<int>(
        r.integer(a["roundup_power2_divisions"], "allocator.roundup_power2_divisions", 1, 64));
  }
  return s;
}

// "engine": {"launcher": ["wsl.exe", "-d", "Ubuntu", "--", "lorascope-train", "engine"],
//            "paths": "wsl"}  (or "same", or "prefixes" with "prefixes": [["/host", "/engine"]])
EngineLocation readEngine(const Reader& r, const json& e) {
  r.onlyKeys(e, "engine", {"launcher", "paths", "prefixes"});
  EngineLocation location;
  if (e.contains("launcher")) {
    const json& launcher = e["launcher"];
    if (!launcher.is_array() || launcher.empty()) {
      r.fail("engine.launcher", "must be a list of strings: the program, then its arguments");
    }
    for (std::size_t i = 0; i < launcher.size(); ++i) {
      location.launcher.push_back(
          r.string(launcher[i], "engine.launcher[" + std::to_string(i) + "]"));
    }
    if (location.launcher.front().empty()) {
      r.fail("engine.launcher[0]", "the program may not be empty");
    }
  }
  if (e.contains("paths")) {
    location.paths = r.choice(e["paths"], "engine.paths", kEnginePathNames);
  }
  if (e.contains("prefixes")) {
    const json& pairs = e["prefixes"];
    if (!pairs.is_array()) {
      r.fail("engine.prefixes", "must be a list of [host prefix, engine prefix] pairs");
    }
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const std::string field = "engine.prefixes[" + std::to_string(i) + "]";
      if (!pairs[i].is_array() || pairs[i].size() != 2) {
        r.fail(field, "must be a pair [host prefix, engine prefix]");
      }
      location.prefixes.emplace_back(r.string(pairs[i][0], field), r.string(pairs[i][1], field));
    }
  }
  if ((location.paths == EnginePaths::Prefixes) != !location.prefixes.empty()) {
    r.fail("engine.prefixes", "are given exactly when engine.paths is \"prefixes\"");
  }
  if (location.launcher.empty() && location.paths != EnginePaths::Same) {
    r.fail("engine.paths", "needs engine.launcher: a native engine sees this machine's paths");
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

void readEnvironment(const Reader& r, const json& env, ParsedProfile& out) {
  for (const auto& [name, value] : env.items()) {
    const std::string field = "environment." + shownKey(name);
    const std::string text = r.string(value, field);
    if (text.find_first_of(std::string("\n\r\0", 3)) != std::string::npos) {
      r.fail(field, "values may not contain line breaks or NUL characters");
    }
    const VariablePolicy policy = variablePolicy(name);
    if (policy.external == VariableUse::Refuse) {
      r.fail(field, "not allowed: " + policy.reason);
    }
    if (const std::string why = whyValueIsForbidden(name, text); !why.empty()) {
      r.fail(field, "value not allowed: " + why);
    }
    if (policy.engine == VariableUse::Map) {
      mergeMissing(out.profile.allocator,
                   parseAllocConf(text, r.source() + ": " + field, out.notes));
      out.notes.push_back({field, policy.reason});
      out.profile.externalEnvironment[name] = text;
      continue;
    }
    if (policy.engine == VariableUse::Ignore) {
      out.notes.push_back({field, policy.reason});
      out.profile.externalEnvironment[name] = text;
      continue;
    }
    if (auto advice = folkloreAdvice(name)) {
      out.notes.push_back({field, *advice});
    }
    out.profile.environment[name] = text;
  }
}

}  // namespace

ParsedProfile parseProfile(std::string_view jsonText, const std::string& source) {
  const Reader r(source);
  json root;
  try {
    root = json::parse(jsonText);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for a number no double holds (1e400)
    r.fail("", std::string("not valid JSON: ") + e.what());
  }
  if (!root.is_object()) {
    r.fail("", "a profile must be a JSON object");
  }
  r.onlyKeys(root, "",
             {"version", "name", "description", "rationale", "environment", "toggles", "allocator",
              "ladder_rung", "engine"});
  if (root.contains("version") &&
      r.integer(root["version"], "version", 1, 1 << 30) > kProfileFormatVersion) {
    r.fail("version", "written by a newer LoRAscope (format " + root["version"].dump() +
                          "; this one reads " + std::to_string(kProfileFormatVersion) + ")");
  }
  ParsedProfile out;
  Profile& p = out.profile;
  for (const char* key : {"name", "description"}) {
    if (!root.contains(key)) {
      r.fail(key, "missing");
    }
  }
  p.name = r.string(root["name"], "name");
  if (p.name.empty() || p.name.size() > 64) {
    r.fail("name", "must be 1 to 64 characters");
  }
  p.description = r.string(root["description"], "description");
  if (root.contains("rationale"))
    p.rationale = r.string(root["rationale"], "rationale");
  if (root.contains("toggles"))
    p.toggles = readToggles(r, r.object(root, "toggles", "toggles"));
  if (root.contains("allocator")) {
    p.allocator = readAllocator(r, r.object(root, "allocator", "allocator"));
  }
  if (root.contains("environment")) {
    readEnvironment(r, r.object(root, "environment", "environment"), out);
  }
  if (root.contains("ladder_rung")) {
    const std::string rung = r.string(root["ladder_rung"], "ladder_rung");
    const std::optional<settings::Rung> parsed = settings::parseRungProfileName(rung);
    if (!parsed) {
      r.fail("ladder_rung", "'" + rung + "' is not one of: " + settings::rungProfileNameList());
    }
    p.ladderRung = *parsed;
  }
  if (root.contains("engine")) {
    p.engine = readEngine(r, r.object(root, "engine", "engine"));
  }
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

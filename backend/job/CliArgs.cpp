// job/CliArgs.cpp — parsing of lorascope-train's command lines.
#include "job/CliArgs.h"

namespace lorascope::job {

CliArgs::CliArgs(const std::vector<std::string>& args, const std::set<std::string>& flags,
                 const std::set<std::string>& options) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg.rfind("--", 0) != 0 || arg == "--") {
      positional_.push_back(arg);
      continue;
    }
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (flags.count(name) != 0 && eq == std::string::npos) {
      flags_.insert(name);
    } else if (options.count(name) != 0) {
      if (eq != std::string::npos) {
        values_[name] = arg.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        values_[name] = args[++i];
      } else {
        throw UsageError("option --" + name + " needs a value");
      }
    } else {
      throw UsageError("unknown option " + arg);
    }
  }
}

std::optional<std::string> CliArgs::value(const std::string& option) const {
  const auto it = values_.find(option);
  if (it == values_.end()) {
    return std::nullopt;
  }
  return it->second;
}

std::string CliArgs::required(const std::string& option) const {
  auto v = value(option);
  if (!v) {
    throw UsageError("missing required option --" + option);
  }
  return *v;
}

}  // namespace lorascope::job

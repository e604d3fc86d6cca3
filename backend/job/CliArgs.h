// job/CliArgs.h — the small argument parser of lorascope-train: positional words and
// --flag / --key value options, with errors that name the option.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace lorascope::job {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CliArgs {
 public:
  // `flags` take no value (--json); `options` take one (--model DIR or --model=DIR).
  // Anything else starting with "--" is a UsageError naming it.
  CliArgs(const std::vector<std::string>& args, const std::set<std::string>& flags,
          const std::set<std::string>& options);

  bool has(const std::string& flag) const { return flags_.count(flag) != 0; }
  std::optional<std::string> value(const std::string& option) const;
  std::string required(const std::string& option) const;  // UsageError when absent
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  std::set<std::string> flags_;
  std::map<std::string, std::string> values_;
  std::vector<std::string> positional_;
};

}  // namespace lorascope::job

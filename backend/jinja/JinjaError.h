// JinjaError.h — the one exception type of backend/jinja. Every message names the template (its
// origin: a file, or where the text came from), the line where one is known, and what is wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace lorascope::jinja {

class JinjaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lorascope::jinja

// TextError.h — the one exception type of backend/text. Every message names the file (or the
// source the text came from) and what is wrong or unsupported in it.
#pragma once

#include <stdexcept>
#include <string>

namespace lorascope::text {

class TextError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace lorascope::text

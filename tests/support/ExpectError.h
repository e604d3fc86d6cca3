// ExpectError.h — test helper: runs a callable that must throw E, and checks that the message
// holds every expected fragment (the file, the tensor, the numbers). Plain C++: it serves both the
// QtTest programs and those on the Qt-free runner (TestRunner.h); what is missing goes to stderr.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <string>

namespace lorascope::test {

template <typename E, typename F>
bool throwsWith(F&& f, std::initializer_list<std::string> fragments) {
  try {
    f();
  } catch (const E& e) {
    const std::string message = e.what();
    for (const std::string& fragment : fragments) {
      if (message.find(fragment) == std::string::npos) {
        std::fprintf(stderr, "message \"%s\" lacks \"%s\"\n", message.c_str(), fragment.c_str());
        return false;
      }
    }
    return true;
  }
  std::fprintf(stderr, "no exception was thrown\n");
  return false;
}

}  // namespace lorascope::test

// ExpectError.h — test helper: runs a callable that must throw E, and checks that the message
// holds every expected fragment (the file, the tensor, the numbers).
#pragma once

#include <QtTest>

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
        qWarning("message \"%s\" lacks \"%s\"", message.c_str(), fragment.c_str());
        return false;
      }
    }
    return true;
  }
  qWarning("no exception was thrown");
  return false;
}

}  // namespace lorascope::test

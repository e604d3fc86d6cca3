// TestPaths.h — where a test finds its data folders and the programs it starts. Nothing of the
// checkout's or the build's location is compiled in (a test file compiles the same in every
// clone, so ccache hits and the test programs share one precompiled header): CTest sets the
// variables below for every test (the end of tests/CMakeLists.txt); scripts that run a test
// program directly set them too (scripts/gpu-check.sh, scripts/screenshots.sh).
//   LORASCOPE_TEST_SOURCE_DIR  the checkout's root (data under tests/<folder>/...)
//   LORASCOPE_TEST_BINARY_DIR  the build folder's root (files a test leaves for a later check)
//   LORASCOPE_TEST_TRAIN       the lorascope-train program of the build
//   LORASCOPE_TEST_CRASHY_ENGINE, LORASCOPE_TEST_FAKE_AMD_SMI  the stand-ins of tests/engine and
//                              tests/telemetry
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace lstest {

// The value of the environment variable `variable`; when it is unset, ends the program with a
// message naming the variable and what the test wanted from it (`wanted`).
inline std::string testEnvironment(const char* variable, const std::string& wanted) {
  const char* value = std::getenv(variable);
  if (value == nullptr || *value == '\0') {
    std::fprintf(stderr,
                 "%s is not set: this test needs it for %s. Run the test through ctest (which "
                 "sets it), or set it as tests/support/TestPaths.h says.\n",
                 variable, wanted.c_str());
    std::exit(1);
  }
  return value;
}

// <checkout>/<relative>, e.g. sourcePath("tests/model/data").
inline std::string sourcePath(const std::string& relative) {
  return testEnvironment("LORASCOPE_TEST_SOURCE_DIR", relative + " of the checkout") + "/" +
         relative;
}

// <build folder>/<relative>, e.g. buildPath("tests/train/peft_fixture").
inline std::string buildPath(const std::string& relative) {
  return testEnvironment("LORASCOPE_TEST_BINARY_DIR", relative + " of the build folder") + "/" +
         relative;
}

// The build's lorascope-train.
inline std::string trainProgram() {
  return testEnvironment("LORASCOPE_TEST_TRAIN", "the build's lorascope-train");
}

// tests/engine's crashy_engine (an engine that misbehaves on request).
inline std::string crashyEngine() {
  return testEnvironment("LORASCOPE_TEST_CRASHY_ENGINE", "the build's crashy_engine");
}

// tests/telemetry's fake_amd_smi (a libamd_smi answering with recorded values).
inline std::string fakeAmdSmi() {
  return testEnvironment("LORASCOPE_TEST_FAKE_AMD_SMI", "the build's fake_amd_smi library");
}

}  // namespace lstest

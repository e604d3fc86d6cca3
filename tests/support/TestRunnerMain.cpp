// TestRunnerMain.cpp — main() of the Qt-free test runner, a member of its own in the static
// library: a test program that needs its own main() (one that is also its own child process,
// test_child_process) defines it and calls lstest::runTests, and this one is never linked in.
#include "TestRunner.h"

int main(int argc, char** argv) {
  return lstest::runTests(argc, argv);
}

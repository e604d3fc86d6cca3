// test_test_runner.cpp — the Qt-free runner itself (TestRunner.h): COMPARE's rules for floating
// point, mixed-sign integers and C strings; failed checks, FAIL and SKIP end a test by throwing;
// data rows reach FETCH in order, and a FETCH of the wrong type fails instead of reading garbage.
#include "TestRunner.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace {

template <typename F>
bool fails(F&& check) {
  try {
    check();
  } catch (const lstest::Failure&) {
    return true;
  }
  return false;
}

std::vector<std::string> g_seenRows;

}  // namespace

TEST_CASE(floatingPointComparesAsQCompareDoes) {
  using lstest::detail::equal;
  VERIFY(equal(1.0, 1.0 + 1e-13));
  VERIFY(!equal(1.0, 1.0 + 1e-11));
  VERIFY(equal(1.0f, 1.0f + 1e-6f));
  VERIFY(!equal(1.0f, 1.0f + 1e-4f));
  VERIFY(equal(1e-13, 0.0));  // within 1e-12 of zero counts as zero
  VERIFY(!equal(1e-11, 0.0));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  VERIFY(equal(nan, nan));
  VERIFY(!equal(1.0, nan));
  VERIFY(equal(inf, inf));
  VERIFY(!equal(-inf, inf));
  VERIFY(!equal(0.1f, 0.1));  // float against double: compared as doubles, 0.1f is not 0.1
}

TEST_CASE(integersCompareByValueAcrossSignedness) {
  using lstest::detail::equal;
  VERIFY(equal(std::uint64_t{5}, 5));
  VERIFY(!equal(std::uint32_t{0xffffffff}, -1));  // == would convert -1 and say equal
  VERIFY(equal('a', 'a'));
  const char* left = "same";
  const std::string right = "same";
  VERIFY(equal(left, std::string("same").c_str()));  // C strings by content, not address
  VERIFY(equal(right, left));
}

TEST_CASE(failedChecksThrowAndSayWhere) {
  try {
    COMPARE(1 + 1, 3);
    FAIL("COMPARE(1 + 1, 3) passed");
  } catch (const lstest::Failure& f) {
    VERIFY2(f.message.find("Actual   (1 + 1): 2") != std::string::npos, f.message);
    VERIFY2(f.message.find("Expected (3): 3") != std::string::npos, f.message);
    VERIFY2(f.message.find("test_test_runner.cpp") != std::string::npos, f.message);
  }
  VERIFY(fails([] { VERIFY(1 > 2); }));
  VERIFY(fails([] { VERIFY_THROWS_EXCEPTION(std::runtime_error, (void)0); }));
  VERIFY(
      !fails([] { VERIFY_THROWS_EXCEPTION(std::runtime_error, throw std::runtime_error("x")); }));
  bool skipped = false;
  try {
    SKIP("no fixture");
  } catch (const lstest::Skipped& s) {
    skipped = s.reason == "no fixture";
  }
  VERIFY(skipped);
}

TEST_DATA(rowsArriveInOrder) {
  lstest::addColumn<std::string>("name");
  lstest::addColumn<int>("number");
  lstest::newRow("first") << "one" << 1;
  lstest::newRow("second") << std::string("two") << 2;
}

TEST_CASE(rowsArriveInOrder) {
  FETCH(std::string, name);
  FETCH(int, number);
  g_seenRows.push_back(name + "=" + std::to_string(number));
  VERIFY(fails([] { lstest::fetch<double>("number", __FILE__, __LINE__); }));
  VERIFY(fails([] { lstest::fetch<int>("absent", __FILE__, __LINE__); }));
}

TEST_CASE(everyRowRanOnce) {
  COMPARE(g_seenRows, (std::vector<std::string>{"one=1", "two=2"}));
}

TEST_CASE(eventuallyWaitsForTheCondition) {
  int polls = 0;
  VERIFY(lstest::eventually([&] { return ++polls == 3; }, 5000));
  COMPARE(polls, 3);
  VERIFY(!lstest::eventually([] { return false; }, 30));
}

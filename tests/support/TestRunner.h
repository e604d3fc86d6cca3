// TestRunner.h — the Qt-free test runner of the backend's tests (the same sources build on Linux
// and, cross-compiled with mingw-w64, run under Wine, where there is no Qt). QtTest's vocabulary:
//   TEST_CASE(name) { ... }     a test function; functions run in the order of definition
//   TEST_DATA(name) { ... }     its rows, name_data(): lstest::addColumn<T>("column"), then
//                               lstest::newRow("row") << value << ...; the test runs once per row
//   FETCH(T, column)            the current row's value of `column`, as a local named `column`
//   VERIFY(cond)  VERIFY2(cond, message)  COMPARE(actual, expected)  FAIL(message)  SKIP(reason)
//   VERIFY_THROWS_EXCEPTION(Type, expression)
//   TRY_VERIFY(cond)  TRY_COMPARE(actual, expected)   polled until true, for up to 5 s
//   lstest::info(...) lstest::warning(...)   printf-style lines in the test's output
//   lstest::format(...)         printf into a std::string (for VERIFY2's message)
//   lstest::Message{text}.contains(fragment)   an error message searched for fragments
// A failed check ends the test function, also from a helper (it throws lstest::Failure, which a
// test's own `catch (const std::exception&)` does not catch). COMPARE compares floating-point
// values as QCOMPARE does (relative 1e-12 for double, 1e-5 for float; values that small against
// zero; NaN equals NaN), integers of different signedness by value, C strings by content.
// main() is in TestRunnerMain.cpp: `test_x [function[:row]]...` runs the named ones only; the
// exit code is the number of failed functions. A program with a main() of its own calls
// lstest::runTests(argc, argv) from it.
#pragma once

#include <algorithm>
#include <any>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <iomanip>
#include <limits>
#include <optional>
#include <ranges>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace lstest {

// Thrown by a failed check, SKIP and FAIL; deliberately not a std::exception.
struct Failure {
  std::string message;
};
struct Skipped {
  std::string reason;
};

bool registerTest(const char* name, void (*run)());
// Runs the registered functions (those named in argv[1..], or all); the number that failed.
int runTests(int argc, char** argv);
bool registerData(const char* name, void (*rows)());

[[noreturn]] void fail(const std::string& message, const char* file, int line);
[[noreturn]] void skip(const std::string& reason);

// Rows of the current data function: columns first, then rows in order.
void addColumnOfType(const char* name, const std::type_info& type);
template <typename T>
void addColumn(const char* name) {
  addColumnOfType(name, typeid(T));
}
class Row {
 public:
  explicit Row(std::size_t index) : index_(index) {}
  template <typename T>
  Row& operator<<(T&& value) {
    using V = std::decay_t<T>;
    if constexpr (std::is_same_v<V, const char*> || std::is_same_v<V, char*>)
      append(std::any(std::string(value)));
    else
      append(std::any(V(std::forward<T>(value))));
    return *this;
  }

 private:
  void append(std::any value);
  std::size_t index_;
};
Row& newRow(const std::string& name);
const std::any& fetchAny(const char* column, const std::type_info& type, const char* file,
                         int line);
template <typename T>
T fetch(const char* column, const char* file, int line) {
  return std::any_cast<const T&>(fetchAny(column, typeid(T), file, line));
}

// The printf check of the functions below. GCC's "printf" archetype is Microsoft's printf when it
// targets mingw (no %zu), while the runner formats with mingw's C99 stdio, which libstdc++ turns
// on: "gnu_printf" there (the same as "printf" on Linux); clang knows only "printf".
#if defined(__clang__)
#define LSTEST_PRINTF_FORMAT(f, a) __attribute__((format(printf, f, a)))
#else
#define LSTEST_PRINTF_FORMAT(f, a) __attribute__((format(gnu_printf, f, a)))
#endif

void info(const char* format, ...) LSTEST_PRINTF_FORMAT(1, 2);
// printf into a string, for VERIFY2's message.
std::string format(const char* format, ...) LSTEST_PRINTF_FORMAT(1, 2);
void warning(const char* format, ...) LSTEST_PRINTF_FORMAT(1, 2);

// An error message, searched for fragments: `VERIFY(errorOf(...).contains("line 3"))`.
struct Message {
  std::string text;
  bool contains(std::string_view fragment) const {
    return text.find(fragment) != std::string::npos;
  }
};

// Sets or removes a variable of this process's environment (what getenv reads).
void setEnvironment(const std::string& name, const std::string& value);
void unsetEnvironment(const std::string& name);

// How a value reads in a failure message.
template <typename T>
std::string describe(const T& value);

namespace detail {
template <typename T>
concept Streamable = requires(std::ostream& out, const T& v) {
  out << v;
};
template <typename T>
struct IsOptional : std::false_type {};
template <typename T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <typename T>
constexpr bool kIsCString =
    std::is_same_v<std::decay_t<T>, const char*> || std::is_same_v<std::decay_t<T>, char*>;

// Integer types std::cmp_equal takes (not bool, not the character types).
template <typename T>
constexpr bool kIsInteger =
    std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char> &&
    !std::is_same_v<T, wchar_t> && !std::is_same_v<T, char8_t> && !std::is_same_v<T, char16_t> &&
    !std::is_same_v<T, char32_t>;

// QCOMPARE's floating-point rule: infinities and NaN by class, values within 1e-12 (double) or
// 1e-5 (float) of zero against zero, others relatively to the smaller magnitude.
template <typename F>
bool fuzzyEqual(F actual, F expected) {
  const F nearZero = std::is_same_v<F, float> ? F(1e-5) : F(1e-12);
  const F scale = std::is_same_v<F, float> ? F(1e5) : F(1e12);
  if (std::isnan(expected))
    return std::isnan(actual);
  if (std::isinf(expected))
    return std::isinf(actual) && (actual < 0) == (expected < 0);
  if (std::fabs(expected) <= nearZero)
    return std::fabs(actual) <= nearZero;
  return std::fabs(actual - expected) * scale <= std::min(std::fabs(actual), std::fabs(expected));
}

template <typename A, typename E>
bool equal(const A& actual, const E& expected) {
  if constexpr (std::is_floating_point_v<A> && std::is_floating_point_v<E>) {
    if constexpr (std::is_same_v<A, float> && std::is_same_v<E, float>)
      return fuzzyEqual<float>(actual, expected);
    else
      return fuzzyEqual<double>(actual, expected);
  } else if constexpr (kIsInteger<A> && kIsInteger<E>) {
    return std::cmp_equal(actual, expected);
  } else if constexpr (kIsCString<A> && kIsCString<E>) {
    return std::strcmp(actual, expected) == 0;
  } else {
    return actual == expected;
  }
}
}  // namespace detail

template <typename T>
std::string describe(const T& value) {
  std::ostringstream out;
  if constexpr (std::is_same_v<T, bool>) {
    out << (value ? "true" : "false");
  } else if constexpr (std::is_enum_v<T>) {
    out << "enum value " << static_cast<long long>(value);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    out << '"' << std::string_view(value) << '"';
  } else if constexpr (detail::IsOptional<T>::value) {
    return value ? describe(*value) : std::string("nullopt");
  } else if constexpr (std::is_floating_point_v<T>) {
    out << std::setprecision(std::numeric_limits<T>::max_digits10) << value;
  } else if constexpr (std::is_integral_v<T> && sizeof(T) == 1) {
    out << static_cast<int>(value);
  } else if constexpr (detail::Streamable<T>) {
    out << value;
  } else if constexpr (std::ranges::range<T>) {
    out << '[';
    std::size_t n = 0;
    for (const auto& element : value) {
      if (n > 0)
        out << ", ";
      if (++n > 16) {
        out << "...";
        break;
      }
      out << describe(element);
    }
    out << ']';
  } else {
    out << "<a " << typeid(T).name() << '>';
  }
  return out.str();
}

template <typename A, typename E>
void compare(const A& actual, const E& expected, const char* actualText, const char* expectedText,
             const char* file, int line) {
  if (detail::equal(actual, expected))
    return;
  fail(std::string("Compared values are not the same\n   Actual   (") + actualText +
           "): " + describe(actual) + "\n   Expected (" + expectedText + "): " + describe(expected),
       file, line);
}

// Polls `condition` until it holds or `timeout_ms` passed (QTRY_VERIFY's loop, without an event
// loop to spin: what it waits for happens on other threads).
template <typename F>
bool eventually(F&& condition, int timeout_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline)
      return condition();
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

}  // namespace lstest

#define TEST_CASE(name)                                              \
  static void lstest_case_##name();                                  \
  [[maybe_unused]] static const bool lstest_case_registered_##name = \
      ::lstest::registerTest(#name, &lstest_case_##name);            \
  static void lstest_case_##name()

// The rows' function is name_data(), as in QtTest, so that rows can be shared by calling it.
#define TEST_DATA(name)                                              \
  static void name##_data();                                         \
  [[maybe_unused]] static const bool lstest_data_registered_##name = \
      ::lstest::registerData(#name, &name##_data);                   \
  static void name##_data()

#define VERIFY(condition)                                                     \
  do {                                                                        \
    if (!static_cast<bool>(condition))                                        \
      ::lstest::fail("'" #condition "' returned FALSE.", __FILE__, __LINE__); \
  } while (false)

#define VERIFY2(condition, message)                                                       \
  do {                                                                                    \
    if (!static_cast<bool>(condition))                                                    \
      ::lstest::fail(std::string("'" #condition "' returned FALSE. (") + (message) + ")", \
                     __FILE__, __LINE__);                                                 \
  } while (false)

#define COMPARE(actual, expected) \
  ::lstest::compare((actual), (expected), #actual, #expected, __FILE__, __LINE__)

#define FAIL(message) ::lstest::fail((message), __FILE__, __LINE__)
#define SKIP(reason) ::lstest::skip((reason))

#define FETCH(Type, column) Type column = ::lstest::fetch<Type>(#column, __FILE__, __LINE__)

#define VERIFY_THROWS_EXCEPTION(ExceptionType, ...)                           \
  do {                                                                        \
    bool lstest_thrown = false;                                               \
    try {                                                                     \
      __VA_ARGS__;                                                            \
    } catch (const ExceptionType&) {                                          \
      lstest_thrown = true;                                                   \
    } catch (const std::exception& e) {                                       \
      ::lstest::fail(std::string("Expected exception of type " #ExceptionType \
                                 " to be thrown, but caught another: ") +     \
                         e.what(),                                            \
                     __FILE__, __LINE__);                                     \
    }                                                                         \
    if (!lstest_thrown)                                                       \
      ::lstest::fail("Expected exception of type " #ExceptionType             \
                     " to be thrown, but no exception was thrown",            \
                     __FILE__, __LINE__);                                     \
  } while (false)

#define TRY_VERIFY_WITH_TIMEOUT(condition, timeout_ms)                                        \
  do {                                                                                        \
    if (!::lstest::eventually([&] { return static_cast<bool>(condition); }, (timeout_ms)))    \
      ::lstest::fail("'" #condition "' returned FALSE (after " #timeout_ms " ms).", __FILE__, \
                     __LINE__);                                                               \
  } while (false)
#define TRY_VERIFY(condition) TRY_VERIFY_WITH_TIMEOUT(condition, 5000)
#define TRY_COMPARE(actual, expected)                                                          \
  do {                                                                                         \
    ::lstest::eventually([&] { return ::lstest::detail::equal((actual), (expected)); }, 5000); \
    COMPARE(actual, expected);                                                                 \
  } while (false)

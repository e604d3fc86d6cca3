// TestRunner.cpp — the registry and runTests() of the Qt-free test runner (TestRunner.h): runs
// each registered function once per data row, prints one line per result as QtTest does, and
// answers the number of failed functions (main() is in TestRunnerMain.cpp).
#include "TestRunner.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <list>
#include <vector>

namespace lstest {
namespace {

struct Column {
  std::string name;
  const std::type_info* type;
};
struct DataRow {
  std::string name;
  std::vector<std::any> values;
};
struct TestFunction {
  std::string name;
  void (*run)() = nullptr;
  void (*rows)() = nullptr;
};

std::vector<TestFunction>& registry() {
  static std::vector<TestFunction> functions;  // in definition order within the file
  return functions;
}
TestFunction& entry(const char* name) {
  for (TestFunction& f : registry()) {
    if (f.name == name)
      return f;
  }
  return registry().emplace_back(TestFunction{name, nullptr, nullptr});
}

// What is running now: the function, its columns and rows, the row being run.
std::string g_current;
std::vector<Column> g_columns;
std::vector<DataRow> g_rows;
const DataRow* g_row = nullptr;

void vprint(const char* tag, const char* format, va_list args) {
  std::printf("%s: %s() ", tag, g_current.c_str());
  std::vprintf(format, args);
  std::printf("\n");
  std::fflush(stdout);
}

std::string label(const TestFunction& f, const DataRow* row) {
  return f.name + "(" + (row ? row->name : std::string()) + ")";
}

enum class Outcome { Passed, Failed, Skipped };

Outcome runOne(const TestFunction& f, const DataRow* row) {
  g_row = row;
  try {
    f.run();
    std::printf("PASS   : %s\n", label(f, row).c_str());
    return Outcome::Passed;
  } catch (const Failure& failure) {
    std::printf("FAIL!  : %s %s\n", label(f, row).c_str(), failure.message.c_str());
  } catch (const Skipped& skipped) {
    std::printf("SKIP   : %s %s\n", label(f, row).c_str(), skipped.reason.c_str());
    return Outcome::Skipped;
  } catch (const std::exception& e) {
    std::printf("FAIL!  : %s Caught unhandled exception: %s\n", label(f, row).c_str(), e.what());
  } catch (...) {
    std::printf("FAIL!  : %s Caught unhandled exception of unknown type\n", label(f, row).c_str());
  }
  return Outcome::Failed;
}

}  // namespace

bool registerTest(const char* name, void (*run)()) {
  entry(name).run = run;
  return true;
}
bool registerData(const char* name, void (*rows)()) {
  entry(name).rows = rows;
  return true;
}

void fail(const std::string& message, const char* file, int line) {
  throw Failure{message + "\n   Loc: [" + file + "(" + std::to_string(line) + ")]"};
}
void skip(const std::string& reason) {
  throw Skipped{reason};
}

void addColumnOfType(const char* name, const std::type_info& type) {
  g_columns.push_back({name, &type});
}
Row& newRow(const std::string& name) {
  g_rows.push_back({name, {}});
  static Row handle(0);  // so that `newRow(..) << a << b` chains
  handle = Row(g_rows.size() - 1);
  return handle;
}
void Row::append(std::any value) {
  g_rows.at(index_).values.push_back(std::move(value));
}

const std::any& fetchAny(const char* column, const std::type_info& type, const char* file,
                         int line) {
  if (g_row == nullptr)
    fail(std::string("FETCH(") + column + ") in a function without rows", file, line);
  for (std::size_t i = 0; i < g_columns.size(); ++i) {
    if (g_columns[i].name != column)
      continue;
    if (*g_columns[i].type != type)
      fail(std::string("FETCH(") + column + ") asks for another type than its column's", file,
           line);
    if (i >= g_row->values.size() || g_row->values[i].type() != type)
      fail(
          std::string("row '") + g_row->name + "' gives column " + column + " no value of its type",
          file, line);
    return g_row->values[i];
  }
  fail(std::string("no column named ") + column, file, line);
}

void info(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vprint("INFO   ", format, args);
  va_end(args);
}
std::string format(const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  const int length = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  std::string out(static_cast<std::size_t>(std::max(length, 0)) + 1, '\0');
  std::vsnprintf(out.data(), out.size(), format, again);
  va_end(again);
  out.resize(out.size() - 1);
  return out;
}
// Through putenv, which glibc and the Windows C runtime both declare in <cstdlib>. glibc keeps
// the string itself (hence the storage that lives as long as the process); "NAME=" removes the
// variable on Windows and empties it under glibc, where "NAME" alone removes it.
void setEnvironment(const std::string& name, const std::string& value) {
  static std::list<std::string> storage;
  putenv(storage.emplace_back(name + "=" + value).data());
}
void unsetEnvironment(const std::string& name) {
  static std::list<std::string> storage;
  putenv(storage.emplace_back(name + "=").data());
  if (std::getenv(name.c_str()) != nullptr)
    putenv(storage.emplace_back(name).data());
}

void warning(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vprint("WARNING", format, args);
  va_end(args);
}

// `test_x [function[:row]]...`: the named functions (rows) only; all when none is named.
int runTests(int argc, char** argv) {
  const std::string program = std::filesystem::path(argv[0]).stem().string();
  std::vector<std::string> wanted(argv + 1, argv + argc);
  const auto selected = [&](const std::string& function, const std::string* row) {
    if (wanted.empty())
      return true;
    for (const std::string& w : wanted) {
      if (w == function || (row && w == function + ":" + *row))
        return true;
    }
    return false;
  };
  std::printf("********* Start testing of %s *********\n", program.c_str());
  int passed = 0, failed = 0, skipped = 0, failedFunctions = 0;
  const auto count = [&](Outcome o) {
    (o == Outcome::Passed ? passed : o == Outcome::Failed ? failed : skipped) += 1;
    return o == Outcome::Failed;
  };
  for (const TestFunction& f : registry()) {
    if (f.run == nullptr) {
      std::printf("FAIL!  : %s() has rows (TEST_DATA) but no TEST_CASE\n", f.name.c_str());
      ++failed;
      ++failedFunctions;
      continue;
    }
    g_current = f.name;
    g_columns.clear();
    g_rows.clear();
    bool functionFailed = false;
    if (f.rows == nullptr) {
      if (selected(f.name, nullptr))
        functionFailed = count(runOne(f, nullptr));
    } else {
      try {
        f.rows();
      } catch (const Skipped& s) {
        if (selected(f.name, nullptr))
          count(Outcome::Skipped),
              std::printf("SKIP   : %s() %s\n", f.name.c_str(), s.reason.c_str());
        continue;
      } catch (const Failure& failure) {
        std::printf("FAIL!  : %s_data() %s\n", f.name.c_str(), failure.message.c_str());
        ++failed;
        ++failedFunctions;
        continue;
      }
      for (const DataRow& row : g_rows) {
        if (selected(f.name, &row.name))
          functionFailed = count(runOne(f, &row)) || functionFailed;
      }
    }
    failedFunctions += functionFailed ? 1 : 0;
  }
  std::printf("Totals: %d passed, %d failed, %d skipped\n", passed, failed, skipped);
  std::printf("********* Finished testing of %s *********\n", program.c_str());
  std::fflush(stdout);
  return failedFunctions;
}

}  // namespace lstest

// DataTestUtil.h — helpers shared by the dataset tests: fixture paths, reading a whole file
// through DatasetStream, and finding issues by kind.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "TestPaths.h"
#include "data/DatasetStream.h"
#include "data/Issue.h"

namespace lorascope::data::test {

// tests/data/data/<name> (committed fixtures).
inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(lstest::sourcePath("tests/data/data")) / name;
}

// ../shared/fixtures/<relative>, or none when LORASCOPE_SHARED_FIXTURES is unset or the file is
// absent (the caller SKIPs).
inline std::optional<std::filesystem::path> sharedFixture(const std::string& relative) {
  const char* root = std::getenv("LORASCOPE_SHARED_FIXTURES");
  if (root == nullptr) {
    return std::nullopt;
  }
  const std::filesystem::path path = std::filesystem::path(root) / relative;
  if (!std::filesystem::exists(path)) {
    return std::nullopt;
  }
  return path;
}

struct ReadAll {
  std::vector<Example> examples;
  std::vector<DatasetIssue> issues;
  std::optional<Format> format;
};

inline ReadAll readAll(const std::filesystem::path& path, std::optional<Format> forced = {}) {
  ReadAll out;
  DatasetStream stream(path, forced,
                       [&out](DatasetIssue issue) { out.issues.push_back(std::move(issue)); });
  Example example;
  while (stream.next(example)) {
    out.examples.push_back(example);
  }
  out.format = stream.format();
  return out;
}

inline std::vector<DatasetIssue> issuesOf(const std::vector<DatasetIssue>& issues, IssueKind kind) {
  std::vector<DatasetIssue> found;
  for (const DatasetIssue& issue : issues) {
    if (issue.kind == kind) {
      found.push_back(issue);
    }
  }
  return found;
}

inline std::vector<std::size_t> linesOf(const std::vector<Example>& examples) {
  std::vector<std::size_t> lines;
  for (const Example& example : examples) {
    lines.push_back(example.where.line);
  }
  return lines;
}

}  // namespace lorascope::data::test

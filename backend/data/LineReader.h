// LineReader.h — reads a file line by line in 1 MiB chunks, tracking line numbers and byte
// offsets. Strips a UTF-8 byte-order mark at the start and "\r" before "\n" (CRLF files), and
// refuses UTF-16/UTF-32 files with a DatasetError that says how to convert them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace lorascope::data {

struct Line {
  std::string text;              // without the line end ("\n" or "\r\n")
  std::size_t number = 0;        // 1-based
  std::uint64_t byteOffset = 0;  // of the line's first byte in the file (a BOM counts)
};

class LineReader {
 public:
  // Throws DatasetError naming the file when it cannot be opened or is not UTF-8 text.
  explicit LineReader(const std::filesystem::path& path);

  // False at the end of the file. A last line without "\n" is still returned.
  bool next(Line& line);

  std::uint64_t totalBytes() const { return totalBytes_; }
  std::uint64_t bytesRead() const { return consumed_; }
  bool hadBom() const { return hadBom_; }
  std::size_t crlfLines() const { return crlfLines_; }

 private:
  bool refill();  // false at end of file

  std::ifstream file_;  // opened by path, so a non-ASCII name works on Windows too
  std::filesystem::path path_;
  std::vector<char> buffer_;
  std::size_t begin_ = 0;  // unread bytes are buffer_[begin_, end_)
  std::size_t end_ = 0;
  bool eof_ = false;
  std::uint64_t totalBytes_ = 0;
  std::uint64_t consumed_ = 0;
  std::size_t lineNumber_ = 0;
  std::size_t crlfLines_ = 0;
  bool hadBom_ = false;
};

}  // namespace lorascope::data

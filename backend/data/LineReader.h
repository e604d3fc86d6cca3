// LineReader.h — reads a file line by line in 1 MiB chunks, tracking line numbers and byte
// offsets. Strips a UTF-8 byte-order mark at the start and "\r" before "\n" (CRLF files), and
// refuses UTF-16/UTF-32 files with a DatasetError that says how to convert them.
//
// A line is never held whole when it is longer than kMaxRecordBytes: it comes in pieces of that
// size (Line::continues), so that memory stays bounded by the limit whatever the file holds (one
// 1 GB record took 7 GB). A JSONL reader refuses such a line as a record too large; the JSON
// array reader scans the pieces of a compact one-line array, whose elements are each capped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace lorascope::data {

// The largest dataset record (a JSONL line, a JSON array element): the longest real training
// conversations are a few MB; a larger record is an error for its line, not read.
inline constexpr std::size_t kMaxRecordBytes = std::size_t{16} << 20;

struct Line {
  std::string text;              // without the line end ("\n" or "\r\n")
  std::size_t number = 0;        // 1-based
  std::uint64_t byteOffset = 0;  // of the text's first byte in the file (a BOM counts)
  // A piece of a line longer than the reader's limit: `continues` when more of the line follows
  // (the next piece has the same number), `continuation` when this piece does not start it.
  bool continues = false;
  bool continuation = false;
};

class LineReader {
 public:
  // Throws DatasetError naming the file when it cannot be opened, is not a regular file or is not
  // UTF-8 text. Lines longer than `maxPieceBytes` come in pieces of that size.
  explicit LineReader(const std::filesystem::path& path,
                      std::size_t maxPieceBytes = kMaxRecordBytes);

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
  std::size_t maxPieceBytes_;
  bool atLineStart_ = true;  // the next piece starts a line
};

}  // namespace lorascope::data

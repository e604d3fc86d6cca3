// LineReader.cpp — chunked line reading with BOM and CRLF handling.
#include "data/LineReader.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "common/OsError.h"  // defines: pathText
#include "data/Issue.h"

namespace lorascope::data {

namespace {

constexpr std::size_t kChunkBytes = std::size_t{1} << 20;  // one read() per MiB of file

}  // namespace

LineReader::LineReader(const std::filesystem::path& path, std::size_t maxPieceBytes)
    : path_(path), maxPieceBytes_(std::max<std::size_t>(maxPieceBytes, 1)) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw DatasetError(common::pathText(path) + ": is a directory, not a dataset file");
  }
  // A FIFO would block the open for good, a device (a link to /dev/zero) never end.
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw DatasetError(common::pathText(path) + ": is not a regular file, not a dataset file");
  }
  file_.open(path, std::ios::binary);
  if (!file_.is_open()) {
    throw DatasetError(common::pathText(path) + ": cannot open: " + std::strerror(errno));
  }
  const auto size = std::filesystem::file_size(path, ec);
  totalBytes_ = ec ? 0 : static_cast<std::uint64_t>(size);
  // Small files get a buffer of their size (+1 so the first read sees the end of the file).
  buffer_.resize(static_cast<std::size_t>(
      std::min<std::uint64_t>(kChunkBytes, std::max<std::uint64_t>(totalBytes_ + 1, 64))));
  refill();
  const auto* head = reinterpret_cast<const unsigned char*>(buffer_.data() + begin_);
  const std::size_t available = end_ - begin_;
  if (available >= 3 && head[0] == 0xef && head[1] == 0xbb && head[2] == 0xbf) {
    hadBom_ = true;
    begin_ += 3;
    consumed_ = 3;
  } else if (available >= 2 &&
             ((head[0] == 0xff && head[1] == 0xfe) || (head[0] == 0xfe && head[1] == 0xff))) {
    throw DatasetError(common::pathText(path) +
                       ": is UTF-16 (or UTF-32) text; datasets must be UTF-8. Convert it, e.g. "
                       "`iconv -f UTF-16 -t UTF-8 in.json > out.json`");
  }
}

bool LineReader::refill() {
  if (eof_) {
    return false;
  }
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  if (end_ == buffer_.size()) {
    buffer_.resize(buffer_.size() * 2);  // a line longer than the buffer
  }
  file_.read(buffer_.data() + end_, static_cast<std::streamsize>(buffer_.size() - end_));
  const auto got = static_cast<std::size_t>(file_.gcount());
  if (got == 0) {
    if (file_.bad()) {
      throw DatasetError(common::pathText(path_) + ": read failed at byte " +
                         std::to_string(consumed_) + ": " + std::strerror(errno));
    }
    eof_ = true;
    return false;
  }
  end_ += got;
  return true;
}

bool LineReader::next(Line& line) {
  std::size_t searchFrom = begin_;
  const char* newline = nullptr;
  for (;;) {
    newline =
        static_cast<const char*>(std::memchr(buffer_.data() + searchFrom, '\n', end_ - searchFrom));
    if (newline != nullptr) {
      break;
    }
    const std::size_t scanned = end_ - begin_;
    if (scanned > maxPieceBytes_) {
      break;  // a piece's worth without a line end: handed out as a piece
    }
    if (!refill()) {
      break;
    }
    searchFrom = begin_ + scanned;
  }
  if (newline == nullptr && begin_ == end_) {
    return false;
  }
  std::size_t stop = newline != nullptr ? static_cast<std::size_t>(newline - buffer_.data()) : end_;
  const bool piece = stop - begin_ > maxPieceBytes_;
  if (piece) {
    stop = begin_ + maxPieceBytes_;
    newline = nullptr;
  }
  std::size_t textEnd = stop;
  if (newline != nullptr && textEnd > begin_ && buffer_[textEnd - 1] == '\r') {
    --textEnd;
    ++crlfLines_;
  }
  line.text.assign(buffer_.data() + begin_, textEnd - begin_);
  line.continuation = !atLineStart_;
  line.number = atLineStart_ ? ++lineNumber_ : lineNumber_;
  line.continues = piece;
  atLineStart_ = !piece;
  line.byteOffset = consumed_;
  const std::size_t advance = (newline != nullptr ? stop + 1 : stop) - begin_;
  consumed_ += advance;
  begin_ += advance;
  return true;
}

}  // namespace lorascope::data

// common/DurableFile.cpp — temp + sync + rename + directory sync, over common/OsFile.h.
#include "common/DurableFile.h"

#include <stdexcept>
#include <string>

#include "common/OsError.h"
#include "common/Platform.h"

namespace lorascope::common {
namespace fs = std::filesystem;

namespace {

fs::path parentOf(const fs::path& path) {
  return path.has_parent_path() ? path.parent_path() : fs::path(".");
}

// Filesystems that cannot sync a directory at all answer these: nothing more can be done there.
bool cannotSyncDirectories(std::error_code error) {
  return error == std::errc::invalid_argument || error == std::errc::not_supported ||
         error == std::errc::operation_not_supported || error == std::errc::bad_file_descriptor;
}

}  // namespace

std::string tempSuffix() {
  return ".tmp-" + std::to_string(currentProcessId());
}

bool isStaleTempName(const std::string& name) {
  const std::size_t tmp = name.rfind(".tmp-");
  if (tmp == std::string::npos)
    return false;
  const std::string pid = name.substr(tmp + 5);
  if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9)
    return false;
  const auto owner = static_cast<std::uint32_t>(std::stoul(pid));
  return owner != currentProcessId() && !processExists(owner);
}

void syncDirectory(const fs::path& dir) {
  const std::error_code error = syncDirectoryEntries(dir);
  if (error && !cannotSyncDirectories(error)) {
    throw OsError(dir, "directory sync failed (the last rename in it may not survive a crash)",
                  error);
  }
}

DurableFileWriter::DurableFileWriter(fs::path path)
    : path_(std::move(path)), temp_(path_.native() + fs::path(tempSuffix()).native()) {
  file_.emplace(temp_, OutputFile::Mode::Truncate);
}

DurableFileWriter::~DurableFileWriter() {
  if (file_) {
    file_.reset();
    std::error_code ignored;
    fs::remove(temp_, ignored);
  }
}

void DurableFileWriter::write(std::span<const std::byte> bytes) {
  if (!file_) {
    throw std::logic_error(pathText(path_) + ": write after commit");
  }
  file_->write(bytes);  // on an error the destructor removes the temp file
}

void DurableFileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span(text.data(), text.size())));
}

void DurableFileWriter::commit() {
  if (!file_) {
    throw std::logic_error(pathText(path_) + ": committed twice");
  }
  try {
    file_->sync();
    file_->close();
    file_.reset();
    renameReplacing(temp_, path_);
  } catch (const OsError&) {
    file_.reset();
    std::error_code ignored;
    fs::remove(temp_, ignored);
    throw;
  }
  // The rename itself lives in the directory: sync it too, or a crash may forget it.
  syncDirectory(parentOf(path_));
}

void writeFileDurably(const fs::path& path, std::span<const std::byte> contents) {
  DurableFileWriter out(path);
  out.write(contents);
  out.commit();
}

void writeFileDurably(const fs::path& path, std::string_view contents) {
  writeFileDurably(path, std::as_bytes(std::span(contents.data(), contents.size())));
}

void replaceDirectory(const fs::path& staging, const fs::path& target) {
  const fs::path parent = parentOf(target);
  syncDirectory(staging);
  const fs::path old = parent / fs::path(u8"." + target.filename().u8string() + u8".old" +
                                         fs::path(tempSuffix()).u8string());
  const bool hadTarget = fs::exists(target);
  if (hadTarget) {
    fs::remove_all(old);
    fs::rename(target, old);
  }
  fs::rename(staging, target);
  syncDirectory(parent);
  if (hadTarget) {
    fs::remove_all(old);
  }
}

}  // namespace lorascope::common

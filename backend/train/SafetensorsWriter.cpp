// train/SafetensorsWriter.cpp — safetensors layout (as the Rust reference lays it out) and the
// durable, streamed write.
#include "train/SafetensorsWriter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace lorascope::train {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kHeaderAlignmentBytes = 8;  // data starts 8-byte aligned, as the reference

const char* safetensorsDtypeName(compute::DType dtype) {
  switch (dtype) {
    case compute::DType::F32:
      return "F32";
    case compute::DType::BF16:
      return "BF16";
    case compute::DType::F16:
      return "F16";
  }
  return "F32";
}

// The reference sorts by dtype, larger enum (wider type) first: F32, then BF16, then F16.
int dtypeOrder(compute::DType dtype) {
  switch (dtype) {
    case compute::DType::F32:
      return 0;
    case compute::DType::BF16:
      return 1;
    case compute::DType::F16:
      return 2;
  }
  return 0;
}

std::uint64_t tensorBytes(const TensorToWrite& t) {
  return static_cast<std::uint64_t>(compute::numelOf(t.shape)) * compute::dtypeBytes(t.dtype);
}

[[noreturn]] void throwIoError(const fs::path& path, const char* what) {
  throw std::runtime_error(path.string() + ": " + what + ": " + std::strerror(errno));
}

}  // namespace

TensorToWrite f32TensorToWrite(std::string name, compute::Shape shape,
                               std::span<const float> values) {
  return {std::move(name), compute::DType::F32, std::move(shape), std::as_bytes(values), {}};
}

SafetensorsLayout layoutSafetensors(std::span<const TensorToWrite> tensors,
                                    const SafetensorsMetadata& metadata) {
  SafetensorsLayout layout;
  std::set<std::string> names;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].name == "__metadata__" || tensors[i].name.empty()) {
      throw std::invalid_argument("safetensors: '" + tensors[i].name +
                                  "' is not a valid tensor name");
    }
    if (!names.insert(tensors[i].name).second) {
      throw std::invalid_argument("safetensors: tensor '" + tensors[i].name + "' appears twice");
    }
    for (std::int64_t d : tensors[i].shape) {
      if (d < 0) {
        throw std::invalid_argument("safetensors: tensor '" + tensors[i].name +
                                    "' has a negative dimension");
      }
    }
    layout.order.push_back(i);
  }
  std::sort(layout.order.begin(), layout.order.end(), [&](std::size_t a, std::size_t b) {
    const int da = dtypeOrder(tensors[a].dtype);
    const int db = dtypeOrder(tensors[b].dtype);
    return da != db ? da < db : tensors[a].name < tensors[b].name;
  });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    header["__metadata__"] = metadata;
  }
  std::uint64_t offset = 0;
  for (std::size_t i : layout.order) {
    const TensorToWrite& t = tensors[i];
    const std::uint64_t end = offset + tensorBytes(t);
    header[t.name] = nlohmann::ordered_json{{"dtype", safetensorsDtypeName(t.dtype)},
                                            {"shape", t.shape},
                                            {"data_offsets", {offset, end}}};
    offset = end;
  }
  layout.headerText = header.dump();
  const std::size_t pad =
      (kHeaderAlignmentBytes - layout.headerText.size() % kHeaderAlignmentBytes) %
      kHeaderAlignmentBytes;
  layout.headerText.append(pad, ' ');
  return layout;
}

void writeSafetensors(const fs::path& path, std::span<const TensorToWrite> tensors,
                      const SafetensorsMetadata& metadata, const TensorWritten& written) {
  for (const TensorToWrite& t : tensors) {
    if (!t.produce && t.bytes.size() != tensorBytes(t)) {
      throw std::invalid_argument(path.string() + ": tensor '" + t.name + "' has " +
                                  std::to_string(t.bytes.size()) + " bytes but " +
                                  safetensorsDtypeName(t.dtype) + compute::shapeToString(t.shape) +
                                  " needs " + std::to_string(tensorBytes(t)));
    }
  }
  const SafetensorsLayout layout = layoutSafetensors(tensors, metadata);
  DurableFileWriter out(path);
  std::byte length[8];
  const std::uint64_t headerBytes = layout.headerText.size();
  for (int i = 0; i < 8; ++i) {
    length[i] = static_cast<std::byte>((headerBytes >> (8 * i)) & 0xffu);
  }
  out.write(std::span<const std::byte>(length, 8));
  out.write(layout.headerText);
  for (std::size_t i : layout.order) {
    const TensorToWrite& t = tensors[i];
    if (!t.produce) {
      out.write(t.bytes);
    } else {
      const std::vector<std::byte> produced = t.produce();
      if (produced.size() != tensorBytes(t)) {
        throw std::invalid_argument(path.string() + ": tensor '" + t.name + "' produced " +
                                    std::to_string(produced.size()) + " bytes but needs " +
                                    std::to_string(tensorBytes(t)));
      }
      out.write(produced);
    }
    if (written) {
      written(tensorBytes(t));
    }
  }
  out.commit();
}

DurableFileWriter::DurableFileWriter(fs::path path)
    : path_(std::move(path)), temp_(path_.string() + ".tmp-" + std::to_string(::getpid())) {
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throwIoError(temp_, "cannot create");
  }
}

DurableFileWriter::~DurableFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(temp_.c_str());
  }
}

void DurableFileWriter::write(std::span<const std::byte> bytes) {
  if (fd_ < 0) {
    throw std::logic_error(path_.string() + ": write after commit");
  }
  std::size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + written, bytes.size() - written);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      throwIoError(temp_, "write failed");
    }
    written += static_cast<std::size_t>(n);
  }
}

void DurableFileWriter::write(std::string_view text) {
  write(std::as_bytes(std::span(text.data(), text.size())));
}

void DurableFileWriter::commit() {
  if (fd_ < 0) {
    throw std::logic_error(path_.string() + ": committed twice");
  }
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    ::unlink(temp_.c_str());
    errno = saved;
    throwIoError(temp_, "fsync failed");
  }
  if (::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temp_.c_str());
    errno = saved;
    throwIoError(temp_, "close failed");
  }
  if (::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp_.c_str());
    errno = saved;
    throwIoError(path_, "rename failed");
  }
  syncDirectory(path_.has_parent_path() ? path_.parent_path() : fs::path("."));
}

void syncDirectory(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throwIoError(dir, "cannot open directory to sync it");
  }
  ::fsync(fd);
  ::close(fd);
}

}  // namespace lorascope::train

// Safetensors.h — the safetensors format: an 8-byte little-endian header length N, N bytes of
// JSON {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the data.
// The header is validated in full before any tensor is used (see parseSafetensorsHeader).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compute/Tensor.h"  // defines: DType, Shape, Tensor

namespace lorascope::common {
class MappedFile;
}

namespace lorascope::model {

inline constexpr std::uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;  // the format's own bound

// The format's names of the dtypes this project reads and writes: "F32", "BF16", "F16" (one table
// for the reader here and the writer in train/SafetensorsWriter).
const char* safetensorsDtypeName(compute::DType dtype);
std::optional<compute::DType> dtypeFromSafetensorsName(std::string_view name);

struct SafetensorsEntry {
  std::string name;
  compute::DType dtype = compute::DType::F32;
  compute::Shape shape;
  std::uint64_t begin = 0;  // bytes from the start of the data section
  std::uint64_t end = 0;    // one past the last byte
};

struct SafetensorsHeader {
  std::uint64_t dataOffsetBytes = 0;                // 8 + header length: where the data starts
  std::map<std::string, SafetensorsEntry> tensors;  // by name
};

// Validates and parses the header of a whole safetensors file held in `file` (which must be the
// entire file). Checks: the length prefix fits (≤ kMaxSafetensorsHeaderBytes and inside the
// file), the JSON is a well-formed object, every entry has a supported dtype, a shape of
// non-negative integers and data_offsets with size = numel × itemsize, the entries tile the data
// section exactly (contiguous, non-overlapping, no gap, none past the end). Throws ModelError
// naming `fileName` and the tensor.
SafetensorsHeader parseSafetensorsHeader(std::span<const std::byte> file,
                                         const std::string& fileName);

// One safetensors file mapped read-only (common/MappedFile.h: weights are used straight from
// the mapping, so opening a 15 GB model reads its headers, not its data) and its validated header.
class SafetensorsFile {
 public:
  // Throws ModelError naming `path` (UTF-8) when it cannot be opened or mapped, or for a bad
  // header.
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  const SafetensorsHeader& header() const { return header_; }
  const SafetensorsEntry* find(const std::string& name) const;

  // The tensor's bytes as a CPU Tensor sharing ownership of the mapping (no copy). The mapping
  // is read-only: ops take weights as const, and a write would fault. A tensor whose data is not
  // aligned to its element size (legal in the format, never written by safetensors itself) is
  // copied to aligned memory instead.
  compute::Tensor tensor(const SafetensorsEntry& entry) const;

 private:
  std::string path_;
  std::shared_ptr<const common::MappedFile> file_;  // a tensor() shares ownership of it
  SafetensorsHeader header_;
};

}  // namespace lorascope::model

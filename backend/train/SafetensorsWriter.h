// train/SafetensorsWriter.h — writes safetensors files as the reference implementation does:
// an 8-byte little-endian header length, a compact JSON header ("__metadata__" first, then each
// tensor's dtype, shape and data_offsets), spaces padding the header so the data starts 8-byte
// aligned, then the tensors back to back (larger dtypes first, then by name).
//
// Files are written durably (common/DurableFile.h): a temp file in the same directory, streamed
// tensor by tensor (a merged 1 GB model is never held twice in memory), fsync, rename, fsync of
// the directory. A crash leaves the old file or the new one, never a torn one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "compute/Tensor.h"  // defines: DType, Shape

namespace lorascope::train {

struct TensorToWrite {
  std::string name;
  compute::DType dtype = compute::DType::F32;
  compute::Shape shape;
  // The data, numel·itemsize bytes (little-endian)...
  std::span<const std::byte> bytes;
  // ...or, when set, called once while writing to produce them (data computed on demand).
  std::function<std::vector<std::byte>()> produce;
};

using SafetensorsMetadata = std::map<std::string, std::string>;

// A tensor view of fp32 values (the span must outlive the write).
TensorToWrite f32TensorToWrite(std::string name, compute::Shape shape,
                               std::span<const float> values);

// The header bytes (without the 8-byte length), padded with spaces to a multiple of 8, and the
// order the tensors' data follows. Throws std::invalid_argument for duplicate or reserved names.
struct SafetensorsLayout {
  std::string headerText;
  std::vector<std::size_t> order;  // indices into the tensors, in data order
};
SafetensorsLayout layoutSafetensors(std::span<const TensorToWrite> tensors,
                                    const SafetensorsMetadata& metadata);

// Called after each tensor's data is written, with that tensor's byte count.
using TensorWritten = std::function<void(std::uint64_t bytes)>;

// Writes `path` durably. Throws std::invalid_argument when a tensor's bytes do not match its
// dtype × shape (naming it), std::runtime_error naming the path for I/O failures.
void writeSafetensors(const std::filesystem::path& path, std::span<const TensorToWrite> tensors,
                      const SafetensorsMetadata& metadata, const TensorWritten& written = {});

}  // namespace lorascope::train

// train/SafetensorsWriter.cpp — safetensors layout (as the Rust reference lays it out) and the
// streamed write through common::DurableFileWriter.
#include "train/SafetensorsWriter.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "common/DurableFile.h"
#include "common/OsError.h"     // defines: pathText
#include "model/Safetensors.h"  // defines: safetensorsDtypeName

namespace lorascope::train {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kHeaderAlignmentBytes = 8;  // data starts 8-byte aligned, as the reference

// The reference sorts by dtype, larger enum (wider type) first: F32, then BF16, then F16.
int dtypeOrder(compute::DType dtype) {
  switch (dtype) {
    case compute::DType::F32:
      return 0;
    case compute::DType::BF16:
      return 1;
    case compute::DType::F16:
      return 2;
    case compute::DType::NF4:  // never written: NF4 exists only in memory (model/DeviceWeights.h)
      return 3;
  }
  return 0;
}

std::uint64_t tensorBytes(const TensorToWrite& t) {
  return static_cast<std::uint64_t>(compute::numelOf(t.shape)) * compute::dtypeBytes(t.dtype);
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
    header[t.name] = nlohmann::ordered_json{{"dtype", model::safetensorsDtypeName(t.dtype)},
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
      throw std::invalid_argument(
          common::pathText(path) + ": tensor '" + t.name + "' has " +
          std::to_string(t.bytes.size()) + " bytes but " + model::safetensorsDtypeName(t.dtype) +
          compute::shapeToString(t.shape) + " needs " + std::to_string(tensorBytes(t)));
    }
  }
  const SafetensorsLayout layout = layoutSafetensors(tensors, metadata);
  common::DurableFileWriter out(path);
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
        throw std::invalid_argument(common::pathText(path) + ": tensor '" + t.name + "' produced " +
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

}  // namespace lorascope::train

// Safetensors.cpp — header validation and zero-copy tensor views of a mapped safetensors file.
#include "model/Safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/EnumNames.h"
#include "common/MappedFile.h"
#include "common/OsError.h"  // defines: OsError, pathFromUtf8
#include "model/ModelError.h"

namespace lorascope::model {
namespace {

using compute::DType;
using nlohmann::json;

constexpr common::EnumName<DType> kDtypeNames[] = {
    {DType::F32, "F32"}, {DType::BF16, "BF16"}, {DType::F16, "F16"}};
static_assert(common::coversEnum(kDtypeNames));

bool isKnownSafetensorsDtype(const std::string& name) {
  static const char* const kOthers[] = {"BOOL", "U8",      "I8",      "I16",  "U16",     "I32",
                                        "U32",  "I64",     "U64",     "F64",  "F8_E4M3", "F8_E5M2",
                                        "F4",   "F6_E2M3", "F6_E3M2", "E8M0", "F8_E8M0"};
  return std::any_of(std::begin(kOthers), std::end(kOthers),
                     [&](const char* other) { return name == other; });
}

std::uint64_t readLittleEndian64(std::span<const std::byte> bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) {
    value = (value << 8) | static_cast<std::uint8_t>(bytes[static_cast<std::size_t>(i)]);
  }
  return value;
}

SafetensorsEntry parseEntry(const std::string& name, const json& spec, const std::string& file) {
  const auto bad = [&](const std::string& problem) {
    return ModelError(file, "tensor '" + name + "': " + problem);
  };
  if (!spec.is_object()) {
    throw bad("header entry must be an object, got " + spec.dump());
  }
  SafetensorsEntry e;
  e.name = name;
  if (!spec.contains("dtype") || !spec.at("dtype").is_string()) {
    throw bad("'dtype' is missing or not a string");
  }
  const std::string dtypeName = spec.at("dtype").get<std::string>();
  const std::optional<DType> dtype = dtypeFromSafetensorsName(dtypeName);
  if (!dtype) {
    throw bad(isKnownSafetensorsDtype(dtypeName)
                  ? "dtype " + dtypeName + " is not loaded by LoRAscope (BF16, F16, F32 are)"
                  : "unknown dtype '" + dtypeName + "'");
  }
  e.dtype = *dtype;
  if (!spec.contains("shape") || !spec.at("shape").is_array()) {
    throw bad("'shape' is missing or not an array");
  }
  std::uint64_t numel = 1;
  for (const json& d : spec.at("shape")) {
    if (!d.is_number_unsigned()) {
      throw bad("shape " + spec.at("shape").dump() + " holds a non-integer or negative size");
    }
    const auto size = d.get<std::uint64_t>();
    if (size > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
        (size != 0 && numel > std::numeric_limits<std::uint64_t>::max() / 16 / size)) {
      throw bad("shape " + spec.at("shape").dump() + " is too large");
    }
    numel *= size;
    e.shape.push_back(static_cast<std::int64_t>(size));
  }
  const json* offsets = spec.contains("data_offsets") ? &spec.at("data_offsets") : nullptr;
  if (offsets == nullptr || !offsets->is_array() || offsets->size() != 2 ||
      !offsets->at(0).is_number_unsigned() || !offsets->at(1).is_number_unsigned()) {
    throw bad("'data_offsets' must be [begin, end] with non-negative integers");
  }
  e.begin = offsets->at(0).get<std::uint64_t>();
  e.end = offsets->at(1).get<std::uint64_t>();
  if (e.end < e.begin) {
    throw bad("data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
              "] end before they begin");
  }
  const std::uint64_t expectedBytes = numel * compute::dtypeBytes(e.dtype);
  if (e.end - e.begin != expectedBytes) {
    throw bad("data_offsets span " + std::to_string(e.end - e.begin) + " bytes but " + dtypeName +
              compute::shapeToString(e.shape) + " needs " + std::to_string(expectedBytes));
  }
  return e;
}

// Entries sorted by offset must tile [0, dataBytes) exactly.
void checkTiling(const std::map<std::string, SafetensorsEntry>& tensors, std::uint64_t dataBytes,
                 const std::string& file) {
  std::vector<const SafetensorsEntry*> order;
  order.reserve(tensors.size());
  for (const auto& entry : tensors) {
    order.push_back(&entry.second);
  }
  std::sort(order.begin(), order.end(), [](const SafetensorsEntry* a, const SafetensorsEntry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  std::uint64_t cursor = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const SafetensorsEntry* e : order) {
    if (e->begin < cursor) {
      throw ModelError(file, "tensor '" + e->name + "' at bytes [" + std::to_string(e->begin) +
                                 ", " + std::to_string(e->end) + ") overlaps tensor '" +
                                 previous->name + "' ending at " + std::to_string(cursor));
    }
    if (e->begin > cursor) {
      throw ModelError(file, "gap of " + std::to_string(e->begin - cursor) +
                                 " bytes before tensor '" + e->name +
                                 "' (offsets must be contiguous)");
    }
    cursor = e->end;
    previous = e;
  }
  if (cursor > dataBytes) {
    throw ModelError(file, "tensor '" + previous->name + "' ends at data byte " +
                               std::to_string(cursor) + " but the file holds only " +
                               std::to_string(dataBytes) + " data bytes (truncated file?)");
  }
  if (cursor < dataBytes) {
    throw ModelError(file, std::to_string(dataBytes - cursor) +
                               " bytes at the end of the data belong to no tensor");
  }
}

}  // namespace

const char* safetensorsDtypeName(DType dtype) {
  return common::enumName(kDtypeNames, dtype);
}

std::optional<DType> dtypeFromSafetensorsName(std::string_view name) {
  return common::parseEnum(kDtypeNames, name);
}

SafetensorsHeader parseSafetensorsHeader(std::span<const std::byte> file,
                                         const std::string& fileName) {
  if (file.size() < 8) {
    throw ModelError(fileName, "only " + std::to_string(file.size()) +
                                   " bytes; a safetensors file starts with an 8-byte header "
                                   "length (truncated file?)");
  }
  const std::uint64_t headerBytes = readLittleEndian64(file.first(8));
  if (headerBytes > kMaxSafetensorsHeaderBytes) {
    throw ModelError(fileName, "header length " + std::to_string(headerBytes) +
                                   " bytes exceeds the format's limit of " +
                                   std::to_string(kMaxSafetensorsHeaderBytes));
  }
  if (headerBytes > file.size() - 8) {
    throw ModelError(fileName, "header length " + std::to_string(headerBytes) +
                                   " bytes runs past the end of the " +
                                   std::to_string(file.size()) + "-byte file (truncated file?)");
  }
  const auto* text = reinterpret_cast<const char*>(file.data() + 8);
  const json doc = json::parse(text, text + headerBytes, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    throw ModelError(fileName, "header is not a well-formed JSON object");
  }
  SafetensorsHeader header;
  header.dataOffsetBytes = 8 + headerBytes;
  for (const auto& [name, spec] : doc.items()) {
    if (name == "__metadata__") {
      if (!spec.is_object()) {
        throw ModelError(fileName, "'__metadata__' must be an object of strings");
      }
      continue;
    }
    header.tensors.emplace(name, parseEntry(name, spec, fileName));
  }
  checkTiling(header.tensors, file.size() - header.dataOffsetBytes, fileName);
  return header;
}

namespace {

std::shared_ptr<const common::MappedFile> mapModelFile(const std::string& path) {
  try {
    return common::MappedFile::openReadOnly(common::pathFromUtf8(path));
  } catch (const common::OsError& e) {
    throw ModelError(path, e.detail());
  }
}

}  // namespace

SafetensorsFile::SafetensorsFile(const std::string& path)
    : path_(path),
      file_(mapModelFile(path)),
      header_(parseSafetensorsHeader(file_->bytes(), path)) {}

const SafetensorsEntry* SafetensorsFile::find(const std::string& name) const {
  const auto it = header_.tensors.find(name);
  return it == header_.tensors.end() ? nullptr : &it->second;
}

compute::Tensor SafetensorsFile::tensor(const SafetensorsEntry& entry) const {
  const std::byte* data = file_->bytes().data() + header_.dataOffsetBytes + entry.begin;
  const std::size_t bytes = static_cast<std::size_t>(entry.end - entry.begin);
  if (reinterpret_cast<std::uintptr_t>(data) % compute::dtypeBytes(entry.dtype) == 0) {
    // Aliasing constructor: the tensor keeps the whole mapping alive.
    return compute::Tensor(std::shared_ptr<void>(file_, const_cast<std::byte*>(data)), entry.dtype,
                           entry.shape, compute::Device::Cpu);
  }
  auto words = std::make_shared<std::uint32_t[]>((bytes + 3) / 4);
  std::memcpy(words.get(), data, bytes);
  return compute::Tensor(std::shared_ptr<void>(words, words.get()), entry.dtype, entry.shape,
                         compute::Device::Cpu);
}

}  // namespace lorascope::model

// SafetensorsWriter.h — test helper: writes safetensors files (well-formed, or with a header the
// test spells out byte for byte) and model folders into a temporary directory.
#pragma once

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace lorascope::test {

struct RawTensor {
  std::string name;
  std::string dtype;  // "F32", "BF16", ...
  std::vector<std::int64_t> shape;
  std::vector<std::uint8_t> bytes;
};

// The file bytes: 8-byte little-endian length, header text, data.
inline std::vector<std::uint8_t> safetensorsBytes(const std::string& header,
                                                  const std::vector<std::uint8_t>& data) {
  std::vector<std::uint8_t> out(8);
  const std::uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// A well-formed file holding `tensors` back to back.
inline std::vector<std::uint8_t> safetensorsBytes(const std::vector<RawTensor>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::vector<std::uint8_t> data;
  for (const RawTensor& t : tensors) {
    header[t.name] = {{"dtype", t.dtype},
                      {"shape", t.shape},
                      {"data_offsets", {data.size(), data.size() + t.bytes.size()}}};
    data.insert(data.end(), t.bytes.begin(), t.bytes.end());
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // as safetensors does: data 8-byte aligned
  return safetensorsBytes(text, data);
}

inline std::vector<std::uint8_t> f32Bytes(const std::vector<float>& values) {
  std::vector<std::uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

inline RawTensor f32Tensor(const std::string& name, std::vector<std::int64_t> shape, float fill) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    n *= d;
  }
  return {name, "F32", std::move(shape),
          f32Bytes(std::vector<float>(static_cast<std::size_t>(n), fill))};
}

inline void writeFile(const std::filesystem::path& path, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

inline void writeFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace lorascope::test

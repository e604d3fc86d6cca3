// fuzz_safetensors_header.cpp — libFuzzer target: any byte string as a whole safetensors file.
// The parser must either accept it or throw ModelError; nothing else (no crash, no other
// exception, no read outside the input — ASan watches).
#include <cstddef>
#include <cstdint>
#include <span>

#include "model/ModelError.h"
#include "model/Safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const auto header = lorascope::model::parseSafetensorsHeader(
        std::as_bytes(std::span(data, size)), "fuzz.safetensors");
    // Accepted headers must describe tensors inside the input.
    for (const auto& [name, entry] : header.tensors) {
      if (header.dataOffsetBytes + entry.end > size) {
        __builtin_trap();
      }
    }
  } catch (const lorascope::model::ModelError&) {
  }
  return 0;
}

// test_checksum.cpp — common::crc32 and common::crc32c give the standard check values and what the
// bytewise definitions give, for every length and alignment of a tail and on a large buffer; the
// CRC-32C of the CPU's instruction equals the software's (files written on one machine read on
// another).
#include "TestRunner.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/Checksum.h"

using namespace lorascope::common;

namespace {

std::vector<std::byte> bytesOf(const std::string& text) {
  std::vector<std::byte> out(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    out[i] = static_cast<std::byte>(text[i]);
  }
  return out;
}

// The definition: one bit at a time, reflected `polynomial`.
std::uint32_t bitwise(std::span<const std::byte> data, std::uint32_t polynomial) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (const std::byte b : data) {
    crc ^= static_cast<std::uint8_t>(b);
    for (int k = 0; k < 8; ++k) {
      crc = (crc & 1) ? polynomial ^ (crc >> 1) : crc >> 1;
    }
  }
  return crc ^ 0xFFFFFFFFu;
}

std::vector<std::byte> pseudoRandomBytes(std::size_t n) {
  std::vector<std::byte> data(n);
  std::uint32_t x = 12345;
  for (std::byte& b : data) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return data;
}

}  // namespace

TEST_CASE(checkValuesAreTheStandardOnes) {
  COMPARE(crc32(bytesOf("123456789")), 0xCBF43926u);   // CRC-32/ISO-HDLC
  COMPARE(crc32c(bytesOf("123456789")), 0xE3069283u);  // CRC-32C
  COMPARE(crc32cSoftware(bytesOf("123456789")), 0xE3069283u);
  COMPARE(crc32c({}), 0u);
}

TEST_CASE(everyPathEqualsTheDefinitionAtEveryLengthAndAlignment) {
  const std::vector<std::byte> data = pseudoRandomBytes(std::size_t{1} << 20);
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t length = 0; length <= 40; ++length) {
      const std::span<const std::byte> piece(data.data() + offset, length);
      COMPARE(crc32(piece), bitwise(piece, 0xEDB88320u));
      const std::uint32_t castagnoli = bitwise(piece, 0x82F63B78u);
      COMPARE(crc32c(piece), castagnoli);
      COMPARE(crc32cSoftware(piece), castagnoli);
    }
  }
  COMPARE(crc32(data), bitwise(data, 0xEDB88320u));
  COMPARE(crc32c(data), bitwise(data, 0x82F63B78u));
  COMPARE(crc32cSoftware(data), crc32c(data));
}

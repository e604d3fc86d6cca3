// common/Checksum.cpp — slicing-by-8 tables for both polynomials, and the x86-64 crc32 instruction
// for CRC-32C behind a run-time check of the CPU.
#include "common/Checksum.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#define LORASCOPE_CRC32C_INSTRUCTION 1
#include <nmmintrin.h>  // defines: _mm_crc32_u64, _mm_crc32_u8
#if defined(_MSC_VER)
#include <intrin.h>  // defines: __cpuid
#endif
#endif

namespace lorascope::common {
namespace {

using Tables = std::array<std::array<std::uint32_t, 256>, 8>;

// The eight tables of a reflected polynomial: table k advances a byte through k further bytes.
template <std::uint32_t Polynomial>
const Tables& tablesOf() {
  static const Tables tables = [] {
    Tables t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) {
        c = (c & 1) ? Polynomial ^ (c >> 1) : c >> 1;
      }
      t[0][i] = c;
    }
    for (std::size_t k = 1; k < t.size(); ++k) {
      for (std::size_t i = 0; i < 256; ++i) {
        t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFFu];
      }
    }
    return t;
  }();
  return tables;
}

// Slicing-by-8: eight bytes a round through eight tables.
template <std::uint32_t Polynomial>
std::uint32_t slicingBy8(std::span<const std::byte> data) {
  const Tables& tables = tablesOf<Polynomial>();
  std::uint32_t crc = 0xFFFFFFFFu;
  const std::byte* p = data.data();
  std::size_t left = data.size();
  const auto byteAt = [&](std::size_t i) { return static_cast<std::uint32_t>(p[i]); };
  for (; left >= 8; p += 8, left -= 8) {
    // Assembled byte by byte: the same on any endianness (compilers fuse it into one load).
    const std::uint32_t one =
        crc ^ (byteAt(0) | byteAt(1) << 8 | byteAt(2) << 16 | byteAt(3) << 24);
    const std::uint32_t two = byteAt(4) | byteAt(5) << 8 | byteAt(6) << 16 | byteAt(7) << 24;
    crc = tables[7][one & 0xFFu] ^ tables[6][(one >> 8) & 0xFFu] ^ tables[5][(one >> 16) & 0xFFu] ^
          tables[4][one >> 24] ^ tables[3][two & 0xFFu] ^ tables[2][(two >> 8) & 0xFFu] ^
          tables[1][(two >> 16) & 0xFFu] ^ tables[0][two >> 24];
  }
  for (std::size_t i = 0; i < left; ++i) {
    crc = tables[0][(crc ^ byteAt(i)) & 0xFFu] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

constexpr std::uint32_t kIsoHdlc = 0xEDB88320u;     // reflected IEEE 802.3 polynomial
constexpr std::uint32_t kCastagnoli = 0x82F63B78u;  // reflected Castagnoli polynomial

#if defined(LORASCOPE_CRC32C_INSTRUCTION)
#if defined(__GNUC__)
__attribute__((target("sse4.2")))
#endif
std::uint32_t
crc32cInstruction(std::span<const std::byte> data) {
  std::uint64_t crc = 0xFFFFFFFFu;
  const std::byte* p = data.data();
  std::size_t left = data.size();
  for (; left >= 8; p += 8, left -= 8) {
    std::uint64_t word;
    std::memcpy(&word, p, sizeof word);  // little-endian, as the instruction reads memory
    crc = _mm_crc32_u64(crc, word);
  }
  auto crc32 = static_cast<std::uint32_t>(crc);
  for (; left > 0; ++p, --left) {
    crc32 = _mm_crc32_u8(crc32, static_cast<std::uint8_t>(*p));
  }
  return crc32 ^ 0xFFFFFFFFu;
}

bool cpuHasCrc32Instruction() {
#if defined(_MSC_VER)
  int info[4] = {};
  __cpuid(info, 1);
  return (info[2] & (1 << 20)) != 0;  // SSE4.2
#else
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
#endif
}
#endif

}  // namespace

std::uint32_t crc32(std::span<const std::byte> data) {
  return slicingBy8<kIsoHdlc>(data);
}

std::uint32_t crc32cSoftware(std::span<const std::byte> data) {
  return slicingBy8<kCastagnoli>(data);
}

std::uint32_t crc32c(std::span<const std::byte> data) {
#if defined(LORASCOPE_CRC32C_INSTRUCTION)
  static const bool instruction = cpuHasCrc32Instruction();
  if (instruction) {
    return crc32cInstruction(data);
  }
#endif
  return crc32cSoftware(data);
}

}  // namespace lorascope::common

// common/Checksum.h — CRC-32 (ISO-HDLC, zlib's and PNG's) and CRC-32C (Castagnoli: TensorBoard's
// records and the state mirror's slots). The same values on every machine; CRC-32C uses the CPU's
// crc32 instruction (x86-64 SSE4.2) where it has one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace lorascope::common {

// CRC-32/ISO-HDLC, slicing-by-8 in software.
std::uint32_t crc32(std::span<const std::byte> data);

// CRC-32C: the crc32 instruction where the CPU has it (about 8 bytes per 3 cycles, a few times
// the software's speed: the engine checksums its whole trainer state after every step), else
// crc32cSoftware.
std::uint32_t crc32c(std::span<const std::byte> data);

// CRC-32C, slicing-by-8 in software: what crc32c computes on a CPU without the instruction.
std::uint32_t crc32cSoftware(std::span<const std::byte> data);

}  // namespace lorascope::common

// train/Philox.cpp — Philox4x32-10 rounds and the draws built on them.
#include "train/Philox.h"

namespace lorascope::train {
namespace {

constexpr std::uint32_t kMultiplier0 = 0xD2511F53u;  // Philox4x32 round multipliers
constexpr std::uint32_t kMultiplier1 = 0xCD9E8D57u;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;  // key schedule increments (golden ratio, √3 − 1)
constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  const std::uint64_t product = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(product >> 32);
  lo = static_cast<std::uint32_t>(product);
}

}  // namespace

std::array<std::uint32_t, 4> philox4x32(std::uint64_t seed, std::uint64_t stream,
                                        std::uint64_t index) {
  std::array<std::uint32_t, 4> c = {
      static_cast<std::uint32_t>(index), static_cast<std::uint32_t>(index >> 32),
      static_cast<std::uint32_t>(stream), static_cast<std::uint32_t>(stream >> 32)};
  std::uint32_t k0 = static_cast<std::uint32_t>(seed);
  std::uint32_t k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < kRounds; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMultiplier0, c[0], hi0, lo0);
    mulhilo(kMultiplier1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

float uniformFloat(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  const std::uint32_t word = philox4x32(seed, stream, i / 4)[i % 4];
  return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);  // 24 bits: exact in a float
}

std::uint64_t uniformBelow(std::uint64_t seed, std::uint64_t stream, std::uint64_t& index,
                           std::uint64_t bound) {
  // 2^64 mod bound: the draws below it are the surplus that would bias the modulo.
  const std::uint64_t threshold = (std::uint64_t{0} - bound) % bound;
  for (;;) {
    const auto words = philox4x32(seed, stream, index++);
    const std::uint64_t draw = (static_cast<std::uint64_t>(words[0]) << 32) | words[1];
    if (draw >= threshold) {
      return draw % bound;
    }
  }
}

}  // namespace lorascope::train

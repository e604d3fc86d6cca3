// cpu/fast_exp.cpp — see fast_exp.h for the method and its accuracy.
#include "compute/cpu/fast_exp.h"

#include <bit>
#include <cstring>

#include "compute/cpu/lanes4.h"  // defines: Float4, Int4, clampLanes

namespace lorascope::compute::cpu {
namespace {

constexpr float kMinArgument = -87.3f;  // e^x stays a normal float above this
constexpr float kMaxArgument = 88.3f;   // and finite below this
constexpr float kLog2e = 1.44269504088896341f;
constexpr float kRoundMagic = 12582912.0f;  // 1.5·2²³: adding it rounds to an integer in the bits
constexpr std::int32_t kRoundMagicBits = 0x4B400000;
constexpr float kLn2Hi = 0.693359375f;  // ln 2 split so that n·kLn2Hi is exact
constexpr float kLn2Lo = -2.12194440e-4f;

Float4 exp4(Float4 x) {
  x = clampLanes(x, kMinArgument, kMaxArgument);
  const Float4 t = x * kLog2e + kRoundMagic;
  const Float4 n = t - kRoundMagic;
  const Float4 r = x - n * kLn2Hi - n * kLn2Lo;
  Float4 p = Float4{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const Float4 y = p * r * r + r + 1.0f;
  const Int4 exponent = ((std::bit_cast<Int4>(t) - kRoundMagicBits) + 127) << 23;
  return y * std::bit_cast<Float4>(exponent);
}

// y[i] = lanes(x[i..i+4)) over the array; the tail goes through the same lanes, padded.
template <typename Lanes>
void mapLanes(const float* x, float* y, std::int64_t count, Lanes lanes) {
  std::int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    Float4 v;
    std::memcpy(&v, x + i, sizeof v);
    v = lanes(v);
    std::memcpy(y + i, &v, sizeof v);
  }
  if (i < count) {
    Float4 v = {};
    std::memcpy(&v, x + i, static_cast<std::size_t>(count - i) * sizeof(float));
    v = lanes(v);
    std::memcpy(y + i, &v, static_cast<std::size_t>(count - i) * sizeof(float));
  }
}

}  // namespace

void expArray(const float* x, float* y, std::int64_t count, float scale, float shift) {
  mapLanes(x, y, count, [=](Float4 v) { return exp4(v * scale - shift); });
}

void sigmoidArray(const float* x, float* y, std::int64_t count) {
  mapLanes(x, y, count, [](Float4 v) { return 1.0f / (1.0f + exp4(-v)); });
}

double sumAsDouble(const float* x, std::int64_t count) {
  double partial[4] = {};
  std::int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    for (int l = 0; l < 4; ++l) {
      partial[l] += x[i + l];
    }
  }
  for (; i < count; ++i) {
    partial[0] += x[i];
  }
  return (partial[0] + partial[1]) + (partial[2] + partial[3]);
}

}  // namespace lorascope::compute::cpu

// cpu/lanes4.h — four float (int32) lanes for fast_exp.cpp: GCC/clang vector types (one SSE2 or
// NEON register) where the compiler has them, else a portable struct with the same operators
// lane by lane (MSVC; or any compiler with -DLORASCOPE_PORTABLE_LANES, which
// tests/compute/test_fast_exp_portable.cpp builds so the fallback is checked on Linux too). Both
// compute each lane with the same IEEE operations in the same order: identical results.
#pragma once

#include <cstdint>

namespace lorascope::compute::cpu {

#if (defined(__GNUC__) || defined(__clang__)) && !defined(LORASCOPE_PORTABLE_LANES)

using Float4 = float __attribute__((vector_size(16)));
using Int4 = std::int32_t __attribute__((vector_size(16)));

// Per lane: x clamped to [low, high].
inline Float4 clampLanes(Float4 x, float low, float high) {
  const Float4 zero = {};
  x = x < zero + low ? zero + low : x;
  return x > zero + high ? zero + high : x;
}

#else

template <typename T>
struct Lanes4 {
  T lane[4];
};

template <typename T, typename Op>
Lanes4<T> eachLane(Lanes4<T> a, Lanes4<T> b, Op op) {
  return {{op(a.lane[0], b.lane[0]), op(a.lane[1], b.lane[1]), op(a.lane[2], b.lane[2]),
           op(a.lane[3], b.lane[3])}};
}
template <typename T>
Lanes4<T> broadcast(T s) {
  return {{s, s, s, s}};
}

#define LORASCOPE_LANES4_OPERATOR(OP)                            \
  template <typename T>                                          \
  Lanes4<T> operator OP(Lanes4<T> a, Lanes4<T> b) {              \
    return eachLane(a, b, [](T x, T y) -> T { return x OP y; }); \
  }                                                              \
  template <typename T>                                          \
  Lanes4<T> operator OP(Lanes4<T> a, T s) {                      \
    return a OP broadcast(s);                                    \
  }                                                              \
  template <typename T>                                          \
  Lanes4<T> operator OP(T s, Lanes4<T> a) {                      \
    return broadcast(s) OP a;                                    \
  }
LORASCOPE_LANES4_OPERATOR(+)
LORASCOPE_LANES4_OPERATOR(-)
LORASCOPE_LANES4_OPERATOR(*)
LORASCOPE_LANES4_OPERATOR(/)
#undef LORASCOPE_LANES4_OPERATOR

template <typename T>
Lanes4<T> operator-(Lanes4<T> a) {
  return T(0) - a;
}
inline Lanes4<std::int32_t> operator<<(Lanes4<std::int32_t> a, int bits) {
  return eachLane(a, broadcast(bits), [](std::int32_t x, std::int32_t n) -> std::int32_t {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(x) << n);
  });
}

using Float4 = Lanes4<float>;
using Int4 = Lanes4<std::int32_t>;

inline Float4 clampLanes(Float4 x, float low, float high) {
  return eachLane(x, broadcast(0.0f), [=](float v, float) {
    v = v < low ? low : v;
    return v > high ? high : v;
  });
}

#endif

}  // namespace lorascope::compute::cpu

// compute/Nf4.h — QLoRA's 4-bit NormalFloat (NF4) weights with double quantisation: the format,
// the host quantiser (at load time, from bf16/f16/f32) and the host dequantiser (the CPU
// reference; hip/nf4.hip is its GPU twin).
//
// The numbers are QLoRA's (Dettmers et al. 2023, and bitsandbytes' quantize_4bit with
// compress_statistics, which PEFT's QLoRA recipe uses):
//   - the weight, flattened, is cut into blocks of 64; each block keeps absmax = max |w|, and each
//     w is stored as the index (4 bits) of the NF4 code value nearest to w / absmax;
//   - double quantisation: offset = the mean of all absmax values; absmax − offset is quantised
//     again in groups of 256 blocks with the signed 8-bit dynamic code (bitsandbytes'
//     create_dynamic_map), each group keeping its own f32 absmax2 = max |absmax − offset|;
//   - a weight comes back as nf4[index] · (dynamic[qabsmax] · absmax2 + offset).
// The 4-bit indices are chosen against the exact absmax, as bitsandbytes does; only the
// dequantiser sees the reconstructed one. Ties of "nearest" go to the lower code value.
//
// Storage (one buffer per tensor, so a compute::Tensor of dtype NF4 is one allocation):
//   header  16 bytes: offset (f32), then 12 zero bytes
//   group g (16384 weights) at kHeaderBytes + g · kGroupBytes:
//     codes    8192 bytes: two weights a byte, the first in the high nibble (bitsandbytes' order)
//     qabsmax   256 bytes: one 8-bit dynamic code per block
//     absmax2     4 bytes: f32
// The last group is padded to full size (zero codes, code 0 of the absmax); the padding is never
// read back as a weight. So an element's group, block and byte follow from its index alone.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "compute/Tensor.h"  // defines: DType

namespace lorascope::compute::nf4 {

inline constexpr std::int64_t kBlockSize = 64;        // weights per absmax (QLoRA)
inline constexpr std::int64_t kBlocksPerGroup = 256;  // absmax values per absmax2 (QLoRA)
inline constexpr std::int64_t kGroupWeights = kBlockSize * kBlocksPerGroup;  // 16384
inline constexpr std::size_t kHeaderBytes = 16;
inline constexpr std::size_t kGroupCodeBytes = kGroupWeights / 2;  // 8192
inline constexpr std::size_t kGroupBytes = kGroupCodeBytes + kBlocksPerGroup + sizeof(float);

// The 16 NF4 code values of QLoRA's Appendix E / bitsandbytes' get_4bit_type("nf4"), ascending.
inline constexpr std::array<float, 16> kCode = {-1.0f,
                                                -0.6961928009986877f,
                                                -0.5250730514526367f,
                                                -0.39491748809814453f,
                                                -0.28444138169288635f,
                                                -0.18477343022823334f,
                                                -0.09105003625154495f,
                                                0.0f,
                                                0.07958029955625534f,
                                                0.16093020141124725f,
                                                0.24611230194568634f,
                                                0.33791524171829224f,
                                                0.44070982933044434f,
                                                0.5626170039176941f,
                                                0.7229568362236023f,
                                                1.0f};

// bitsandbytes' create_dynamic_map(signed=True, max_exponent_bits=7, total_bits=8), computed in
// f32 as torch does it (linspace, midpoints, powers of ten), ascending: the second-level code.
const std::array<float, 256>& dynamicCode();

// Bytes of an NF4 tensor of `numel` weights (header and whole groups).
std::size_t storageBytes(std::int64_t numel);

// The groups of `numel` weights (the last one padded), and where group `group` starts.
inline std::int64_t groupsOf(std::int64_t numel) {
  return (numel + kGroupWeights - 1) / kGroupWeights;
}
inline std::byte* groupStart(std::byte* packed, std::int64_t group) {
  return packed + kHeaderBytes + static_cast<std::size_t>(group) * kGroupBytes;
}
inline const std::byte* groupStart(const std::byte* packed, std::int64_t group) {
  return packed + kHeaderBytes + static_cast<std::size_t>(group) * kGroupBytes;
}

// Index of the value of `table` (ascending, `size` values) nearest to v; ties go to the lower.
int nearestIndex(const float* table, int size, float v);

// Quantises `numel` weights stored as `dtype` (bf16, f16 or f32) into `out` (storageBytes(numel)
// bytes), split over the CPU threads. Deterministic: the same weights give the same bytes.
// Throws ShapeError for an NF4 source or a non-finite weight (naming its index).
void quantize(const void* src, DType dtype, std::int64_t numel, std::byte* out);

// dst[i] = weight offset + i of the NF4 buffer `packed`, for i < count, in f32.
void dequantize(const std::byte* packed, std::int64_t offset, std::int64_t count, float* dst);

// The reconstructed absmax of block `block` (what the dequantiser scales by).
float blockScale(const std::byte* packed, std::int64_t block);

}  // namespace lorascope::compute::nf4

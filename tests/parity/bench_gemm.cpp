// parity/bench_gemm.cpp — TFLOP/s of the vendor GEMM and the built-in one through
// Backend::matmul at the trainer's shapes: a micro-batch of 4096 tokens through the
// Qwen2.5-0.5B projections (y = x·Wᵀ, bf16), one 16384-row lm-head vocabulary chunk, and the
// backward's dx += dy·W (bf16 c, beta = 1), the LoRA gradient dA += gᵀ·x (rank 8, k = 4096 tokens,
// f32 c); and at Llama-3.1-8B's projections for a B1×S2048 micro-batch, the same product with the
// weight in NF4 (--quantize nf4: dequantised into a bf16 workspace, then the GEMM) beside bf16,
// and the dequantisation alone. Qt-free; scripts/gpu-check.sh runs it on the device machine. Exit
// 77 without a GPU. A benchmark, not a test.
//   bench_gemm [--iterations N]
#include <cstdio>
#include <random>
#include <vector>

#include "BenchTiming.h"  // defines: benchIterations, millisecondsPerCall
#include "GpuOrSkip.h"
#include "compute/Backend.h"
#include "compute/Errors.h"
#include "parity/ParityHarness.h"  // defines: randomNormal

using namespace lorascope;

namespace {

using compute::DType;
using compute::GemmImplementation;
using parity::millisecondsPerCall;

struct GemmBenchShape {
  const char* name;
  std::int64_t m, n, k;
  bool transposeA;
  DType cType;
  bool accumulate = false;  // c += a·b (beta = 1), as the backward pass adds to dx
};

void benchShape(compute::Backend& gpu, const GemmBenchShape& s, int iterations, bool vendorGemm,
                std::mt19937& rng) {
  // transposeA: a is stored (k, m), as the activation gradient g of dA += gᵀ·x is; b is then
  // the activation x (k, n). Otherwise a is x (m, k) and b the weight W (n, k), read as Wᵀ.
  const compute::Shape aShape = s.transposeA ? compute::Shape{s.k, s.m} : compute::Shape{s.m, s.k};
  const bool transposeB = !s.transposeA && !s.accumulate;
  const compute::Shape bShape = transposeB ? compute::Shape{s.n, s.k} : compute::Shape{s.k, s.n};
  const auto count = [](const compute::Shape& shape) {
    return static_cast<std::size_t>(compute::numelOf(shape));
  };
  const compute::Tensor a =
      gpu.upload(parity::randomNormal(rng, count(aShape), 0, 1), DType::BF16, aShape);
  const compute::Tensor b =
      gpu.upload(parity::randomNormal(rng, count(bShape), 0, 0.05f), DType::BF16, bShape);
  compute::Tensor c = gpu.empty(s.cType, {s.m, s.n});
  const float beta = s.cType == DType::F32 || s.accumulate ? 1.0f : 0.0f;  // gradients accumulate
  const double flops =
      2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
  std::printf("gemm %-22s m=%-5lld n=%-6lld k=%-5lld", s.name, static_cast<long long>(s.m),
              static_cast<long long>(s.n), static_cast<long long>(s.k));
  double vendorMs = 0.0;
  for (const GemmImplementation impl : {GemmImplementation::Vendor, GemmImplementation::BuiltIn}) {
    if (impl == GemmImplementation::Vendor && !vendorGemm) {
      std::printf("  vendor: n/a");
      continue;
    }
    gpu.setGemmImplementation(impl);
    const double ms = millisecondsPerCall(
        gpu, iterations, [&] { gpu.matmul(a, s.transposeA, b, transposeB, c, 1.0f, beta); });
    std::printf("  %s: %.3f ms %.1f TFLOP/s", compute::gemmImplementationName(impl), ms,
                flops / ms * 1e-9);
    if (impl == GemmImplementation::Vendor) {
      vendorMs = ms;
    } else if (vendorMs > 0.0) {
      std::printf(" (%.2f× vendor speed)", vendorMs / ms);
    }
  }
  std::printf("\n");
}

// y = x·Wᵀ with W (out, in) in bf16 and in NF4, on the selected GEMM, and Backend::dequantize
// alone: what --quantize nf4 adds to a projection's product.
void benchNf4(compute::Backend& gpu, const char* name, std::int64_t tokens, std::int64_t out,
              std::int64_t in, int iterations, std::mt19937& rng) {
  const auto count = static_cast<std::size_t>(out * in);
  const std::vector<float> w = parity::randomNormal(rng, count, 0, 0.02f);
  const compute::Tensor x =
      gpu.upload(parity::randomNormal(rng, static_cast<std::size_t>(tokens * in), 0, 1),
                 DType::BF16, {tokens, in});
  const compute::Tensor dense = gpu.upload(w, DType::BF16, {out, in});
  const compute::Tensor packed = gpu.upload(w, DType::NF4, {out, in});
  compute::Tensor y = gpu.empty(DType::BF16, {tokens, out});
  compute::Tensor scratch = gpu.empty(DType::BF16, {out, in});
  const double bf16Ms = millisecondsPerCall(
      gpu, iterations, [&] { gpu.matmul(x, false, dense, true, y, 1.0f, 0.0f); });
  const double nf4Ms = millisecondsPerCall(
      gpu, iterations, [&] { gpu.matmul(x, false, packed, true, y, 1.0f, 0.0f); });
  const double dequantMs =
      millisecondsPerCall(gpu, iterations, [&] { gpu.dequantize(packed, scratch); });
  std::printf(
      "nf4  %-22s T=%-5lld out=%-6lld in=%-6lld  bf16 W: %.3f ms  nf4 W: %.3f ms "
      "(%.2f×)  dequantize alone: %.3f ms (%.0f GB/s written)\n",
      name, static_cast<long long>(tokens), static_cast<long long>(out), static_cast<long long>(in),
      bf16Ms, nf4Ms, nf4Ms / bf16Ms, dequantMs,
      2.0 * static_cast<double>(count) / dequantMs * 1e-6);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = parity::benchIterations(argc, argv);
  const std::unique_ptr<compute::Backend> gpu = test::gpuOrSkip("bench_gemm");
  if (!gpu) {
    return test::kSkipExitCode;
  }
  bool vendorGemm = true;
  try {
    gpu->setGemmImplementation(GemmImplementation::Vendor);
  } catch (const compute::UnsupportedOpError& e) {
    vendorGemm = false;
    std::printf("note: %s\n", e.what());
  }
  std::printf("bench_gemm on %s, %d iterations, bf16 operands, fp32 accumulation\n",
              gpu->capabilities().name.c_str(), iterations);
  std::mt19937 rng(7);
  const GemmBenchShape shapes[] = {
      {"q/o proj 896->896", 4096, 896, 896, false, DType::BF16},
      {"k/v proj 896->128", 4096, 128, 896, false, DType::BF16},
      {"gate/up 896->4864", 4096, 4864, 896, false, DType::BF16},
      {"down 4864->896", 4096, 896, 4864, false, DType::BF16},
      {"gate/up dx += dy·W", 4096, 896, 4864, false, DType::BF16, true},
      {"lm-head chunk 896->16K", 4096, 16384, 896, false, DType::BF16},
      {"lora dA 8x896, T=4096", 8, 896, 4096, true, DType::F32},
  };
  for (const GemmBenchShape& s : shapes) {
    benchShape(*gpu, s, iterations, vendorGemm, rng);
  }
  if (vendorGemm) {
    gpu->setGemmImplementation(GemmImplementation::Vendor);  // what a run uses by default
  }
  std::printf("NF4 weights on the %s GEMM (Llama-3.1-8B projections, B1 x S2048)\n",
              compute::gemmImplementationName(gpu->gemmImplementation()));
  benchNf4(*gpu, "q/o proj 4096->4096", 2048, 4096, 4096, iterations, rng);
  benchNf4(*gpu, "k/v proj 4096->1024", 2048, 1024, 4096, iterations, rng);
  benchNf4(*gpu, "gate/up 4096->14336", 2048, 14336, 4096, iterations, rng);
  benchNf4(*gpu, "down 14336->4096", 2048, 4096, 14336, iterations, rng);
  return 0;
}

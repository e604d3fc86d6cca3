// parity/bench_attention.cpp — milliseconds per call of the GPU attention kernels at the issue's
// benchmark shapes (B8 × S512: Qwen2.5-0.5B 14/2 heads, Llama-3.2-1B 32/8 heads, head_dim 64),
// at Llama-3.1-8B's (B1 × S2048, 32/8 heads, head_dim 128), and of the fused lm-head +
// cross-entropy at the Qwen2.5-0.5B shape (4096 rows, hidden 896, vocabulary 151936) on the
// backend's default GEMM; and the Llama-3.2-1B shape again with its rows packed with documents
// (--packing documents: a query sees its document's keys alone), of 128 tokens and of a mix of
// chat-example lengths, to show how much of the causal work the kernels skip. Qt-free;
// scripts/gpu-check.sh runs it on the device machine. Exit 77 without a GPU.
//   bench_attention [--iterations N]
// LORASCOPE_ATTENTION_KERNEL=vector times the vector-ALU kernels where matrix cores would serve
// (the line "kernels:" says which ran), so one call can compare the two.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "BenchTiming.h"  // defines: benchIterations, millisecondsPerCall
#include "GpuOrSkip.h"
#include "compute/Backend.h"
#include "parity/ParityHarness.h"  // defines: randomNormal

using namespace lorascope;

namespace {

using parity::millisecondsPerCall;

struct BenchShape {
  const char* name;
  std::int64_t batch, seq, heads, kvHeads, headDim;
  // Each row packed with documents of these lengths in turn (the last cut at the row's end);
  // empty: one sequence a row.
  std::vector<std::int64_t> documents = {};
};

// (B, S) document starts of rows packed with s.documents in turn, and the causal MACs per head
// dim of those documents (each query against its document's keys up to itself).
std::vector<std::int32_t> documentStarts(const BenchShape& s, double& macsPerHeadDim) {
  std::vector<std::int32_t> starts;
  macsPerHeadDim = 0.0;
  std::size_t next = 0;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    std::int64_t start = 0;
    while (start < s.seq) {
      const std::int64_t length = std::min(s.documents[next++ % s.documents.size()], s.seq - start);
      starts.insert(starts.end(), static_cast<std::size_t>(length),
                    static_cast<std::int32_t>(start));
      macsPerHeadDim += static_cast<double>(s.heads) * length * (length + 1) / 2.0;
      start += length;
    }
  }
  return starts;
}

void benchShape(compute::Backend& gpu, const BenchShape& s, int iterations, std::mt19937& rng) {
  using compute::DType;
  const compute::Shape qShape{s.batch, s.seq, s.heads, s.headDim};
  const compute::Shape kvShape{s.batch, s.seq, s.kvHeads, s.headDim};
  const auto qCount = static_cast<std::size_t>(compute::numelOf(qShape));
  const auto kvCount = static_cast<std::size_t>(compute::numelOf(kvShape));
  const compute::Tensor q =
      gpu.upload(parity::randomNormal(rng, qCount, 0, 1), DType::BF16, qShape);
  const compute::Tensor k =
      gpu.upload(parity::randomNormal(rng, kvCount, 0, 1), DType::BF16, kvShape);
  const compute::Tensor v =
      gpu.upload(parity::randomNormal(rng, kvCount, 0, 1), DType::BF16, kvShape);
  const compute::Tensor dout =
      gpu.upload(parity::randomNormal(rng, qCount, 0, 1), DType::BF16, qShape);
  compute::Tensor out = gpu.empty(DType::BF16, qShape);
  compute::Tensor lse = gpu.empty(DType::F32, {s.batch, s.heads, s.seq});
  compute::Tensor dq = gpu.empty(DType::BF16, qShape);
  compute::Tensor dk = gpu.empty(DType::BF16, kvShape);
  compute::Tensor dv = gpu.empty(DType::BF16, kvShape);
  compute::AttentionOptions options(1.0f / std::sqrt(static_cast<float>(s.headDim)));
  // Causal: half of the S² score matrix; forward 2 products (q·kᵀ, p·v), backward 5 (with the
  // recomputed q·kᵀ and dout·vᵀ in both the dq and the dk/dv kernel: 7 as run, 5 as counted by
  // FlashAttention's convention, which we report). With documents, each one's own triangle.
  double causalMacs = static_cast<double>(s.batch) * s.heads * s.seq * (s.seq + 1) / 2.0 *
                      static_cast<double>(s.headDim);
  std::vector<std::int32_t> starts;
  if (!s.documents.empty()) {
    double macsPerHeadDim = 0.0;
    starts = documentStarts(s, macsPerHeadDim);
    options.documentStarts = starts;
    causalMacs = macsPerHeadDim * static_cast<double>(s.headDim);
  }

  const double forwardMs = millisecondsPerCall(
      gpu, iterations, [&] { gpu.attentionForward(q, k, v, options, out, lse); });
  const double backwardMs = millisecondsPerCall(gpu, iterations, [&] {
    gpu.attentionBackward(dout, q, k, v, out, lse, options, dq, dk, dv);
  });
  std::printf(
      "attention %-14s B%lld S%lld heads %lld/%lld hd %lld: forward %.3f ms (%.1f TFLOP/s), "
      "backward %.3f ms (%.1f TFLOP/s)\n",
      s.name, static_cast<long long>(s.batch), static_cast<long long>(s.seq),
      static_cast<long long>(s.heads), static_cast<long long>(s.kvHeads),
      static_cast<long long>(s.headDim), forwardMs, 2 * 2 * causalMacs / forwardMs * 1e-9,
      backwardMs, 5 * 2 * causalMacs / backwardMs * 1e-9);
}

void benchLmHead(compute::Backend& gpu, int iterations, std::mt19937& rng) {
  using compute::DType;
  constexpr std::int64_t rows = 4096, hidden = 896, vocab = 151936;
  const compute::Tensor h =
      gpu.upload(parity::randomNormal(rng, static_cast<std::size_t>(rows * hidden), 0, 1),
                 DType::BF16, {rows, hidden});
  const compute::Tensor w =
      gpu.upload(parity::randomNormal(rng, static_cast<std::size_t>(vocab * hidden), 0, 0.05f),
                 DType::BF16, {vocab, hidden});
  std::vector<std::int32_t> targets(static_cast<std::size_t>(rows));
  for (std::size_t r = 0; r < targets.size(); ++r) {
    targets[r] = static_cast<std::int32_t>(r * 37 % vocab);
  }
  compute::Tensor losses = gpu.empty(DType::F32, {rows});
  compute::Tensor dh = gpu.empty(DType::BF16, {rows, hidden});
  const double ms = millisecondsPerCall(
      gpu, iterations, [&] { gpu.lmHeadCrossEntropy(h, w, targets, 1.0f / rows, losses, dh); });
  // Two GEMMs of rows × vocab × hidden per call.
  const double flop = 2.0 * 2.0 * rows * static_cast<double>(vocab) * hidden;
  std::printf("lm_head_cross_entropy rows %lld hidden %lld vocab %lld: %.3f ms (%.1f TFLOP/s)\n",
              static_cast<long long>(rows), static_cast<long long>(hidden),
              static_cast<long long>(vocab), ms, flop / ms * 1e-9);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = parity::benchIterations(argc, argv);
  const std::unique_ptr<compute::Backend> gpu = test::gpuOrSkip("bench_attention");
  if (!gpu) {
    return test::kSkipExitCode;
  }
  std::printf("bench_attention on %s, %d iterations\n", gpu->capabilities().name.c_str(),
              iterations);
  const char* kernels = std::getenv("LORASCOPE_ATTENTION_KERNEL");
  std::printf("kernels: %s\n", kernels != nullptr && std::string(kernels) == "vector"
                                   ? "vector ALUs (LORASCOPE_ATTENTION_KERNEL=vector)"
                                   : "matrix cores where the device has them (head_dim <= 128)");
  std::mt19937 rng(5);
  // The mix: chat examples of 60-512 tokens, as the alpaca fixture's run at about four
  // characters a token (the demo tokenizer spends about one a character: its rows hold one).
  const BenchShape shapes[] = {
      {"Qwen2.5-0.5B", 8, 512, 14, 2, 64},
      {"Llama-3.2-1B", 8, 512, 32, 8, 64},
      {"Llama docs 128", 8, 512, 32, 8, 64, {128}},
      {"Llama docs mix", 8, 512, 32, 8, 64, {150, 420, 90, 230, 60, 300, 512, 180}},
      {"Llama-3.1-8B", 1, 2048, 32, 8, 128}};
  for (const BenchShape& s : shapes) {
    benchShape(*gpu, s, iterations, rng);
  }
  benchLmHead(*gpu, iterations, rng);
  return 0;
}

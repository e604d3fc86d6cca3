// Backend.h — the compute interface: one method per op, a CPU and a HIP implementation of each.
//
// The CPU backend (cpu/) is the fp32 reference and the fallback; the HIP backend (hip/) keeps
// activations in bf16 with fp32 accumulation. backend/parity checks every HIP op against its CPU
// twin. Ops check their arguments' shapes and dtypes and throw ShapeError naming the op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compute/AdamWScalars.h"
#include "compute/GemmImplementation.h"
#include "compute/StepScalars.h"
#include "compute/Tensor.h"

namespace lorascope::memory {
class DeviceAllocator;
}  // namespace lorascope::memory

namespace lorascope::compute {

// What a backend is and can do; a plain struct so the UI and the engine can report it.
struct BackendCapabilities {
  Device device = Device::Cpu;
  DType activationDType = DType::F32;  // dtype of activations and their gradients
  std::string name;                    // "cpu (OpenBLAS)", "NVIDIA H100 80GB HBM3 (sm_90)", ...
};

// Device memory a GPU backend holds through its caching allocator (current levels).
struct DeviceMemoryUse {
  std::uint64_t allocatedBytes = 0;  // blocks held by live tensors
  std::uint64_t reservedBytes = 0;   // segments obtained from the driver (allocated + cached)
};

// One product of Backend::matmulGroup: c = alpha · op(a) · op(b) + beta · c (as matmul).
struct MatmulProduct {
  const Tensor* a = nullptr;
  bool transposeA = false;
  const Tensor* b = nullptr;
  bool transposeB = false;
  Tensor* c = nullptr;
  float alpha = 1.0f;
  float beta = 0.0f;
};

// One product of Backend::projectionProducts: a frozen projection y = x·op(w), plus its bias where
// one is set, plus, where lhsT is set, its LoRA term scale·lhsTᵀ·op(low) (the up-projection
// scale·u·Bᵀ: lhsT = uᵀ, low = B, transposeLow; or the input gradient g·A: lhsT = gᵀ, low = A).
struct ProjectionProduct {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  bool transposeW = false;
  Tensor* y = nullptr;
  const Tensor* bias = nullptr;
  const Tensor* lhsT = nullptr;
  const Tensor* low = nullptr;
  bool transposeLow = false;
  float scale = 1.0f;
};

// One copy of Backend::copyMatrices: dst = scale·op(src), op the transpose when `transpose`.
struct MatrixCopy {
  const Tensor* src = nullptr;
  Tensor* dst = nullptr;
  bool transpose = false;
  float scale = 1.0f;
};

// One adapted projection of Backend::loraOutputProducts: its output's gradient dy (T, n), its
// LoRA B (n, r) as the products read it, the saved uᵀ = A·xᵀ (r, T), and the outputs. dy may be
// wider than n: then the site's gradient is its columns [dyColumn, dyColumn + n) (gate's or up's
// half of the stacked gradient, Note [stacked gate/up] in train/TrainGraph.cpp).
struct LoraOutputSite {
  const Tensor* dy = nullptr;
  const Tensor* b = nullptr;
  const Tensor* uT = nullptr;
  Tensor* gradB = nullptr;  // (n, r) f32, accumulated
  Tensor* gT = nullptr;     // (r, T) activation dtype, written
  std::int64_t dyColumn = 0;
  // When set, (T, r) activation dtype, may be a column view: gT's transpose, written too (beside a
  // folded group's dy: Note [the LoRA term in the inner dimension] in train/TrainGraph.cpp).
  Tensor* g = nullptr;
};

// One trainable tensor of an AdamW step and its state; all four have the same shape.
struct AdamWTensors {
  Tensor* param = nullptr;
  const Tensor* grad = nullptr;
  Tensor* firstMoment = nullptr;   // m
  Tensor* secondMoment = nullptr;  // v
};

// How causal attention masks and shapes its scores (Gemma 2/3, Mistral): the scale always, a
// sliding window and tanh soft-capping where the model has them.
struct AttentionOptions {
  // Implicit from a bare scale: plain causal attention (what every caller passed before windows).
  AttentionOptions(float attentionScale)  // NOLINT(google-explicit-constructor)
      : scale(attentionScale) {}
  AttentionOptions(float attentionScale, std::int64_t slidingWindow, float scoreSoftcap)
      : scale(attentionScale), window(slidingWindow), softcap(scoreSoftcap) {}
  float scale = 1.0f;       // scores s = scale · q·k
  std::int64_t window = 0;  // query i sees keys i − window < j ≤ i; 0 = every j ≤ i
  float softcap = 0.0f;     // s ← softcap·tanh(s / softcap) before the softmax; 0 = off
  // Rows that pack several documents (train/Batching.h, Note [document packing]): (B, S) host,
  // the first key query (b, i) sees, its document's start in the row: 0 ≤ start ≤ i, and
  // non-decreasing along a row (checkDocumentStarts), so that a tile's first query bounds the
  // keys its queries see. Empty: one document per row (every start 0). Also for the backward.
  std::span<const std::int32_t> documentStarts = {};
};

// The rows an lm-head pass computes in a captured step (Note [predicted rows in a graph] in
// train/StepGraphs.h): every row of h whose target is predicted, in ascending order, then rows
// whose target is not, each once, up to a count fixed by the step's shape; and their targets
// (kIgnoreTarget for the padding). Host memory the step's owner writes before each step: pinned
// on a GPU, so that a replay reads this step's rows. Empty: every row of h.
struct LmHeadRows {
  std::span<const std::int32_t> rows;
  std::span<const std::int32_t> targets;
};
// The multiple a GPU's lm-head pass rounds its row count up to (Note [lm-head row buckets] in
// compute/hip/lm_head_loss.h); graph mode's counts are multiples of it too.
inline constexpr std::int64_t kLmHeadRowBucket = 128;

// Ops captured between Backend::beginCapture and endCapture, replayed as one launch (whole-step
// graph mode: Note [whole-step graphs] in train/StepGraphs.h). Holds what its replays read that
// the capture made: pinned copies of host values, and its blocks of the allocator's graph pool.
class CapturedOps {
 public:
  virtual ~CapturedOps() = default;
  // Runs every captured op again, in order, on the backend's stream, with the addresses and
  // arguments they had at capture: one launch, "step_graph" to the watchdog, the queue tracker
  // and the fault injector. Returns once queued. Throws GpuError (or an injected fault) when the
  // launch fails; nothing ran then.
  virtual void replay() = 0;
};

// A download in flight (Backend::downloadAsync): the values its tensors had when it was asked
// for, arriving on the host while the backend computes on. wait() may be called from another
// thread than the one that asked; destroying it without waiting waits first.
class PendingDownload {
 public:
  virtual ~PendingDownload() = default;
  // Blocks until the values are on the host: one span per tensor, in the order given, valid as
  // long as this object (host memory it owns: pinned memory on a GPU).
  virtual std::vector<std::span<const float>> wait() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  Backend() = default;
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;

  virtual const BackendCapabilities& capabilities() const = 0;

  // The caching allocator behind this backend's tensors (stats, snapshots, policy, arena), or
  // nullptr where tensors are plain host memory (the CPU backend).
  virtual memory::DeviceAllocator* deviceAllocator() { return nullptr; }

  // Memory. Contents of `empty` are unspecified.
  virtual Tensor empty(DType dtype, const Shape& shape) = 0;
  // Copies host floats to a new tensor of `dtype`, rounding to nearest even for 16-bit types; an
  // NF4 tensor is quantised on the host (compute/Nf4.h) and its codes and scales copied.
  virtual Tensor upload(std::span<const float> values, DType dtype, const Shape& shape) = 0;
  // Copies host bytes that already hold `dtype` elements (a mapped bf16 weight, ...) to a new
  // tensor as they are, with no conversion. Throws ShapeError unless bytes.size() is
  // numel(shape) × dtypeBytes(dtype), or when this backend cannot compute with `dtype`.
  virtual Tensor uploadRaw(std::span<const std::byte> bytes, DType dtype, const Shape& shape) = 0;
  // Returns the tensor's values as floats (waits for pending work on it).
  virtual std::vector<float> download(const Tensor& tensor) = 0;
  // Waits until every op issued so far has finished.
  virtual void synchronize() = 0;
  // The f32 `tensors` as they will be once every op issued so far has run, without waiting for
  // those ops: later ops may change the tensors at once. The default (the CPU, whose ops have
  // all run when they return) copies them now. A GPU backend copies them on the device, in
  // stream order (cheap), and downloads the copy into pinned host memory on a side stream while
  // the next ops run (the state mirror's download: train/TrainGraph.h). Throws ShapeError unless
  // every tensor is an f32 tensor of this backend.
  virtual std::unique_ptr<PendingDownload> downloadAsync(std::span<const Tensor* const> tensors);

  // Optional slots; the defaults here are the CPU's answers (host memory has no device cache).
  // Device memory held through the allocator; nullopt for a host backend.
  virtual std::optional<DeviceMemoryUse> deviceMemoryUse() const { return std::nullopt; }
  // Gives cached, unused device memory back to the driver (after a run has moved off this device,
  // so that other processes and the SMI see it free; before a whole-step graph is captured).
  virtual void releaseCachedMemory() {}

  // RMSNorm over the last axis (Llama/Qwen2): y = x * rstd * weight, rstd = 1/sqrt(mean(x²)+eps).
  //   x      (rows, dim)  activation dtype
  //   weight (dim)        any dtype (frozen model weight)
  //   y      (rows, dim)  activation dtype
  //   rstd   (rows)       f32, saved for the backward pass
  virtual void rmsnormForward(const Tensor& x, const Tensor& weight, float eps, Tensor& y,
                              Tensor& rstd) = 0;
  // Input gradient of RMSNorm; the weight is frozen, so no weight gradient is computed.
  //   dy (rows, dim), x (rows, dim), weight (dim), rstd (rows) f32  ->  dx (rows, dim)
  // With accumulate, dx += the gradient (the residual stream's gradient gaining the norm's
  // branch: one pass over dx, rounded once, where a separate add would read and write it again).
  virtual void rmsnormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight,
                               const Tensor& rstd, Tensor& dx, bool accumulate) = 0;

  // --- Ops of the Llama/Qwen2 graph (forward now; the backward pass reuses them) ---------------
  // Token ids, positions and targets are host arrays: they are tiny next to the activations and
  // a GPU backend uploads them with the launch.

  // General matrix product: c = alpha · op(a) · op(b) + beta · c, op(t) = tᵀ when transposed.
  //   a  (M, K), or (K, M) with transposeA   activation dtype
  //   b  (K, N), or (N, K) with transposeB   any dtype (a frozen weight, an f32 LoRA weight, or
  //                                          an activation); an NF4 b (a frozen projection under
  //                                          --quantize nf4) is dequantised for the product: on
  //                                          the CPU block by block into the f32 scratch, on a
  //                                          GPU whole into a bf16 workspace (dequantize below)
  //   c  (M, N)                              activation dtype, or f32 (LoRA weight gradients
  //                                          accumulate in f32); read only when beta != 0
  // A linear layer y = x·Wᵀ is matmul(x, false, W, true, y, 1, 0); its input gradient
  // dx = dy·W is matmul(dy, false, W, false, dx, 1, 0); a LoRA weight gradient dA += dhᵀ·x is
  // matmul(dh, true, x, false, dA, 1, 1).
  virtual void matmul(const Tensor& a, bool transposeA, const Tensor& b, bool transposeB, Tensor& c,
                      float alpha, float beta) = 0;
  // Several products as if by matmul one after another, for the products of one layer that need
  // nothing from each other: q, k and v of one input (or gate and up), and input gradients that
  // sum into one output (dh = dq·Wq + dk·Wk + dv·Wv: the same c, beta 1 after the first, summed in
  // the order given). No product may read another's c. The CPU backend runs them as one launch
  // over the tiles of all the outputs (cpu/matmul.cpp's sgemmGroup); the default calls matmul
  // for each.
  virtual void matmulGroup(std::span<const MatmulProduct> products);
  // The LoRA backward's products from each site's output gradient:
  //   gradB += scale·dyᵀ·uTᵀ (= scale·dyᵀ·u)   and   gT = scale·bᵀ·dyᵀ (g = scale·dy·b)
  // The default is those two matmuls a site, all in one matmulGroup (one launch on the CPU), a
  // column block of dy copied out first on host memory; a GPU backend reads each dy once for both
  // (hip/lora_products.hip) where its kernel serves, a column block in place.
  virtual void loraOutputProducts(std::span<const LoraOutputSite> sites, float scale);
  // The GEMM that matmul runs on from the next call on, so the engine can switch at a step
  // boundary. Throws UnsupportedOpError naming the reason when `impl` is not in this build
  // (Vendor on an AMD build whose ROCm install had no hipBLAS). Default: Vendor where available.
  virtual void setGemmImplementation(GemmImplementation impl) = 0;
  // NF4 weights back to numbers (compute/Nf4.h: nf4[code] · (dynamic[qabsmax] · absmax2 + offset)),
  // rounded once to the activation dtype.
  //   packed (any shape) nf4   out (the same shape) activation dtype
  virtual void dequantize(const Tensor& packed, Tensor& out) = 0;
  virtual GemmImplementation gemmImplementation() const = 0;

  // Embedding gather: out[t] = table[ids[t]]. Throws ShapeError naming the id when one is outside
  // [0, vocab).
  //   table (vocab, dim) any dtype, ids (T) host, out (T, dim) activation dtype
  virtual void embeddingForward(const Tensor& table, std::span<const std::int32_t> ids,
                                Tensor& out) = 0;

  // Rotary position embedding in the rotate_half layout (Llama/Qwen2/Mistral), in place:
  // for i < hd/2 and angle a = positions[t] · invFreq[i],
  //   (x[i], x[i+hd/2]) ← (x[i]·cos a − x[i+hd/2]·sin a, x[i+hd/2]·cos a + x[i]·sin a).
  // `inverse` rotates by −a: the backward pass of the rotation (its transpose).
  //   x (T, heads, hd) activation dtype, positions (T) host, invFreq (hd/2) f32 (rope scaling,
  //   e.g. llama3, is already folded into invFreq by the model)
  virtual void rope(Tensor& x, std::span<const std::int32_t> positions, const Tensor& invFreq,
                    bool inverse) = 0;

  // Causal self-attention with grouped KV heads (GQA): query head h reads KV head
  // h / (heads / kvHeads); out = softmax(cap(scale · q·kᵀ) + mask) · v, the mask causal and, with
  // a window W, hiding keys j ≤ i − W, and with document starts, keys before the query's
  // document's start; cap(s) = softcap·tanh(s / softcap) when softcap > 0.
  //   q   (B, S, heads, hd)    k, v (B, S, kvHeads, hd)    activation dtype
  //   out (B, S, heads, hd)    activation dtype
  //   logsumexp (B, heads, S)  f32: log Σ_j exp(cap(scale · q·k_j)) over the visible keys, saved
  //                            for the backward pass
  virtual void attentionForward(const Tensor& q, const Tensor& k, const Tensor& v,
                                const AttentionOptions& options, Tensor& out,
                                Tensor& logsumexp) = 0;

  // Attention of a generation step over its KV cache (batch 1, no logsumexp: nothing to
  // differentiate): the S new queries sit at positions past … past+S−1, past = keys − S, and
  // query i attends keys 0 … past+i with GQA as above (only past+i − window < j with a sliding
  // window; scores soft-capped as in attentionForward). S = keys is the causal prompt pass.
  //   q (S, heads, hd)   k, v (past + S, kvHeads, hd)   out (S, heads, hd)   activation dtype
  virtual void attentionCached(const Tensor& q, const Tensor& k, const Tensor& v,
                               const AttentionOptions& options, Tensor& out) = 0;

  // SwiGLU of the Llama MLP: out = silu(gate) ⊙ up, silu(g) = g / (1 + e^−g).
  //   gate, up, out (rows, dim) activation dtype
  virtual void swigluForward(const Tensor& gate, const Tensor& up, Tensor& out) = 0;
  // GeGLU of the Gemma MLP: out = gelu_tanh(gate) ⊙ up, with PyTorch's tanh approximation
  // gelu_tanh(g) = ½·g·(1 + tanh(√(2/π)·(g + 0.044715·g³))).
  //   gate, up, out (rows, dim) activation dtype
  virtual void gegluForward(const Tensor& gate, const Tensor& up, Tensor& out) = 0;

  // In place: x ← x · factor (Gemma's embeddings times √hidden).   x any shape, activation dtype
  virtual void scaleActivations(Tensor& x, float factor) = 0;
  // In place: x ← cap·tanh(x / cap) (Gemma 2's final logits).   x any shape, activation dtype
  virtual void softcapInPlace(Tensor& x, float cap) = 0;

  // Residual add, in place: x += y.   x, y (any shape, equal) activation dtype
  virtual void addInPlace(Tensor& x, const Tensor& y) = 0;
  // Bias add over rows, in place: x[r] += bias.   x (rows, dim) activation dtype, bias (dim) any
  virtual void addBias(Tensor& x, const Tensor& bias) = 0;

  // Softmax cross-entropy per row: losses[r] = logsumexp(logits[r]) − logits[r][targets[r]], and
  // 0 where targets[r] == kIgnoreTarget (−100, as in PyTorch). Throws ShapeError naming the
  // target when one is outside [0, vocab) and not ignored.
  //   logits (rows, vocab) activation dtype, targets (rows) host
  //   losses (rows) f32, logsumexp (rows) f32 (saved for the backward pass)
  virtual void crossEntropyForward(const Tensor& logits, std::span<const std::int32_t> targets,
                                   Tensor& losses, Tensor& logsumexp) = 0;

  // --- Backward ops of the training graph (input gradients only: weights are frozen) ----------
  // Linear layers need none of their own: matmul gives dx = dy·W and the LoRA gradients. The
  // RoPE backward is rope(dx, positions, invFreq, inverse = true); RMSNorm's is rmsnormBackward.

  // Gradients of causal GQA attention from the forward's saved logsumexp. Probabilities are
  // recomputed a tile of query rows at a time (no (seq, seq) buffer per head); dk and dv of a KV
  // head are summed over the query heads of its group in a fixed order. Outputs are overwritten.
  //   dout, q, out (B, S, heads, hd)   k, v (B, S, kvHeads, hd)   logsumexp (B, heads, S) f32
  //   dq (B, S, heads, hd)   dk, dv (B, S, kvHeads, hd)            activation dtype
  // The window, document starts and soft-capping of `options` are the forward's.
  virtual void attentionBackward(const Tensor& dout, const Tensor& q, const Tensor& k,
                                 const Tensor& v, const Tensor& out, const Tensor& logsumexp,
                                 const AttentionOptions& options, Tensor& dq, Tensor& dk,
                                 Tensor& dv) = 0;

  // Gradients of out = silu(gate) ⊙ up:
  //   dup = dout ⊙ silu(gate),  dgate = dout ⊙ up ⊙ σ(gate)·(1 + gate·(1 − σ(gate))).
  //   dout, gate, up, dgate, dup (rows, dim) activation dtype
  virtual void swigluBackward(const Tensor& dout, const Tensor& gate, const Tensor& up,
                              Tensor& dgate, Tensor& dup) = 0;
  // swigluBackward with dgate and dup side by side in one tensor, the input of the stacked
  // gate/up weights' gradient product (Note [stacked gate/up] in train/TrainGraph.cpp):
  //   dout, gate, up (rows, dim)   dGateUp (rows, 2·dim) = [dgate | dup]   activation dtype
  // dGateUp may be a column view (Tensor::columns).
  // The default runs swigluBackward into two tensors and stacks them; a GPU backend writes the
  // halves in place.
  virtual void swigluBackwardStacked(const Tensor& dout, const Tensor& gate, const Tensor& up,
                                     Tensor& dGateUp);
  // Gradients of out = gelu_tanh(gate) ⊙ up, with u = √(2/π)·(g + 0.044715·g³), t = tanh(u):
  //   dup = dout ⊙ gelu_tanh(gate),
  //   dgate = dout ⊙ up ⊙ (½·(1 + t) + ½·g·(1 − t²)·√(2/π)·(1 + 3·0.044715·g²)).
  //   dout, gate, up, dgate, dup (rows, dim) activation dtype
  virtual void gegluBackward(const Tensor& dout, const Tensor& gate, const Tensor& up,
                             Tensor& dgate, Tensor& dup) = 0;

  // Elementwise product, in place: x ⊙= y (a LoRA dropout mask, already scaled by 1/(1−p)).
  //   x, y (any shape, equal) activation dtype
  virtual void multiplyInPlace(Tensor& x, const Tensor& y) = 0;
  // dst ← the parts side by side: row r of dst is row r of each part, in order (the q, k and v
  // input gradients as one GEMM operand).   parts (rows, cols_i)   dst (rows, Σ cols_i), one dtype
  // dst may be a column view. The default works on host memory (the CPU backend); a GPU backend
  // launches a kernel a part.
  virtual void stackColumns(std::span<const Tensor* const> parts, Tensor& dst);
  // The backward's q/k/v gradients as one GEMM operand, through RoPE's inverse: dqkv ←
  // [rope⁻¹(dq) | rope⁻¹(dk) | dv], what rope(dq, …, true), rope(dk, …, true) and stackColumns
  // give (the default, which rotates dq and dk in place); a GPU backend does it in one launch,
  // leaving dq and dk as they were.
  //   dq (T, heads, hd), dk and dv (T, kvHeads, hd) activation dtype; positions (T) host;
  //   invFreq (hd/2) f32; dqkv (T, (heads + 2·kvHeads)·hd), may be a column view
  virtual void ropeBackwardStacked(Tensor& dq, Tensor& dk, const Tensor& dv,
                                   std::span<const std::int32_t> positions, const Tensor& invFreq,
                                   Tensor& dqkv);
  // Each copy's dst = scale·op(src), op transposing or not; src and dst may be column views
  // (Note [the LoRA term in the inner dimension] in train/TrainGraph.cpp: the LoRA weights into
  // the folded frozen weights, u and g beside the GEMMs' other operand). The default works on
  // host memory; a GPU backend copies many small matrices a launch.
  virtual void copyMatrices(std::span<const MatrixCopy> copies);

  // Fused lm-head + softmax cross-entropy over vocabulary chunks, so that no (rows, vocab) fp32
  // logits tensor ever exists (a 150K vocabulary at 4K tokens would be 2.4 GB):
  // one pass over chunks c, two products each:  logits_c = h·W_cᵀ, then with the running
  // (online) logsumexp m of the row so far, dh += exp(logits_c − m)·W_c while the part of dh
  // accumulated under an older m is rescaled; at the end dh = (dh / Σ − W_target) · gradScale,
  // i.e. Σ_c (softmax_c − onehot_c) · gradScale · W_c.
  // losses[r] = logsumexp_r − logit[r][targets[r]], and 0 (with a zero gradient row) where
  // targets[r] == kIgnoreTarget. gradScale is the loss weight of every token (1 / the tokens
  // predicted in the whole optimizer step). The gradient product is skipped when dh is undefined
  // (evaluation). With logitSoftcap c > 0 (Gemma 2) every logit is first capped, l ← c·tanh(l / c),
  // and its gradient carries the factor 1 − tanh² (the target's too).
  // Throws ShapeError naming the row and target when a target is outside [0, vocab).
  //   h (rows, H) activation dtype   weight (vocab, H) any dtype (frozen lm_head or embedding)
  //   losses (rows) f32   dh (rows, H) activation dtype, overwritten, or undefined
  virtual void lmHeadCrossEntropy(const Tensor& h, const Tensor& weight,
                                  std::span<const std::int32_t> targets, float gradScale,
                                  Tensor& losses, Tensor& dh, float logitSoftcap = 0.0f) = 0;

  // --- Optimizer ops: LoRA weights, their gradients and AdamW moments live on the backend -----
  // A list op takes f32 tensors of this backend and makes one pass over the whole list (one
  // launch on the GPU, however many tensors), so a step costs no transfer per LoRA tensor.
  // Empty lists do nothing. The CPU versions are the host trainer's arithmetic, bit for bit.

  // Sets every element of every tensor to 0.   tensors: f32, any shapes
  virtual void fillZero(std::span<Tensor* const> tensors) = 0;
  // Σ over the list of Σ x², accumulated in double: the squared global L2 norm of gradients.
  // CPU: one sequential sum in list order. GPU: a fixed reduction tree, so the result is the
  // same run to run but may differ from the CPU's in the last bits.   tensors: f32, any shapes
  virtual double sumOfSquares(std::span<const Tensor* const> tensors) = 0;
  // x ← x · factor, every element of every tensor (gradient clipping).   tensors: f32
  virtual void scaleInPlace(std::span<Tensor* const> tensors, float factor) = 0;
  // One AdamW step over every (param, grad, m, v), in this order per element:
  //   p ← p·decay;  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g·g;
  //   p ← p − stepSize·m / (√v / sqrtBias2 + ε)
  // with the scalars of train::adamwScalars. All four tensors of an entry: f32, equal shapes.
  virtual void adamw(std::span<const AdamWTensors> tensors, const AdamWScalars& scalars) = 0;
  // Inverted-dropout mask: element i = 0 when uniform_i < p, else 1/(1 − p), where uniform_i is
  // the top 24 bits of word i mod 4 of philox4x32(seed, stream, i / 4) (compute/Philox.h). The
  // same (seed, stream) gives the same mask on every backend, element for element (rounded to
  // nearest even where the mask is bf16).   mask: any shape, activation dtype;  0 ≤ p < 1
  virtual void dropoutMask(Tensor& mask, std::uint64_t seed, std::uint64_t stream, double p) = 0;
  // dst ← src, element for element, rounded to nearest even where dst is bf16: the bf16 copy of
  // every LoRA weight that a GPU step's products read, made in one pass after each update.
  //   src f32 (any shape)   dst (the same element count) f32 or the activation dtype
  // The default works on host memory (the CPU backend); a GPU backend launches one kernel.
  virtual void convert(const Tensor& src, Tensor& dst);
  // y += scale · lhsTᵀ · op(w) where the inner dimension k is small (a LoRA rank, or the ranks of
  // a group of projections): the LoRA up-projection y += scale·u·Bᵀ (lhsT = uᵀ, w = B (n, k),
  // transposeW) and its input gradient dx += g·A (lhsT = gᵀ, w = A (k, n)).
  //   lhsT (k, T) activation dtype   w (n, k) or (k, n) any dtype   y (T, n) activation dtype
  // The default is matmul(lhsT, true, w, transposeW, y, scale, 1); a GPU backend adds the
  // product in one kernel that reads y once and writes it once, rounding once (no product written
  // out and added by a second kernel).
  virtual void addLowRankProduct(const Tensor& lhsT, const Tensor& w, bool transposeW, float scale,
                                 Tensor& y);
  // Frozen projections with their biases and LoRA terms, y = x·op(w) + bias + scale·lhsTᵀ·op(low)
  // each (the parts not set left out), for outputs that no other product of the call reads or
  // writes.   x (T, in), w as matmul's b, y (T, out) activation dtype, bias (out) as addBias's; the
  // term as addLowRankProduct's
  // The default is every frozen product in one matmulGroup, the biases, then every term in
  // another matmulGroup (two launches on the CPU). A GPU backend writes a term first and has the
  // vendor GEMM add onto it in its epilogue (Note [the LoRA term under the GEMM],
  // hip/HipBackendOpsGemm.cpp), so y is written twice and read once, not written, read and
  // written again.
  virtual void projectionProducts(std::span<const ProjectionProduct> products);

  // --- Steps without host reads (graph mode) ----------------------------------------------------
  // The per-step values live in device memory (compute/StepScalars.h) and the step's results are
  // read once, after it. The defaults work on host memory (the CPU backend, which runs these
  // steps too, uncaptured); a GPU backend launches kernels.

  // Copies host bytes into `dst` (any dtype, exactly dst.bytes()) in stream order. While
  // capturing, a source in pinnedHost() memory is read again at every replay (a live input); any
  // other source is copied now and replays copy that copy (a constant).
  virtual void copyIn(std::span<const std::byte> host, Tensor& dst);
  // Copies `src` into host bytes (exactly src.bytes()) in stream order; the host may read them
  // after synchronize(). While capturing, `host` must be pinnedHost() memory.
  virtual void copyOut(const Tensor& src, std::span<std::byte> host);
  // Host memory that captured copies read or write at every replay: pinned on a GPU (plain
  // memory elsewhere). Zeroed; lives as long as the returned pointer's last copy.
  virtual std::shared_ptr<std::byte[]> pinnedHost(std::size_t bytes);
  // sums.lossSum += Σ losses.   losses f32 (any shape)   sums (kStepSumsWords) f32: a StepSums
  virtual void accumulateLoss(const Tensor& losses, Tensor& sums);
  // lmHeadCrossEntropy() with the loss weight read from scalars.gradScale (device memory). With
  // `passRows` (checkLmHeadRows) a GPU computes those rows' logits, in that order: a shape that
  // stays the same from step to step, where its own choice of the predicted rows varies. The
  // results are lmHeadCrossEntropy()'s either way; the default checks the rows and gathers its
  // own.
  virtual void lmHeadCrossEntropyAt(const Tensor& h, const Tensor& weight,
                                    std::span<const std::int32_t> targets, LmHeadRows passRows,
                                    const Tensor& scalars, Tensor& losses, Tensor& dh,
                                    float logitSoftcap = 0.0f);
  // Global-norm clipping without a host read: sums.gradSquares = Σ g² over the list, the norm
  // its root; sums.finite = 1 when lossSum and the norm are finite, else 0; every g ← g · c with
  // c = maxGradNorm / (norm + 1e-6) when maxGradNorm > 0 and that is < 1 (train::clipFactor's
  // rule, in the same double arithmetic), else unchanged.
  //   grads f32   scalars (kStepScalarsWords) f32: a StepScalars   sums as above
  virtual void clipScaledGradients(std::span<Tensor* const> grads, const Tensor& scalars,
                                   Tensor& sums);
  // adamw() with scalars.adamw, applied only when sums.finite is 1 (nothing changes otherwise).
  virtual void adamwIfFinite(std::span<const AdamWTensors> tensors, const Tensor& scalars,
                             const Tensor& sums);
  // The mask dropoutMask() draws for an unpadded micro-batch of rows of rowLength positions,
  // written into a mask padded to `seq` positions per row: element (row·seq + t, f) of `mask`
  // (rows·seq, F) is element (row·rowLength + t)·F + f of the mask of stream
  // (scalars.dropoutStreamHigh << 32) | streamLow; positions t ≥ rowLength (padding) get 0.
  // rowLength is rowLengths[micro], an int32 in device memory (an f32-typed tensor of 4-byte
  // words: the per-step lengths of graph mode's micro-batches).
  virtual void dropoutMaskAt(Tensor& mask, std::uint64_t seed, std::uint32_t streamLow,
                             const Tensor& scalars, std::int64_t seq, const Tensor& rowLengths,
                             std::int64_t micro, double p);

  // Whole-step capture (CUDA/HIP graphs). A backend that cannot capture (the CPU) answers false
  // and throws UnsupportedOpError from beginCapture.
  virtual bool canCapture() const { return false; }
  // From here until endCapture, ops issued on this thread are recorded, not run: no op may read
  // back to the host or wait (download, synchronize, downloadAsync throw), and every block
  // allocated comes from the allocator's graph pool, which is the captures' alone.
  virtual void beginCapture();
  // The recorded ops, ready to replay. Throws GpuError when the capture failed (an op that cannot
  // be captured); the capture has ended either way.
  virtual std::unique_ptr<CapturedOps> endCapture();
  // Ends a capture that an exception interrupted and drops what it recorded; a no-op otherwise.
  virtual void abandonCapture() {}
  // The graph pool's memory goes back to the ordinary cache (after every CapturedOps is gone).
  virtual void releaseCaptureMemory() {}
  // While on, uncaptured ops take their blocks from the graph pool, as a capture's do: a further
  // step shape's warm-up (Note [whole-step graphs] in train/StepGraphs.h) reuses the captured
  // steps' idle blocks there instead of reserving a step's activations again beside them. The
  // ops' blocks must be freed by the time it is turned off. A backend without a pool ignores it.
  virtual void drawFromCapturePool(bool /*on*/) {}
};

// Target id that cross-entropy skips (PyTorch's ignore_index default, used by HF labels).
inline constexpr std::int32_t kIgnoreTarget = -100;

std::unique_ptr<Backend> createCpuBackend();
// Throws NoGpuError when this build has no GPU backend or no usable device is present.
std::unique_ptr<Backend> createGpuBackend(int deviceIndex = 0);

// Throws ShapeError naming uploadRaw unless `bytes` is exactly a `dtype` tensor of `shape`.
void checkUploadRawArgs(std::size_t bytes, DType dtype, const Shape& shape);
// Throws ShapeError naming downloadAsync unless every tensor is f32 and on this backend.
void checkDownloadAsyncArgs(const BackendCapabilities& caps,
                            std::span<const Tensor* const> tensors);

// Shared argument checks of the RMSNorm pair, so both backends reject the same inputs.
void checkRmsnormForwardArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& weight,
                             const Tensor& y, const Tensor& rstd);
void checkRmsnormBackwardArgs(const BackendCapabilities& caps, const Tensor& dy, const Tensor& x,
                              const Tensor& weight, const Tensor& rstd, const Tensor& dx);

// Shared argument checks of the model-graph ops (same inputs rejected by every backend).
void checkMatmulArgs(const BackendCapabilities& caps, const Tensor& a, bool transposeA,
                     const Tensor& b, bool transposeB, const Tensor& c);
void checkDequantizeArgs(const BackendCapabilities& caps, const Tensor& packed, const Tensor& out);
void checkEmbeddingArgs(const BackendCapabilities& caps, const Tensor& table, std::size_t tokens,
                        const Tensor& out);
void checkRopeArgs(const BackendCapabilities& caps, const Tensor& x, std::size_t positions,
                   const Tensor& invFreq);
// ropeBackwardStacked's arguments: each of dq and dk as checkRopeArgs, dv as dk, dqkv their
// columns side by side.
void checkRopeBackwardStackedArgs(const BackendCapabilities& caps, const Tensor& dq,
                                  const Tensor& dk, const Tensor& dv, std::size_t positions,
                                  const Tensor& invFreq, const Tensor& dqkv);
// Throws ShapeError naming `op` when `starts` is not (batch, seq), or a start is outside
// [0, its token's offset], or falls along a row (AttentionOptions::documentStarts).
void checkDocumentStarts(const char* op, std::span<const std::int32_t> starts, std::int64_t batch,
                         std::int64_t seq);
void checkAttentionArgs(const BackendCapabilities& caps, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& logsumexp);
void checkAttentionCachedArgs(const BackendCapabilities& caps, const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& out);
void checkSwigluArgs(const BackendCapabilities& caps, const Tensor& gate, const Tensor& up,
                     const Tensor& out);
void checkAddArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& y);
void checkMultiplyArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& y);
// One activation-dtype tensor on this backend (scale, softcap); `op` names the op in the error.
void checkActivationArgs(const char* op, const BackendCapabilities& caps, const Tensor& x);
void checkAddBiasArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& bias);
void checkCrossEntropyArgs(const BackendCapabilities& caps, const Tensor& logits,
                           std::size_t targets, const Tensor& losses, const Tensor& logsumexp);
void checkAttentionBackwardArgs(const BackendCapabilities& caps, const Tensor& dout,
                                const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& out, const Tensor& logsumexp, const Tensor& dq,
                                const Tensor& dk, const Tensor& dv);
void checkSwigluBackwardArgs(const BackendCapabilities& caps, const Tensor& dout,
                             const Tensor& gate, const Tensor& up, const Tensor& dgate,
                             const Tensor& dup);
// Shared argument checks of the optimizer ops; `op` names the op in the error.
void checkTensorListArgs(const char* op, const BackendCapabilities& caps,
                         std::span<const Tensor* const> tensors);
void checkTensorListArgs(const char* op, const BackendCapabilities& caps,
                         std::span<Tensor* const> tensors);
void checkAdamWArgs(const BackendCapabilities& caps, std::span<const AdamWTensors> tensors);
void checkDropoutMaskArgs(const BackendCapabilities& caps, const Tensor& mask, double p);
void checkConvertArgs(const BackendCapabilities& caps, const Tensor& src, const Tensor& dst);
// Shared argument checks of the graph-mode step ops; `op` names the op in the error.
void checkStepScalarsArgs(const char* op, const BackendCapabilities& caps, const Tensor& scalars);
void checkStepSumsArgs(const char* op, const BackendCapabilities& caps, const Tensor& sums);
// stackColumns' arguments: 2-D parts of dst's rows and dtype whose columns add up to dst's.
void checkStackColumnsArgs(std::span<const Tensor* const> parts, const Tensor& dst);
// One copyMatrices copy: matrices of one dtype (bf16 or f32) on the backend's device, dst the
// shape of op(src).
void checkMatrixCopy(const BackendCapabilities& caps, const MatrixCopy& copy);
// swigluBackwardStacked's arguments: swigluBackward's, dGateUp twice their width.
void checkSwigluBackwardStackedArgs(const BackendCapabilities& caps, const Tensor& dout,
                                    const Tensor& gate, const Tensor& up, const Tensor& dGateUp);
// One loraOutputProducts site: dy (T, m) with the site's columns inside it, and the two
// products' shapes (ShapeError naming the operand). Returns the site's width n (b's rows).
std::int64_t checkLoraOutputSite(const BackendCapabilities& caps, const LoraOutputSite& site);
void checkCopyArgs(const char* op, const BackendCapabilities& caps, const Tensor& tensor,
                   std::size_t bytes);
void checkDropoutMaskAtArgs(const BackendCapabilities& caps, const Tensor& mask,
                            const Tensor& scalars, std::int64_t seq, const Tensor& rowLengths,
                            std::int64_t micro, double p);
void checkLmHeadCrossEntropyArgs(const BackendCapabilities& caps, const Tensor& h,
                                 const Tensor& weight, std::size_t targets, const Tensor& losses,
                                 const Tensor& dh);
// Throws ShapeError naming `op`, the row and the target unless every target is in [0, vocab)
// or kIgnoreTarget (checked on the host, before anything is launched).
void checkTargetIds(const char* op, std::span<const std::int32_t> targets, std::int64_t vocab);
// Throws ShapeError naming `op` unless `rows` is empty or is what LmHeadRows describes for
// `targets` (one target per row of h): its two spans of one length, every row whose target is
// not kIgnoreTarget first in ascending order with its target, then distinct other rows with
// kIgnoreTarget.
void checkLmHeadRows(const char* op, const LmHeadRows& rows, std::span<const std::int32_t> targets);

}  // namespace lorascope::compute

// Backend.cpp — argument checks shared by every backend's implementation of an op.
#include "compute/Backend.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <utility>
#include <vector>

#include "compute/Bf16.h"  // defines: floatToBf16, bf16ToFloat
#include "compute/Errors.h"

namespace lorascope::compute {
namespace {

void requireOnDevice(const char* op, const char* what, const Tensor& t, Device device) {
  if (!t.defined()) {
    throw ShapeError(std::string(op) + ": " + what + " is not allocated");
  }
  if (t.device() != device) {
    throw ShapeError(std::string(op) + ": " + what + " is " + t.describe() + ", expected it on " +
                     deviceName(device));
  }
}

void requireMatrix(const char* op, const char* what, const Tensor& t) {
  if (t.rank() != 2) {
    throw ShapeError(std::string(op) + ": " + what + " must be (rows, dim), got " +
                     shapeToString(t.shape()));
  }
}

void requireActivations(const char* op, const BackendCapabilities& caps,
                        std::initializer_list<std::pair<const Tensor*, const char*>> tensors) {
  for (const auto& [t, name] : tensors) {
    requireOnDevice(op, name, *t, caps.device);
    requireDType(op, name, *t, caps.activationDType);
  }
}

void requireRank(const char* op, const char* what, const Tensor& t, std::size_t rank,
                 const char* layout) {
  if (t.rank() != rank) {
    throw ShapeError(std::string(op) + ": " + what + " must be " + layout + ", got " +
                     shapeToString(t.shape()));
  }
}

}  // namespace

void checkUploadRawArgs(std::size_t bytes, DType dtype, const Shape& shape) {
  const std::size_t expected = storageBytes(dtype, numelOf(shape));
  if (bytes != expected) {
    throw ShapeError("uploadRaw: " + std::to_string(bytes) + " bytes for " + dtypeName(dtype) +
                     shapeToString(shape) + ", expected " + std::to_string(expected));
  }
}

void checkMatmulArgs(const BackendCapabilities& caps, const Tensor& a, bool transposeA,
                     const Tensor& b, bool transposeB, const Tensor& c) {
  constexpr const char* op = "matmul";
  requireActivations(op, caps, {{&a, "a"}});
  requireOnDevice(op, "b", b, caps.device);
  requireOnDevice(op, "c", c, caps.device);
  if (c.dtype() != caps.activationDType && c.dtype() != DType::F32) {
    throw ShapeError(std::string(op) + ": c is " + c.describe() + ", expected " +
                     dtypeName(caps.activationDType) + " or f32");
  }
  requireRank(op, "a", a, 2, "a matrix");
  requireRank(op, "b", b, 2, "a matrix");
  const std::int64_t m = a.dim(transposeA ? 1 : 0);
  const std::int64_t k = a.dim(transposeA ? 0 : 1);
  const std::int64_t n = b.dim(transposeB ? 0 : 1);
  if (b.dim(transposeB ? 1 : 0) != k) {
    throw ShapeError(std::string(op) + ": op(a) is (" + std::to_string(m) + ", " +
                     std::to_string(k) + ") but op(b) is (" +
                     std::to_string(b.dim(transposeB ? 1 : 0)) + ", " + std::to_string(n) +
                     "); inner dimensions differ");
  }
  requireShape(op, "c", c, {m, n});
}

void Backend::matmulGroup(std::span<const MatmulProduct> products) {
  for (const MatmulProduct& p : products) {
    matmul(*p.a, p.transposeA, *p.b, p.transposeB, *p.c, p.alpha, p.beta);
  }
}

std::int64_t checkLoraOutputSite(const BackendCapabilities& caps, const LoraOutputSite& site) {
  constexpr const char* op = "lora_output_products";
  requireOnDevice(op, "dy", *site.dy, caps.device);
  requireOnDevice(op, "b", *site.b, caps.device);
  requireMatrix(op, "dy", *site.dy);
  requireMatrix(op, "b", *site.b);
  const std::int64_t n = site.b->dim(0);
  if (site.dyColumn < 0 || site.dyColumn + n > site.dy->dim(1)) {
    throw ShapeError(std::string(op) + ": columns " + std::to_string(site.dyColumn) + " to " +
                     std::to_string(site.dyColumn + n) + " (b's " + std::to_string(n) +
                     " rows) are not inside dy " + site.dy->describe());
  }
  // The two products' shapes, dy read as its (T, n) block.
  const Tensor block = site.dy->columns(site.dyColumn, n);
  checkMatmulArgs(caps, block, true, *site.uT, true, *site.gradB);
  checkMatmulArgs(caps, *site.b, true, block, true, *site.gT);
  if (site.g != nullptr) {
    checkMatrixCopy(caps, {site.gT, site.g, true});
  }
  return n;
}

void Backend::loraOutputProducts(std::span<const LoraOutputSite> sites, float scale) {
  std::vector<MatmulProduct> products;
  products.reserve(2 * sites.size());
  std::vector<Tensor> blocks;  // column blocks of a wider dy, copied out (host memory)
  blocks.reserve(sites.size());
  for (const LoraOutputSite& s : sites) {
    const std::int64_t n = checkLoraOutputSite(capabilities(), s);
    const Tensor* dy = s.dy;
    if (n != s.dy->dim(1)) {
      Tensor& block = blocks.emplace_back(empty(s.dy->dtype(), {s.dy->dim(0), n}));
      const std::size_t element = dtypeBytes(s.dy->dtype());
      const auto* from = static_cast<const std::byte*>(s.dy->data()) +
                         static_cast<std::size_t>(s.dyColumn) * element;
      for (std::int64_t r = 0; r < block.dim(0); ++r) {
        std::memcpy(
            static_cast<std::byte*>(block.data()) + static_cast<std::size_t>(r * n) * element,
            from + static_cast<std::size_t>(r * s.dy->dim(1)) * element,
            static_cast<std::size_t>(n) * element);
      }
      dy = &block;
    }
    products.push_back({dy, true, s.uT, true, s.gradB, scale, 1.0f});  // dB += scale·dyᵀ·u
    products.push_back({s.b, true, dy, true, s.gT, scale, 0.0f});      // gᵀ = scale·Bᵀ·dyᵀ
  }
  matmulGroup(products);
  std::vector<MatrixCopy> transposed;
  for (const LoraOutputSite& s : sites) {
    if (s.g != nullptr) {
      transposed.push_back({s.gT, s.g, true});
    }
  }
  if (!transposed.empty()) {
    copyMatrices(transposed);
  }
}

void checkMatrixCopy(const BackendCapabilities& caps, const MatrixCopy& copy) {
  constexpr const char* op = "copy_matrices";
  requireOnDevice(op, "src", *copy.src, caps.device);
  requireOnDevice(op, "dst", *copy.dst, caps.device);
  requireMatrix(op, "src", *copy.src);
  requireMatrix(op, "dst", *copy.dst);
  if (copy.src->dtype() != copy.dst->dtype() ||
      (copy.src->dtype() != DType::BF16 && copy.src->dtype() != DType::F32)) {
    throw ShapeError(std::string(op) + ": src " + copy.src->describe() + " and dst " +
                     copy.dst->describe() + " are not both bf16 or both f32");
  }
  const Shape expected =
      copy.transpose ? Shape{copy.src->dim(1), copy.src->dim(0)} : copy.src->shape();
  requireShape(op, "dst", *copy.dst, expected);
}

void Backend::copyMatrices(std::span<const MatrixCopy> copies) {
  for (const MatrixCopy& c : copies) {
    checkMatrixCopy(capabilities(), c);
  }
  for (const MatrixCopy& c : copies) {
    const Tensor& src = *c.src;
    Tensor& dst = *c.dst;
    const bool bf16 = src.dtype() == DType::BF16;
    const auto read = [&](std::int64_t r, std::int64_t k) {
      const std::int64_t i = r * src.ld() + k;
      return bf16 ? bf16ToFloat(src.base<std::uint16_t>()[i]) : src.base<float>()[i];
    };
    for (std::int64_t r = 0; r < dst.dim(0); ++r) {
      for (std::int64_t k = 0; k < dst.dim(1); ++k) {
        const float v = c.scale * (c.transpose ? read(k, r) : read(r, k));
        const std::int64_t o = r * dst.ld() + k;
        if (bf16) {
          dst.base<std::uint16_t>()[o] = floatToBf16(v);
        } else {
          dst.base<float>()[o] = v;
        }
      }
    }
  }
}

void checkDequantizeArgs(const BackendCapabilities& caps, const Tensor& packed, const Tensor& out) {
  constexpr const char* op = "dequantize";
  requireOnDevice(op, "packed", packed, caps.device);
  requireDType(op, "packed", packed, DType::NF4);
  requireActivations(op, caps, {{&out, "out"}});
  requireShape(op, "out", out, packed.shape());
}

void checkEmbeddingArgs(const BackendCapabilities& caps, const Tensor& table, std::size_t tokens,
                        const Tensor& out) {
  constexpr const char* op = "embedding_forward";
  requireOnDevice(op, "table", table, caps.device);
  requireActivations(op, caps, {{&out, "out"}});
  requireRank(op, "table", table, 2, "(vocab, dim)");
  requireShape(op, "out", out, {static_cast<std::int64_t>(tokens), table.dim(1)});
}

void checkRopeArgs(const BackendCapabilities& caps, const Tensor& x, std::size_t positions,
                   const Tensor& invFreq) {
  constexpr const char* op = "rope";
  requireActivations(op, caps, {{&x, "x"}});
  requireOnDevice(op, "inv_freq", invFreq, caps.device);
  requireRank(op, "x", x, 3, "(tokens, heads, head_dim)");
  if (x.dim(2) % 2 != 0) {
    throw ShapeError(std::string(op) + ": head_dim " + std::to_string(x.dim(2)) + " is odd");
  }
  if (static_cast<std::int64_t>(positions) != x.dim(0)) {
    throw ShapeError(std::string(op) + ": " + std::to_string(positions) + " positions for " +
                     std::to_string(x.dim(0)) + " tokens");
  }
  requireShape(op, "inv_freq", invFreq, {x.dim(2) / 2});
  requireDType(op, "inv_freq", invFreq, DType::F32);
}

void checkRopeBackwardStackedArgs(const BackendCapabilities& caps, const Tensor& dq,
                                  const Tensor& dk, const Tensor& dv, std::size_t positions,
                                  const Tensor& invFreq, const Tensor& dqkv) {
  constexpr const char* op = "rope_backward_stacked";
  checkRopeArgs(caps, dq, positions, invFreq);
  checkRopeArgs(caps, dk, positions, invFreq);
  requireActivations(op, caps, {{&dv, "dv"}, {&dqkv, "dqkv"}});
  requireShape(op, "dv", dv, dk.shape());
  if (dk.dim(2) != dq.dim(2)) {
    throw ShapeError(std::string(op) + ": dk's head_dim " + std::to_string(dk.dim(2)) +
                     " is not dq's " + std::to_string(dq.dim(2)));
  }
  requireShape(op, "dqkv", dqkv, {dq.dim(0), (dq.dim(1) + 2 * dk.dim(1)) * dq.dim(2)});
}

void checkAttentionArgs(const BackendCapabilities& caps, const Tensor& q, const Tensor& k,
                        const Tensor& v, const Tensor& out, const Tensor& logsumexp) {
  constexpr const char* op = "attention_forward";
  requireActivations(op, caps, {{&q, "q"}, {&k, "k"}, {&v, "v"}, {&out, "out"}});
  requireOnDevice(op, "logsumexp", logsumexp, caps.device);
  requireRank(op, "q", q, 4, "(batch, seq, heads, head_dim)");
  requireRank(op, "k", k, 4, "(batch, seq, kv_heads, head_dim)");
  const std::int64_t kvHeads = k.dim(2);
  if (kvHeads == 0 || q.dim(2) % kvHeads != 0) {
    throw ShapeError(std::string(op) + ": " + std::to_string(q.dim(2)) +
                     " query heads are not a multiple of " + std::to_string(kvHeads) + " KV heads");
  }
  requireShape(op, "k", k, {q.dim(0), q.dim(1), kvHeads, q.dim(3)});
  requireShape(op, "v", v, k.shape());
  requireShape(op, "out", out, q.shape());
  requireShape(op, "logsumexp", logsumexp, {q.dim(0), q.dim(2), q.dim(1)});
  requireDType(op, "logsumexp", logsumexp, DType::F32);
}

void checkDocumentStarts(const char* op, std::span<const std::int32_t> starts, std::int64_t batch,
                         std::int64_t seq) {
  if (static_cast<std::int64_t>(starts.size()) != batch * seq) {
    throw ShapeError(std::string(op) + ": " + std::to_string(starts.size()) +
                     " document starts for batch " + std::to_string(batch) + " × seq " +
                     std::to_string(seq));
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    for (std::int64_t i = 0; i < seq; ++i) {
      const std::int32_t start = starts[static_cast<std::size_t>(b * seq + i)];
      const std::int32_t before = i > 0 ? starts[static_cast<std::size_t>(b * seq + i - 1)] : 0;
      if (start < before || start > i) {
        throw ShapeError(std::string(op) + ": document start " + std::to_string(start) +
                         " of token " + std::to_string(i) + " in row " + std::to_string(b) +
                         " is not within [" + std::to_string(before) + ", " + std::to_string(i) +
                         "] (starts rise along a row and never pass their token)");
      }
    }
  }
}

void checkAttentionCachedArgs(const BackendCapabilities& caps, const Tensor& q, const Tensor& k,
                              const Tensor& v, const Tensor& out) {
  constexpr const char* op = "attention_cached";
  requireActivations(op, caps, {{&q, "q"}, {&k, "k"}, {&v, "v"}, {&out, "out"}});
  requireRank(op, "q", q, 3, "(new tokens, heads, head_dim)");
  requireRank(op, "k", k, 3, "(cached tokens, kv_heads, head_dim)");
  const std::int64_t kvHeads = k.dim(1);
  if (kvHeads == 0 || q.dim(1) % kvHeads != 0) {
    throw ShapeError(std::string(op) + ": " + std::to_string(q.dim(1)) +
                     " query heads are not a multiple of " + std::to_string(kvHeads) + " KV heads");
  }
  if (k.dim(0) < q.dim(0)) {
    throw ShapeError(std::string(op) + ": " + std::to_string(k.dim(0)) + " cached keys for " +
                     std::to_string(q.dim(0)) + " new queries (the new ones must be cached too)");
  }
  requireShape(op, "k", k, {k.dim(0), kvHeads, q.dim(2)});
  requireShape(op, "v", v, k.shape());
  requireShape(op, "out", out, q.shape());
}

void checkSwigluArgs(const BackendCapabilities& caps, const Tensor& gate, const Tensor& up,
                     const Tensor& out) {
  constexpr const char* op = "swiglu_forward";
  requireActivations(op, caps, {{&gate, "gate"}, {&up, "up"}, {&out, "out"}});
  requireShape(op, "up", up, gate.shape());
  requireShape(op, "out", out, gate.shape());
}

void checkAddArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& y) {
  constexpr const char* op = "add";
  requireActivations(op, caps, {{&x, "x"}, {&y, "y"}});
  requireShape(op, "y", y, x.shape());
}

void checkActivationArgs(const char* op, const BackendCapabilities& caps, const Tensor& x) {
  requireActivations(op, caps, {{&x, "x"}});
}

void checkMultiplyArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& y) {
  constexpr const char* op = "multiply";
  requireActivations(op, caps, {{&x, "x"}, {&y, "y"}});
  requireShape(op, "y", y, x.shape());
}

void checkAddBiasArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& bias) {
  constexpr const char* op = "add_bias";
  requireActivations(op, caps, {{&x, "x"}});
  requireOnDevice(op, "bias", bias, caps.device);
  requireMatrix(op, "x", x);
  requireShape(op, "bias", bias, {x.dim(1)});
}

void checkCrossEntropyArgs(const BackendCapabilities& caps, const Tensor& logits,
                           std::size_t targets, const Tensor& losses, const Tensor& logsumexp) {
  constexpr const char* op = "cross_entropy_forward";
  requireActivations(op, caps, {{&logits, "logits"}});
  requireOnDevice(op, "losses", losses, caps.device);
  requireOnDevice(op, "logsumexp", logsumexp, caps.device);
  requireRank(op, "logits", logits, 2, "(rows, vocab)");
  if (static_cast<std::int64_t>(targets) != logits.dim(0)) {
    throw ShapeError(std::string(op) + ": " + std::to_string(targets) + " targets for " +
                     std::to_string(logits.dim(0)) + " rows of logits");
  }
  requireShape(op, "losses", losses, {logits.dim(0)});
  requireShape(op, "logsumexp", logsumexp, {logits.dim(0)});
  requireDType(op, "losses", losses, DType::F32);
  requireDType(op, "logsumexp", logsumexp, DType::F32);
}

void checkAttentionBackwardArgs(const BackendCapabilities& caps, const Tensor& dout,
                                const Tensor& q, const Tensor& k, const Tensor& v,
                                const Tensor& out, const Tensor& logsumexp, const Tensor& dq,
                                const Tensor& dk, const Tensor& dv) {
  constexpr const char* op = "attention_backward";
  checkAttentionArgs(caps, q, k, v, out, logsumexp);
  requireActivations(op, caps, {{&dout, "dout"}, {&dq, "dq"}, {&dk, "dk"}, {&dv, "dv"}});
  requireShape(op, "dout", dout, q.shape());
  requireShape(op, "dq", dq, q.shape());
  requireShape(op, "dk", dk, k.shape());
  requireShape(op, "dv", dv, k.shape());
}

void checkSwigluBackwardArgs(const BackendCapabilities& caps, const Tensor& dout,
                             const Tensor& gate, const Tensor& up, const Tensor& dgate,
                             const Tensor& dup) {
  constexpr const char* op = "swiglu_backward";
  requireActivations(
      op, caps, {{&dout, "dout"}, {&gate, "gate"}, {&up, "up"}, {&dgate, "dgate"}, {&dup, "dup"}});
  for (auto [t, name] : {std::pair{&up, "up"}, {&dout, "dout"}, {&dgate, "dgate"}, {&dup, "dup"}}) {
    requireShape(op, name, *t, gate.shape());
  }
}

void checkSwigluBackwardStackedArgs(const BackendCapabilities& caps, const Tensor& dout,
                                    const Tensor& gate, const Tensor& up, const Tensor& dGateUp) {
  constexpr const char* op = "swiglu_backward";
  requireActivations(op, caps,
                     {{&dout, "dout"}, {&gate, "gate"}, {&up, "up"}, {&dGateUp, "dGateUp"}});
  requireMatrix(op, "gate", gate);
  requireShape(op, "up", up, gate.shape());
  requireShape(op, "dout", dout, gate.shape());
  requireShape(op, "dGateUp", dGateUp, {gate.dim(0), 2 * gate.dim(1)});
}

void checkTargetIds(const char* op, std::span<const std::int32_t> targets, std::int64_t vocab) {
  for (std::size_t r = 0; r < targets.size(); ++r) {
    const std::int32_t t = targets[r];
    if (t != kIgnoreTarget && (t < 0 || t >= vocab)) {
      throw ShapeError(std::string(op) + ": target " + std::to_string(t) + " of row " +
                       std::to_string(r) + " is outside the vocabulary [0, " +
                       std::to_string(vocab) + ") and is not the ignore id -100");
    }
  }
}

void checkLmHeadRows(const char* op, const LmHeadRows& rows,
                     std::span<const std::int32_t> targets) {
  if (rows.rows.empty() && rows.targets.empty()) {
    return;
  }
  const auto fail = [&](const std::string& what) {
    throw ShapeError(std::string(op) + ": the pass's rows " + what);
  };
  if (rows.rows.size() != rows.targets.size()) {
    fail("(" + std::to_string(rows.rows.size()) + ") and their targets (" +
         std::to_string(rows.targets.size()) + ") differ in number");
  }
  if (rows.rows.size() > targets.size()) {
    fail("are " + std::to_string(rows.rows.size()) + ", more than h's " +
         std::to_string(targets.size()));
  }
  std::vector<bool> taken(targets.size(), false);
  std::size_t predicted = 0;
  for (std::size_t i = 0; i < rows.rows.size(); ++i) {
    const std::int32_t row = rows.rows[i];
    if (row < 0 || std::cmp_greater_equal(row, targets.size()) ||
        taken[static_cast<std::size_t>(row)]) {
      fail("list row " + std::to_string(row) + " at " + std::to_string(i) + ", outside h or twice");
    }
    taken[static_cast<std::size_t>(row)] = true;
    const std::int32_t target = targets[static_cast<std::size_t>(row)];
    if (rows.targets[i] != target) {
      fail("give row " + std::to_string(row) + " the target " + std::to_string(rows.targets[i]) +
           ", where h's row has " + std::to_string(target));
    }
    if (target != kIgnoreTarget) {
      if (i != predicted || (i > 0 && row <= rows.rows[i - 1])) {
        fail("put predicted row " + std::to_string(row) + " at " + std::to_string(i) +
             ", after a padding row or out of order");
      }
      ++predicted;
    }
  }
  const auto all = static_cast<std::size_t>(std::count_if(
      targets.begin(), targets.end(), [](std::int32_t t) { return t != kIgnoreTarget; }));
  if (predicted != all) {
    fail("hold " + std::to_string(predicted) + " of the " + std::to_string(all) +
         " predicted rows");
  }
}

void checkLmHeadCrossEntropyArgs(const BackendCapabilities& caps, const Tensor& h,
                                 const Tensor& weight, std::size_t targets, const Tensor& losses,
                                 const Tensor& dh) {
  constexpr const char* op = "lm_head_cross_entropy";
  requireActivations(op, caps, {{&h, "h"}});
  requireOnDevice(op, "weight", weight, caps.device);
  requireOnDevice(op, "losses", losses, caps.device);
  requireMatrix(op, "h", h);
  requireRank(op, "weight", weight, 2, "(vocab, hidden)");
  if (weight.dim(1) != h.dim(1)) {
    throw ShapeError(std::string(op) + ": weight " + shapeToString(weight.shape()) +
                     " does not match hidden size " + std::to_string(h.dim(1)) + " of h");
  }
  if (static_cast<std::int64_t>(targets) != h.dim(0)) {
    throw ShapeError(std::string(op) + ": " + std::to_string(targets) + " targets for " +
                     std::to_string(h.dim(0)) + " rows of h");
  }
  requireShape(op, "losses", losses, {h.dim(0)});
  requireDType(op, "losses", losses, DType::F32);
  if (dh.defined()) {
    requireActivations(op, caps, {{&dh, "dh"}});
    requireShape(op, "dh", dh, h.shape());
  }
}

void checkRmsnormForwardArgs(const BackendCapabilities& caps, const Tensor& x, const Tensor& weight,
                             const Tensor& y, const Tensor& rstd) {
  constexpr const char* op = "rmsnorm_forward";
  for (auto [t, name] : {std::pair{&x, "x"}, {&weight, "weight"}, {&y, "y"}, {&rstd, "rstd"}}) {
    requireOnDevice(op, name, *t, caps.device);
  }
  requireMatrix(op, "x", x);
  requireShape(op, "weight", weight, {x.dim(1)});
  requireShape(op, "y", y, x.shape());
  requireShape(op, "rstd", rstd, {x.dim(0)});
  requireDType(op, "x", x, caps.activationDType);
  requireDType(op, "y", y, caps.activationDType);
  requireDType(op, "rstd", rstd, DType::F32);
}

void checkRmsnormBackwardArgs(const BackendCapabilities& caps, const Tensor& dy, const Tensor& x,
                              const Tensor& weight, const Tensor& rstd, const Tensor& dx) {
  constexpr const char* op = "rmsnorm_backward";
  for (auto [t, name] :
       {std::pair{&dy, "dy"}, {&x, "x"}, {&weight, "weight"}, {&rstd, "rstd"}, {&dx, "dx"}}) {
    requireOnDevice(op, name, *t, caps.device);
  }
  requireMatrix(op, "x", x);
  requireShape(op, "dy", dy, x.shape());
  requireShape(op, "dx", dx, x.shape());
  requireShape(op, "weight", weight, {x.dim(1)});
  requireShape(op, "rstd", rstd, {x.dim(0)});
  requireDType(op, "x", x, caps.activationDType);
  requireDType(op, "dy", dy, caps.activationDType);
  requireDType(op, "dx", dx, caps.activationDType);
  requireDType(op, "rstd", rstd, DType::F32);
}

void checkTensorListArgs(const char* op, const BackendCapabilities& caps,
                         std::span<const Tensor* const> tensors) {
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string what =
        "tensor " + std::to_string(i) + " of " + std::to_string(tensors.size());
    if (tensors[i] == nullptr) {
      throw ShapeError(std::string(op) + ": " + what + " is null");
    }
    requireOnDevice(op, what.c_str(), *tensors[i], caps.device);
    requireDType(op, what.c_str(), *tensors[i], DType::F32);
  }
}

void checkTensorListArgs(const char* op, const BackendCapabilities& caps,
                         std::span<Tensor* const> tensors) {
  const std::vector<const Tensor*> view(tensors.begin(), tensors.end());
  checkTensorListArgs(op, caps, view);
}

void checkAdamWArgs(const BackendCapabilities& caps, std::span<const AdamWTensors> tensors) {
  constexpr const char* op = "adamw";
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const AdamWTensors& t = tensors[i];
    const std::string entry =
        "entry " + std::to_string(i) + " of " + std::to_string(tensors.size());
    const std::pair<const Tensor*, const char*> parts[] = {
        {t.param, "param"}, {t.grad, "grad"}, {t.firstMoment, "m"}, {t.secondMoment, "v"}};
    for (const auto& [tensor, name] : parts) {
      const std::string what = entry + " " + name;
      if (tensor == nullptr) {
        throw ShapeError(std::string(op) + ": " + what + " is null");
      }
      requireOnDevice(op, what.c_str(), *tensor, caps.device);
      requireDType(op, what.c_str(), *tensor, DType::F32);
      requireShape(op, what.c_str(), *tensor, t.param->shape());
    }
  }
}

void checkDropoutMaskArgs(const BackendCapabilities& caps, const Tensor& mask, double p) {
  constexpr const char* op = "dropout_mask";
  requireActivations(op, caps, {{&mask, "mask"}});
  if (!(p >= 0.0 && p < 1.0)) {
    throw ShapeError(std::string(op) + ": probability " + std::to_string(p) + " is outside [0, 1)");
  }
}

void checkConvertArgs(const BackendCapabilities& caps, const Tensor& src, const Tensor& dst) {
  constexpr const char* op = "convert";
  requireOnDevice(op, "src", src, caps.device);
  requireOnDevice(op, "dst", dst, caps.device);
  requireDType(op, "src", src, DType::F32);
  if (dst.dtype() != DType::F32 && dst.dtype() != caps.activationDType) {
    throw ShapeError(std::string(op) + ": dst is " + dst.describe() + ", expected f32 or " +
                     dtypeName(caps.activationDType));
  }
  if (src.numel() != dst.numel()) {
    throw ShapeError(std::string(op) + ": src " + src.describe() + " and dst " + dst.describe() +
                     " differ in element count");
  }
}

void Backend::convert(const Tensor& src, Tensor& dst) {
  checkConvertArgs(capabilities(), src, dst);
  const float* in = src.as<float>();
  const std::int64_t count = src.numel();
  if (dst.dtype() == DType::F32) {
    std::copy(in, in + count, dst.as<float>());
    return;
  }
  std::uint16_t* out = dst.as<std::uint16_t>();
  for (std::int64_t i = 0; i < count; ++i) {
    out[i] = floatToBf16(in[i]);
  }
}

void checkDownloadAsyncArgs(const BackendCapabilities& caps,
                            std::span<const Tensor* const> tensors) {
  for (const Tensor* t : tensors) {
    requireOnDevice("downloadAsync", "tensor", *t, caps.device);
    if (t->dtype() != DType::F32) {
      throw ShapeError("downloadAsync: tensor is " + t->describe() + ", expected f32");
    }
  }
}

namespace {
// A download whose values were copied when it was asked for.
class ReadyDownload final : public PendingDownload {
 public:
  explicit ReadyDownload(std::vector<std::vector<float>> values) : values_(std::move(values)) {}
  std::vector<std::span<const float>> wait() override {
    return std::vector<std::span<const float>>(values_.begin(), values_.end());
  }

 private:
  std::vector<std::vector<float>> values_;
};
}  // namespace

std::unique_ptr<PendingDownload> Backend::downloadAsync(std::span<const Tensor* const> tensors) {
  checkDownloadAsyncArgs(capabilities(), tensors);
  std::vector<std::vector<float>> values;
  values.reserve(tensors.size());
  for (const Tensor* t : tensors) {
    values.push_back(download(*t));
  }
  return std::make_unique<ReadyDownload>(std::move(values));
}

void Backend::addLowRankProduct(const Tensor& lhsT, const Tensor& w, bool transposeW, float scale,
                                Tensor& y) {
  matmul(lhsT, true, w, transposeW, y, scale, 1.0f);
}

void Backend::projectionProducts(std::span<const ProjectionProduct> products) {
  std::vector<MatmulProduct> frozen;
  std::vector<MatmulProduct> terms;
  for (const ProjectionProduct& p : products) {
    frozen.push_back({p.x, false, p.w, p.transposeW, p.y, 1.0f, 0.0f});
    if (p.lhsT != nullptr) {
      terms.push_back({p.lhsT, true, p.low, p.transposeLow, p.y, p.scale, 1.0f});
    }
  }
  matmulGroup(frozen);
  for (const ProjectionProduct& p : products) {
    if (p.bias != nullptr) {
      addBias(*p.y, *p.bias);
    }
  }
  if (!terms.empty()) {
    matmulGroup(terms);
  }
}

}  // namespace lorascope::compute

// cpu/CpuBackend.cpp — the fp32 CPU backend: host memory, and each op's fp32 implementation.
#include <cstdlib>
#include <cstring>
#include <new>

#include "compute/Backend.h"
#include "compute/Bf16.h"
#include "compute/Convert.h"  // defines: widenToFloat
#include "compute/Errors.h"
#include "compute/HostOptimizer.h"  // defines: host::adamw, host::addSumOfSquares, ...
#include "compute/Nf4.h"            // defines: nf4::quantize, nf4::dequantize
#include "compute/cpu/add.h"        // defines: cpu::addInPlace, cpu::addBias, cpu::multiplyInPlace
#include "compute/cpu/attention.h"  // defines: cpu::attentionForward, cpu::attentionBackward
#include "compute/cpu/attention_cached.h"  // defines: cpu::attentionCached
#include "compute/cpu/cross_entropy.h"     // defines: cpu::crossEntropyForward
#include "compute/cpu/embedding.h"         // defines: cpu::embeddingForward
#include "compute/cpu/host_blocks.h"       // defines: HostBlocks
#include "compute/cpu/lm_head_loss.h"      // defines: cpu::lmHeadCrossEntropy
#include "compute/cpu/matmul.h"            // defines: cpu::matmul
#include "compute/cpu/rmsnorm.h"
#include "compute/cpu/rope.h"       // defines: cpu::rope
#include "compute/cpu/swiglu.h"     // defines: cpu::swigluForward, cpu::swigluBackward
#include "runtime/LaunchControl.h"  // defines: HostOpScope

namespace lorascope::compute {
namespace {

// Frozen weights may be stored in bf16/f16; CPU math is fp32, so such a weight is widened here.
std::vector<float> widenToFloat(const Tensor& t) {
  std::vector<float> out(static_cast<std::size_t>(t.numel()));
  compute::widenToFloat(t.data(), t.dtype(), 0, t.numel(), out.data());
  return out;
}

// The kernels' masking of `options`, its document starts checked against q (B, S, heads, hd).
cpu::AttentionMasking maskingOf(const char* op, const AttentionOptions& options, const Tensor& q) {
  if (!options.documentStarts.empty()) {
    checkDocumentStarts(op, options.documentStarts, q.dim(0), q.dim(1));
  }
  return {options.scale, options.window, options.softcap,
          options.documentStarts.empty() ? nullptr : options.documentStarts.data()};
}

class CpuBackend final : public Backend {
 public:
  CpuBackend() { caps_ = {Device::Cpu, DType::F32, "cpu (fp32)"}; }

  const BackendCapabilities& capabilities() const override { return caps_; }

  // Large blocks come back from the cache of cpu/host_blocks.h (Note [host block cache]).
  Tensor empty(DType dtype, const Shape& shape) override {
    return Tensor(blocks_.allocate(storageBytes(dtype, numelOf(shape))), dtype, shape, Device::Cpu);
  }

  Tensor upload(std::span<const float> values, DType dtype, const Shape& shape) override {
    if (static_cast<std::int64_t>(values.size()) != numelOf(shape)) {
      throw ShapeError("upload: " + std::to_string(values.size()) + " values for shape " +
                       shapeToString(shape));
    }
    Tensor t = empty(dtype, shape);
    if (dtype == DType::F32) {
      std::memcpy(t.data(), values.data(), values.size_bytes());
    } else if (dtype == DType::NF4) {
      nf4::quantize(values.data(), DType::F32, t.numel(), static_cast<std::byte*>(t.data()));
    } else if (dtype == DType::BF16) {
      auto* bits = t.as<std::uint16_t>();
      for (std::size_t i = 0; i < values.size(); ++i) {
        bits[i] = floatToBf16(values[i]);
      }
    } else {
      throw ShapeError(std::string("upload: ") + dtypeName(dtype) +
                       " tensors are not supported on the cpu backend");
    }
    return t;
  }

  std::vector<float> download(const Tensor& tensor) override { return widenToFloat(tensor); }
  // OpenBLAS is the CPU's only GEMM: the choice is recorded for the engine to report, and takes
  // effect when the run moves to a GPU backend.
  void setGemmImplementation(GemmImplementation impl) override { gemmImplementation_ = impl; }
  GemmImplementation gemmImplementation() const override { return gemmImplementation_; }
  // The f32 reference of hip/nf4.hip (compute/Nf4.cpp); matmul dequantises the same way, block
  // by block into its scratch (cpu/matmul.cpp).
  void dequantize(const Tensor& packed, Tensor& out) override {
    checkDequantizeArgs(caps_, packed, out);
    nf4::dequantize(static_cast<const std::byte*>(packed.data()), 0, packed.numel(),
                    out.as<float>());
  }
  // Every stored dtype is accepted: CPU ops widen bf16/f16 weights block by block.
  Tensor uploadRaw(std::span<const std::byte> bytes, DType dtype, const Shape& shape) override {
    checkUploadRawArgs(bytes.size(), dtype, shape);
    Tensor t = empty(dtype, shape);
    std::memcpy(t.data(), bytes.data(), bytes.size());
    return t;
  }

  void synchronize() override {}

  void rmsnormForward(const Tensor& x, const Tensor& weight, float eps, Tensor& y,
                      Tensor& rstd) override {
    const runtime::HostOpScope op("rmsnorm_forward");  // watchdog and fault injection
    checkRmsnormForwardArgs(caps_, x, weight, y, rstd);
    const std::vector<float> w = widenToFloat(weight);
    cpu::rmsnormForward(x.as<float>(), w.data(), eps, x.dim(0), x.dim(1), y.as<float>(),
                        rstd.as<float>());
  }

  void rmsnormBackward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& rstd,
                       Tensor& dx, bool accumulate) override {
    const runtime::HostOpScope op("rmsnorm_backward");  // watchdog and fault injection
    checkRmsnormBackwardArgs(caps_, dy, x, weight, rstd, dx);
    const std::vector<float> w = widenToFloat(weight);
    cpu::rmsnormBackward(dy.as<float>(), x.as<float>(), w.data(), rstd.as<float>(), x.dim(0),
                         x.dim(1), dx.as<float>(), accumulate);
  }

  void matmul(const Tensor& a, bool transposeA, const Tensor& b, bool transposeB, Tensor& c,
              float alpha, float beta) override {
    const runtime::HostOpScope op("matmul");  // watchdog and fault injection
    checkMatmulArgs(caps_, a, transposeA, b, transposeB, c);
    const cpu::MatmulDims dims{c.dim(0), c.dim(1), a.dim(transposeA ? 0 : 1)};
    cpu::matmul(a.as<float>(), transposeA, b.data(), b.dtype(), transposeB, c.as<float>(), dims,
                alpha, beta, matmulScratch_);
  }

  // One launch over the tiles of every output (cpu::sgemmGroup) when every b is f32 and no
  // product is empty; otherwise (16-bit or NF4 weights, widened block by block) one matmul each.
  void matmulGroup(std::span<const MatmulProduct> products) override {
    const runtime::HostOpScope op("matmul");  // watchdog and fault injection
    bool plain = true;
    for (const MatmulProduct& p : products) {
      checkMatmulArgs(caps_, *p.a, p.transposeA, *p.b, p.transposeB, *p.c);
      plain = plain && p.b->dtype() == DType::F32 && p.c->numel() > 0 &&
              p.a->dim(p.transposeA ? 0 : 1) > 0;
    }
    if (!plain) {
      for (const MatmulProduct& p : products) {
        const cpu::MatmulDims dims{p.c->dim(0), p.c->dim(1), p.a->dim(p.transposeA ? 0 : 1)};
        cpu::matmul(p.a->as<float>(), p.transposeA, p.b->data(), p.b->dtype(), p.transposeB,
                    p.c->as<float>(), dims, p.alpha, p.beta, matmulScratch_);
      }
      return;
    }
    std::vector<cpu::GemmTerm> terms;
    terms.reserve(products.size());
    for (const MatmulProduct& p : products) {
      const std::int64_t m = p.c->dim(0), n = p.c->dim(1), k = p.a->dim(p.transposeA ? 0 : 1);
      terms.push_back({p.a->as<float>(),
                       p.transposeA,
                       p.transposeA ? m : k,
                       p.b->as<float>(),
                       p.transposeB,
                       p.transposeB ? k : n,
                       p.c->as<float>(),
                       n,
                       {m, n, k},
                       p.alpha,
                       p.beta});
    }
    cpu::sgemmGroup(terms);
  }

  void embeddingForward(const Tensor& table, std::span<const std::int32_t> ids,
                        Tensor& out) override {
    const runtime::HostOpScope op("embedding_forward");  // watchdog and fault injection
    checkEmbeddingArgs(caps_, table, ids.size(), out);
    cpu::embeddingForward(table.data(), table.dtype(), table.dim(0), table.dim(1), ids,
                          out.as<float>());
  }

  void rope(Tensor& x, std::span<const std::int32_t> positions, const Tensor& invFreq,
            bool inverse) override {
    const runtime::HostOpScope op("rope");  // watchdog and fault injection
    checkRopeArgs(caps_, x, positions.size(), invFreq);
    cpu::rope(x.as<float>(), {x.dim(0), x.dim(1), x.dim(2)}, positions.data(), invFreq.as<float>(),
              inverse);
  }

  void attentionForward(const Tensor& q, const Tensor& k, const Tensor& v,
                        const AttentionOptions& options, Tensor& out, Tensor& logsumexp) override {
    const runtime::HostOpScope op("attention_forward");  // watchdog and fault injection
    checkAttentionArgs(caps_, q, k, v, out, logsumexp);
    cpu::attentionForward(q.as<float>(), k.as<float>(), v.as<float>(),
                          {q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3)},
                          maskingOf("attention_forward", options, q), out.as<float>(),
                          logsumexp.as<float>());
  }

  void attentionCached(const Tensor& q, const Tensor& k, const Tensor& v,
                       const AttentionOptions& options, Tensor& out) override {
    const runtime::HostOpScope op("attention_cached");  // watchdog and fault injection
    checkAttentionCachedArgs(caps_, q, k, v, out);
    cpu::attentionCached(q.as<float>(), k.as<float>(), v.as<float>(),
                         {q.dim(0), k.dim(0), q.dim(1), k.dim(1), q.dim(2)},
                         {options.scale, options.window, options.softcap}, out.as<float>());
  }

  void swigluForward(const Tensor& gate, const Tensor& up, Tensor& out) override {
    const runtime::HostOpScope op("swiglu_forward");  // watchdog and fault injection
    checkSwigluArgs(caps_, gate, up, out);
    cpu::swigluForward(gate.as<float>(), up.as<float>(), gate.numel(), out.as<float>());
  }

  void gegluForward(const Tensor& gate, const Tensor& up, Tensor& out) override {
    const runtime::HostOpScope op("geglu_forward");  // watchdog and fault injection
    checkSwigluArgs(caps_, gate, up, out);
    cpu::gegluForward(gate.as<float>(), up.as<float>(), gate.numel(), out.as<float>());
  }

  void scaleActivations(Tensor& x, float factor) override {
    const runtime::HostOpScope op("scale");  // watchdog and fault injection
    checkActivationArgs("scale", caps_, x);
    cpu::scaleInPlace(x.as<float>(), x.numel(), factor);
  }

  void softcapInPlace(Tensor& x, float cap) override {
    const runtime::HostOpScope op("softcap");  // watchdog and fault injection
    checkActivationArgs("softcap", caps_, x);
    cpu::softcapInPlace(x.as<float>(), x.numel(), cap);
  }

  void addInPlace(Tensor& x, const Tensor& y) override {
    const runtime::HostOpScope op("add");  // watchdog and fault injection
    checkAddArgs(caps_, x, y);
    cpu::addInPlace(x.as<float>(), y.as<float>(), x.numel());
  }

  void addBias(Tensor& x, const Tensor& bias) override {
    const runtime::HostOpScope op("add_bias");  // watchdog and fault injection
    checkAddBiasArgs(caps_, x, bias);
    const std::vector<float> b = widenToFloat(bias);
    cpu::addBias(x.as<float>(), b.data(), x.dim(0), x.dim(1));
  }

  void crossEntropyForward(const Tensor& logits, std::span<const std::int32_t> targets,
                           Tensor& losses, Tensor& logsumexp) override {
    const runtime::HostOpScope op("cross_entropy_forward");  // watchdog and fault injection
    checkCrossEntropyArgs(caps_, logits, targets.size(), losses, logsumexp);
    cpu::crossEntropyForward(logits.as<float>(), logits.dim(1), targets, losses.as<float>(),
                             logsumexp.as<float>());
  }

  void attentionBackward(const Tensor& dout, const Tensor& q, const Tensor& k, const Tensor& v,
                         const Tensor& out, const Tensor& logsumexp,
                         const AttentionOptions& options, Tensor& dq, Tensor& dk,
                         Tensor& dv) override {
    const runtime::HostOpScope op("attention_backward");  // watchdog and fault injection
    checkAttentionBackwardArgs(caps_, dout, q, k, v, out, logsumexp, dq, dk, dv);
    cpu::attentionBackward(dout.as<float>(), q.as<float>(), k.as<float>(), v.as<float>(),
                           out.as<float>(), logsumexp.as<float>(),
                           {q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3)},
                           maskingOf("attention_backward", options, q), dq.as<float>(),
                           dk.as<float>(), dv.as<float>());
  }

  void swigluBackward(const Tensor& dout, const Tensor& gate, const Tensor& up, Tensor& dgate,
                      Tensor& dup) override {
    const runtime::HostOpScope op("swiglu_backward");  // watchdog and fault injection
    checkSwigluBackwardArgs(caps_, dout, gate, up, dgate, dup);
    cpu::swigluBackward(dout.as<float>(), gate.as<float>(), up.as<float>(), gate.numel(),
                        dgate.as<float>(), dup.as<float>());
  }

  void gegluBackward(const Tensor& dout, const Tensor& gate, const Tensor& up, Tensor& dgate,
                     Tensor& dup) override {
    const runtime::HostOpScope op("geglu_backward");  // watchdog and fault injection
    checkSwigluBackwardArgs(caps_, dout, gate, up, dgate, dup);
    cpu::gegluBackward(dout.as<float>(), gate.as<float>(), up.as<float>(), gate.numel(),
                       dgate.as<float>(), dup.as<float>());
  }

  void multiplyInPlace(Tensor& x, const Tensor& y) override {
    const runtime::HostOpScope op("multiply");  // watchdog and fault injection
    checkMultiplyArgs(caps_, x, y);
    cpu::multiplyInPlace(x.as<float>(), y.as<float>(), x.numel());
  }

  void lmHeadCrossEntropy(const Tensor& h, const Tensor& weight,
                          std::span<const std::int32_t> targets, float gradScale, Tensor& losses,
                          Tensor& dh, float logitSoftcap) override {
    const runtime::HostOpScope op("lm_head_cross_entropy");  // watchdog and fault injection
    checkLmHeadCrossEntropyArgs(caps_, h, weight, targets.size(), losses, dh);
    cpu::lmHeadCrossEntropy(h.as<float>(), weight.data(), weight.dtype(),
                            {h.dim(0), h.dim(1), weight.dim(0)}, targets, gradScale, logitSoftcap,
                            losses.as<float>(), dh.defined() ? dh.as<float>() : nullptr,
                            lmHeadScratch_);
  }

  void fillZero(std::span<Tensor* const> tensors) override {
    const runtime::HostOpScope op("fill_zero");  // watchdog and fault injection
    checkTensorListArgs("fill_zero", caps_, tensors);
    for (Tensor* t : tensors) {
      std::memset(t->data(), 0, t->bytes());
    }
  }

  double sumOfSquares(std::span<const Tensor* const> tensors) override {
    const runtime::HostOpScope op("sum_of_squares");  // watchdog and fault injection
    checkTensorListArgs("sum_of_squares", caps_, tensors);
    double sum = 0.0;
    for (const Tensor* t : tensors) {
      sum = host::addSumOfSquares(t->as<float>(), t->numel(), sum);
    }
    return sum;
  }

  void scaleInPlace(std::span<Tensor* const> tensors, float factor) override {
    const runtime::HostOpScope op("scale");  // watchdog and fault injection
    checkTensorListArgs("scale", caps_, tensors);
    for (Tensor* t : tensors) {
      host::scale(t->as<float>(), t->numel(), factor);
    }
  }

  void adamw(std::span<const AdamWTensors> tensors, const AdamWScalars& scalars) override {
    const runtime::HostOpScope op("adamw");  // watchdog and fault injection
    checkAdamWArgs(caps_, tensors);
    for (const AdamWTensors& t : tensors) {
      host::adamw(t.param->as<float>(), t.grad->as<float>(), t.firstMoment->as<float>(),
                  t.secondMoment->as<float>(), t.param->numel(), scalars);
    }
  }

  void dropoutMask(Tensor& mask, std::uint64_t seed, std::uint64_t stream, double p) override {
    const runtime::HostOpScope op("dropout_mask");  // watchdog and fault injection
    checkDropoutMaskArgs(caps_, mask, p);
    host::dropoutMask(mask.as<float>(), mask.numel(), seed, stream, p);
  }

 private:
  BackendCapabilities caps_;
  GemmImplementation gemmImplementation_ = GemmImplementation::Vendor;
  std::vector<float> matmulScratch_;  // fp32 blocks of 16-bit weights (cpu/matmul.cpp's note)
  cpu::LmHeadScratch lmHeadScratch_;  // one logits chunk + widened weight block
  cpu::HostBlocks blocks_;            // tensor memory (cpu/host_blocks.h)
};

}  // namespace

std::unique_ptr<Backend> createCpuBackend() {
  return std::make_unique<CpuBackend>();
}

}  // namespace lorascope::compute

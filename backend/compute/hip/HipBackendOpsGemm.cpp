// hip/HipBackendOpsGemm.cpp — matmul on the selected GEMM (hip/gemm.h): the vendor BLAS or the
// built-in kernel, switchable between any two calls; the NF4 dequantisation in front of it; and
// the fused low-rank product (the LoRA up-projection and input gradient, either GEMM); and the
// LoRA backward's products from an output gradient in one pass (hip/lora_products.hip).
//
// Note [NF4 through a bf16 workspace]: an NF4 b (a frozen projection under --quantize nf4) is
// dequantised whole into a bf16 workspace tensor (hip/nf4.hip), which then goes to whichever GEMM
// is selected; the workspace is freed to the allocator's cache when the product is queued, so the
// next projection reuses the block. This costs one extra pass over out × in bf16 weights per
// product (written once, read by the GEMM) against fusing the dequantisation into the GEMM's
// tiles, but keeps the vendor GEMM (and its speed) for every product and needs no second GEMM
// kernel; the memory model counts the workspace (model/MemoryEstimate.h).
#include <algorithm>
#include <vector>

#include "compute/Nf4.h"
#include "compute/hip/HipBackend.h"
#include "compute/hip/elementwise.h"    // defines: castF32ToBf16, accumulateIntoBf16,
                                        // addLowRankProduct
#include "compute/hip/gemm.h"           // defines: builtinGemm, VendorBlas
#include "compute/hip/lora_products.h"  // defines: loraOutputProducts, LoraOutputJob
#include "compute/hip/nf4.h"            // defines: nf4Dequantize, kNf4TableFloats

namespace lorascope::compute::hip {
namespace {

// A matrix as the GEMMs read it: dense, or a column view (Tensor::columns) with its ld().
GemmOperand operandOf(const Tensor& t, bool transposed) {
  return {t.base<void>(), t.dtype(), t.dim(0), t.dim(1), t.ld(), transposed};
}

}  // namespace

void HipBackend::setGemmImplementation(GemmImplementation impl) {
  if (impl == GemmImplementation::Vendor && !vendorBlas_) {
    // Created here rather than at the next matmul so that a build without a vendor BLAS refuses
    // the selection itself (UnsupportedOpError with the reason) and the current one stays.
    vendorBlas_ = std::make_unique<VendorBlas>(stream_);
  }
  gemmImplementation_ = impl;
}

void HipBackend::dequantize(const Tensor& packed, Tensor& out) {
  checkDequantizeArgs(caps_, packed, out);
  if (!nf4Tables_.defined()) {
    std::vector<float> tables(nf4::kCode.begin(), nf4::kCode.end());
    tables.insert(tables.end(), nf4::dynamicCode().begin(), nf4::dynamicCode().end());
    const memory::OwnerScope owner(memory::Owner::Weights);  // constant, like the weights
    nf4Tables_ = upload(tables, DType::F32, {kNf4TableFloats});
  }
  nf4Dequantize(packed.data(), packed.numel(), nf4Tables_.as<float>(), out.as<std::uint16_t>(),
                stream_);
}

void HipBackend::matmul(const Tensor& a, bool transposeA, const Tensor& b, bool transposeB,
                        Tensor& c, float alpha, float beta) {
  checkMatmulArgs(caps_, a, transposeA, b, transposeB, c);
  if (b.dtype() == DType::NF4) {  // Note [NF4 through a bf16 workspace]
    Tensor weights;
    {
      const memory::OwnerScope owner(memory::Owner::Workspace);
      weights = empty(DType::BF16, b.shape());
    }
    dequantize(b, weights);
    matmul(a, transposeA, weights, transposeB, c, alpha, beta);
    return;
  }
  isBf16Weight("matmul", b);  // rejects f16
  const GemmOperand opA = operandOf(a, transposeA);
  GemmOperand opB = operandOf(b, transposeB);
  const GemmOutput out{c.base<void>(), c.dtype(), c.ld()};
  if (gemmImplementation_ == GemmImplementation::BuiltIn) {
    const std::int64_t workspaceFloats = builtinGemmWorkspaceFloats(opA, opB);
    Tensor workspace = workspaceFloats > 0 ? empty(DType::F32, {workspaceFloats}) : Tensor();
    builtinGemm("matmul", opA, opB, out, alpha, beta, stream_,
                workspace.defined() ? workspace.as<float>() : nullptr);
    return;
  }
  if (!vendorBlas_) {
    vendorBlas_ = std::make_unique<VendorBlas>(stream_);
  }
  // The vendor GEMMs have no bf16 × f32 product. The f32 operand of the trainer's mixed products
  // is a LoRA weight (rank × features, tiny next to the activation), so it gets a bf16 copy, as
  // under PyTorch's autocast; the built-in GEMM reads it in f32 instead.
  Tensor bAsBf16;
  if (a.dtype() == DType::BF16 && b.dtype() == DType::F32) {
    bAsBf16 = empty(DType::BF16, b.shape());
    castF32ToBf16(b.as<float>(), b.numel(), bAsBf16.as<std::uint16_t>(), stream_);
    opB.data = bAsBf16.data();
    opB.dtype = DType::BF16;
  }
  if (c.dtype() == DType::BF16 && beta != 0.0f) {
    // cuBLAS may add beta·c to a product it has already rounded to bf16: on an H100 (cuBLAS
    // 13.1, algo 66, 64×64 tiles, no split-k, so CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION
    // does not apply) 27% of the outputs of the trainer's gate/up dx += dy·W (m=300 n=896
    // k=4864) were rounded twice, up to 0.92 of a bf16 ulp; with beta = 0 the same product is
    // rounded once. So the product goes to an f32 scratch and one kernel adds it to c, rounding
    // once, on every card and vendor alike.
    const memory::OwnerScope owner(memory::Owner::Workspace);
    Tensor product = empty(DType::F32, c.shape());
    vendorBlas_->gemm("matmul", opA, opB, GemmOutput{product.data(), DType::F32, c.dim(1)}, alpha,
                      0.0f);
    accumulateIntoBf16(product.as<float>(), c.numel(), beta, c.as<std::uint16_t>(), stream_);
    return;
  }
  vendorBlas_->gemm("matmul", opA, opB, out, alpha, beta);
}

void HipBackend::addLowRankProduct(const Tensor& lhsT, const Tensor& w, bool transposeW,
                                   float scale, Tensor& y) {
  checkMatmulArgs(caps_, lhsT, true, w, transposeW, y);
  const std::int64_t k = lhsT.dim(0);
  // Beyond kMaxLowRank (hip/elementwise.h) the GEMM and its epilogue.
  if (k > kMaxLowRank || y.dtype() != DType::BF16 || w.dtype() == DType::NF4) {
    matmul(lhsT, true, w, transposeW, y, scale, 1.0f);
    return;
  }
  const bool weightIsBf16 = isBf16Weight("lowrank_gemm", w);
  hip::addLowRankProduct(lhsT.as<std::uint16_t>(), k, lhsT.dim(1), w.data(), weightIsBf16,
                         transposeW, y.dim(1), scale, y.as<std::uint16_t>(), stream_);
}

// Note [the LoRA term under the GEMM]: a frozen projection and its LoRA term, y = x·op(w) +
// scale·lhsTᵀ·op(low), had been the vendor GEMM writing y and then the fused low-rank kernel
// (addLowRankProduct) reading and writing it again. Here the vendor GEMM writes the term first (a
// product of inner dimension r, rounded once) and the frozen product is added onto it with beta =
// 1, the GEMM reading y in its epilogue while its tiles compute; a bias is added after. On an H200
// (bench_gpu_train --prompt-percent 50 --profile-steps 3, 2 rounds each in one call) the
// Llama-3.2-1B step went from 46.14-46.16 to 44.90-45.04 ms and Qwen2.5-0.5B's from 32.39-32.59 to
// 31.22-31.52: the adds' 4.8 ms became 2.6 ms of terms written and ~0.7 ms more in the frozen
// GEMMs. In another call the low-rank kernel writing the term instead (y not read) took 3.33 ms
// against the GEMM's 2.59, and the step 44.89-45.06 ms against 44.33-44.40; adding the residual
// stream in the term's pass (y = x + term, then the GEMM) measured the same as without. The
// rounding is that of the add it replaces: there the product was rounded to bf16 and the term added
// in f32 and rounded; here the term is rounded and the product added, in f32 or (cuBLAS may round
// first, see matmul above) after its own rounding: two roundings of y either way (three with a
// bias, as before). matmul's f32 scratch for beta ≠ 0 exists for sums of products of like size (dh
// = dq·Wq + dk·Wk + …), where a second rounding of one summand costs up to an ulp of the sum; it is
// not used here.
void HipBackend::projectionProducts(std::span<const ProjectionProduct> products) {
  for (const ProjectionProduct& p : products) {
    checkMatmulArgs(caps_, *p.x, false, *p.w, p.transposeW, *p.y);
    const bool underGemm = p.lhsT != nullptr && gemmImplementation_ == GemmImplementation::Vendor &&
                           p.x->dtype() == DType::BF16 && p.w->dtype() == DType::BF16 &&
                           p.y->dtype() == DType::BF16 && p.lhsT->dtype() == DType::BF16 &&
                           p.low->dtype() == DType::BF16;
    if (!underGemm) {
      matmul(*p.x, false, *p.w, p.transposeW, *p.y, 1.0f, 0.0f);
      if (p.bias != nullptr) {
        addBias(*p.y, *p.bias);
      }
      if (p.lhsT != nullptr) {
        addLowRankProduct(*p.lhsT, *p.low, p.transposeLow, p.scale, *p.y);
      }
      continue;
    }
    checkMatmulArgs(caps_, *p.lhsT, true, *p.low, p.transposeLow, *p.y);
    if (!vendorBlas_) {
      vendorBlas_ = std::make_unique<VendorBlas>(stream_);
    }
    const GemmOutput out{p.y->base<void>(), DType::BF16, p.y->ld()};
    vendorBlas_->gemm("lora_term_gemm", operandOf(*p.lhsT, true), operandOf(*p.low, p.transposeLow),
                      out, p.scale, 0.0f);
    vendorBlas_->gemm("matmul", operandOf(*p.x, false), operandOf(*p.w, p.transposeW), out, 1.0f,
                      1.0f);
    if (p.bias != nullptr) {
      addBias(*p.y, *p.bias);
    }
  }
}

void HipBackend::loraOutputProducts(std::span<const LoraOutputSite> sites, float scale) {
  // Served sites of the same tokens and rank go together, up to a launch's worth (a group's);
  // the others take the two GEMMs.
  std::vector<LoraOutputJob> batch;
  std::int64_t batchTokens = 0;
  std::int64_t batchRank = 0;
  const auto flush = [&] {
    if (batch.empty()) {
      return;
    }
    const memory::OwnerScope owner(memory::Owner::Workspace);
    Tensor partials =
        empty(DType::F32,
              {std::max<std::int64_t>(
                  loraOutputPartialFloats(batch.data(), batch.size(), batchTokens, batchRank), 1)});
    hip::loraOutputProducts(batch.data(), batch.size(), batchTokens, batchRank, scale,
                            partials.as<float>(), stream_);
    batch.clear();
  };
  for (const LoraOutputSite& s : sites) {
    // dy's block and the two products' shapes (ShapeError naming the operand).
    const std::int64_t n = checkLoraOutputSite(caps_, s);
    const std::int64_t tokens = s.dy->dim(0);
    const std::int64_t dyLd = s.dy->ld();
    const std::int64_t rank = s.uT->dim(0);
    const bool bf16Operands = s.dy->dtype() == DType::BF16 && s.b->dtype() == DType::BF16 &&
                              s.uT->dtype() == DType::BF16 && s.gT->dtype() == DType::BF16;
    const auto* dy = s.dy->base<std::uint16_t>() + (bf16Operands ? s.dyColumn : 0);
    if (!bf16Operands || s.gradB->dtype() != DType::F32 ||
        !loraOutputProductsServe(dy, dyLd, s.b->as<std::uint16_t>(), s.uT->as<std::uint16_t>(),
                                 tokens, n, rank)) {
      // The two GEMMs; a column block is copied out first (the default reads host memory).
      Tensor block;
      LoraOutputSite dense = s;
      if (n != dyLd) {
        requireDType("lora_output_products", "dy", *s.dy, DType::BF16);
        block = empty(DType::BF16, {tokens, n});
        hip::copyColumns(s.dy->base<std::uint16_t>() + s.dyColumn, tokens, n, dyLd,
                         block.as<std::uint16_t>(), n, stream_);
        dense.dy = &block;
        dense.dyColumn = 0;
      }
      Backend::loraOutputProducts(std::span(&dense, 1), scale);
      continue;
    }
    if (!batch.empty() &&
        (tokens != batchTokens || rank != batchRank || batch.size() == kLoraOutputLaunchSites)) {
      flush();
    }
    batch.push_back({dy, s.b->as<std::uint16_t>(), s.uT->as<std::uint16_t>(), n, dyLd,
                     s.gradB->as<float>(), s.gT->as<std::uint16_t>(),
                     s.g != nullptr ? s.g->base<std::uint16_t>() : nullptr,
                     s.g != nullptr ? s.g->ld() : 0});
    batchTokens = tokens;
    batchRank = rank;
  }
  flush();
}

}  // namespace lorascope::compute::hip

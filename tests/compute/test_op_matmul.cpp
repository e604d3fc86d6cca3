// test_op_matmul.cpp — the CPU matmul (compute/cpu/matmul.cpp) against a naive double loop:
// every transpose, alpha/beta, the skinny products' kernels, bf16 weights widened block by block,
// f16 weights, the shape check, matmulGroup (one launch for several products) against the products
// one by one, loraOutputProducts (the LoRA backward's dB and gᵀ from a site's dy, or a column block
// of a wider one), and projectionProducts (a frozen projection with its bias and LoRA term). Its
// GPU twin is checked in backend/parity/cases_gemm.cpp.
#include <QtTest>

#include <array>
#include <cstring>

#include "ExpectError.h"
#include "OpTestUtil.h"
#include "compute/Backend.h"
#include "compute/CpuControl.h"  // defines: cpuThreads, setCpuThreads
#include "compute/Errors.h"

using namespace lorascope::compute;
namespace cpu = lorascope::compute::cpu;
using lorascope::test::bf16Values;
using lorascope::test::near;
using lorascope::test::randomValues;
using lorascope::test::throwsWith;

namespace {

// c = alpha · op(a) · op(b) + beta · c with every operand given row-major as stored.
std::vector<float> naiveMatmul(const std::vector<float>& a, bool ta, const std::vector<float>& b,
                               bool tb, std::vector<float> c, int m, int n, int k, float alpha,
                               float beta) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int p = 0; p < k; ++p) {
        s += double{ta ? a[p * m + i] : a[i * k + p]} * (tb ? b[j * k + p] : b[p * n + j]);
      }
      c[i * n + j] = static_cast<float>(alpha * s + beta * c[i * n + j]);
    }
  }
  return c;
}

}  // namespace

class TestOpMatmul : public QObject {
  Q_OBJECT

  std::unique_ptr<Backend> cpu_ = createCpuBackend();

  void checkMatmul(int m, int n, int k, bool ta, bool tb, DType bType, float alpha, float beta) {
    const std::vector<float> a = randomValues(static_cast<std::size_t>(m) * k, 1);
    const std::vector<float> b = bf16Values(static_cast<std::size_t>(k) * n, 2);
    const std::vector<float> c0 = randomValues(static_cast<std::size_t>(m) * n, 3);
    const Tensor ta_ = cpu_->upload(a, DType::F32, ta ? Shape{k, m} : Shape{m, k});
    const Tensor tb_ = cpu_->upload(b, bType, tb ? Shape{n, k} : Shape{k, n});
    Tensor c = cpu_->upload(c0, DType::F32, {m, n});
    cpu_->matmul(ta_, ta, tb_, tb, c, alpha, beta);
    QVERIFY(near(cpu_->download(c), naiveMatmul(a, ta, b, tb, c0, m, n, k, alpha, beta), 1e-4f));
  }

 private slots:
  void matmulEveryTransposeWithAlphaAndBeta() {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        checkMatmul(5, 7, 3, ta, tb, DType::F32, 1.0f, 0.0f);
        checkMatmul(4, 6, 9, ta, tb, DType::F32, 0.5f, 1.0f);  // accumulate, as a gradient does
      }
    }
  }

  // Products with a side of at most 32 (cpu/skinny_gemm.h: the LoRA's rank) take the vector
  // kernels: rows of c updated by rows of b, or dot products of contiguous rows, every layout of
  // the operands, tails of every kernel, at 1 thread and split over 3; one product has no short
  // side (OpenBLAS) and one is a decoding step's single row.
  void skinnyProductsMatchTheNaiveLoop() {
    const int threadsBefore = cpu::cpuThreads();
    for (int threads : {1, 3}) {
      cpu::setCpuThreads(threads);
      for (const auto& [m, n, k] : std::vector<std::array<int, 3>>{{8, 300, 1030},
                                                                   {24, 77, 1030},
                                                                   {300, 8, 1030},
                                                                   {1030, 16, 45},
                                                                   {1, 500, 256},
                                                                   {33, 40, 50}}) {
        for (bool ta : {false, true}) {
          for (bool tb : {false, true}) {
            checkMatmul(m, n, k, ta, tb, DType::F32, 1.0f, 0.0f);
            checkMatmul(m, n, k, ta, tb, DType::F32, 0.5f, 1.0f);
            checkMatmul(m, n, k, ta, tb, DType::F32, 2.0f, 0.25f);
          }
        }
      }
    }
    cpu::setCpuThreads(threadsBefore);
  }

  // 2100 × 2048 bf16 is more than one 4 Mi-float scratch block: both blocking paths are used.
  void matmulWidensBf16WeightsBlockByBlock() {
    checkMatmul(3, 2100, 2048, false, true, DType::BF16, 1.0f, 0.0f);
    checkMatmul(3, 2048, 2100, true, false, DType::BF16, 1.0f, 0.5f);
  }

  void matmulRejectsMismatchedInnerDimensions() {
    const Tensor a = cpu_->empty(DType::F32, {2, 3});
    const Tensor b = cpu_->empty(DType::F32, {4, 5});
    Tensor c = cpu_->empty(DType::F32, {2, 4});
    QVERIFY(throwsWith<ShapeError>([&] { cpu_->matmul(a, false, b, true, c, 1, 0); },
                                   {"matmul", "inner dimensions differ"}));
  }

  // q, k, v of one input (separate outputs) and dh = dq·Wq + dk·Wk + dv·Wv (one output summed in
  // order), as the training graph issues them, at 1 and 4 threads, f32 and bf16 weights (the
  // group's one-launch path and its matmul-per-product fallback).
  void matmulGroupMatchesTheProductsOneByOne() {
    const int threadsBefore = cpu::cpuThreads();
    for (int threads : {1, 4}) {
      cpu::setCpuThreads(threads);
      for (DType weights : {DType::F32, DType::BF16}) {
        const int t = 300, h = 96, outs[3] = {128, 64, 40};
        const std::vector<float> xv = randomValues(static_cast<std::size_t>(t) * h, 11);
        const Tensor x = cpu_->upload(xv, DType::F32, {t, h});
        std::vector<std::vector<float>> wv, gv;
        std::vector<Tensor> w, ys, g;
        for (int i = 0; i < 3; ++i) {
          wv.push_back(bf16Values(static_cast<std::size_t>(outs[i]) * h, 20 + i));
          w.push_back(cpu_->upload(wv.back(), weights, {outs[i], h}));
          ys.push_back(cpu_->empty(DType::F32, {t, outs[i]}));
          gv.push_back(randomValues(static_cast<std::size_t>(t) * outs[i], 30 + i));
          g.push_back(cpu_->upload(gv.back(), DType::F32, {t, outs[i]}));
        }
        std::vector<MatmulProduct> forward;
        for (int i = 0; i < 3; ++i) {
          forward.push_back({&x, false, &w[i], true, &ys[i], 1.0f, 0.0f});
        }
        cpu_->matmulGroup(forward);
        Tensor dh =
            cpu_->upload(randomValues(static_cast<std::size_t>(t) * h, 40), DType::F32, {t, h});
        std::vector<MatmulProduct> backward;
        for (int i = 0; i < 3; ++i) {
          backward.push_back({&g[i], false, &w[i], false, &dh, 0.5f, i == 0 ? 0.0f : 1.0f});
        }
        cpu_->matmulGroup(backward);
        std::vector<float> want(static_cast<std::size_t>(t) * h, 0.0f);
        for (int i = 0; i < 3; ++i) {
          const std::vector<float> zeros(static_cast<std::size_t>(t) * outs[i], 0.0f);
          QVERIFY(near(cpu_->download(ys[i]),
                       naiveMatmul(xv, false, wv[i], true, zeros, t, outs[i], h, 1.0f, 0.0f),
                       1e-4f));
          want = naiveMatmul(gv[i], false, wv[i], false, want, t, h, outs[i], 0.5f, 1.0f);
        }
        QVERIFY(near(cpu_->download(dh), want, 1e-4f));
      }
    }
    cpu::setCpuThreads(threadsBefore);
  }

  void matmulGroupRejectsAProductReadingAnotherOnesOutput() {
    const Tensor x = cpu_->upload(randomValues(64 * 32, 1), DType::F32, {64, 32});
    const Tensor w = cpu_->upload(randomValues(32 * 32, 2), DType::F32, {32, 32});
    Tensor y = cpu_->empty(DType::F32, {64, 32});
    Tensor z = cpu_->empty(DType::F32, {64, 32});
    const std::vector<MatmulProduct> chained = {{&x, false, &w, true, &y, 1.0f, 0.0f},
                                                {&y, false, &w, true, &z, 1.0f, 0.0f}};
    QVERIFY(throwsWith<ShapeError>([&] { cpu_->matmulGroup(chained); },
                                   {"matmul group", "reads the c another one writes"}));
  }

  void f16WeightsMultiplyLikeTheirValues() {
    Tensor w = cpu_->empty(DType::F16, {2, 2});
    const std::uint16_t bits[] = {0x3c00, 0x4000, 0xbc00, 0x3800};  // 1, 2, -1, 0.5
    std::memcpy(w.data(), bits, sizeof bits);
    const Tensor x = cpu_->upload(std::vector<float>{3, 4}, DType::F32, {1, 2});
    Tensor y = cpu_->empty(DType::F32, {1, 2});
    cpu_->matmul(x, false, w, true, y, 1, 0);  // y = x·Wᵀ = [3+8, -3+2]
    QCOMPARE(cpu_->download(y), (std::vector<float>{11, -1}));
  }

  // loraOutputProducts (the default, on the CPU): per site dB += s·dyᵀ·u (u given as uᵀ) and
  // gᵀ = s·Bᵀ·dyᵀ; a gradient of the wrong shape is refused before anything is written.
  void loraOutputProductsAreTheLoraBackwardsTwoProducts() {
    auto cpu = createCpuBackend();
    const int t = 5, n = 3, r = 2;
    const float scale = 2.0f;
    const std::vector<float> dy = randomValues(t * n, 11), b = randomValues(n * r, 12);
    const std::vector<float> u = randomValues(r * t, 13), gradB0 = randomValues(n * r, 14);
    const Tensor dyT = cpu->upload(dy, DType::F32, {t, n});
    const Tensor bT = cpu->upload(b, DType::F32, {n, r});
    const Tensor uT = cpu->upload(u, DType::F32, {r, t});
    Tensor gradB = cpu->upload(gradB0, DType::F32, {n, r});
    Tensor gT = cpu->empty(DType::F32, {r, t});
    const LoraOutputSite site{&dyT, &bT, &uT, &gradB, &gT};
    cpu->loraOutputProducts(std::span(&site, 1), scale);
    QVERIFY(near(cpu->download(gradB), naiveMatmul(dy, true, u, true, gradB0, n, r, t, scale, 1.0f),
                 1e-5f));
    QVERIFY(near(cpu->download(gT),
                 naiveMatmul(b, true, dy, true, std::vector<float>(r * t), r, t, n, scale, 0.0f),
                 1e-5f));
    Tensor wrong = cpu->empty(DType::F32, {n + 1, r});
    const LoraOutputSite bad{&dyT, &bT, &uT, &wrong, &gT};
    QVERIFY(throwsWith<ShapeError>([&] { cpu->loraOutputProducts(std::span(&bad, 1), scale); },
                                   {"[4, 2]"}));
  }

  // A site whose dy is a column block of a wider tensor (gate's or up's half of the stacked
  // gradient) gives the products of that block alone; a block past dy's columns is refused.
  void aLoraSiteReadsItsColumnBlockOfAWiderGradient() {
    auto cpu = createCpuBackend();
    const int t = 4, n = 3, r = 2, width = 8, column = 5;
    const std::vector<float> wide = randomValues(t * width, 41), b = randomValues(n * r, 42);
    const std::vector<float> u = randomValues(r * t, 43);
    std::vector<float> block;
    for (int row = 0; row < t; ++row) {
      block.insert(block.end(), wide.begin() + row * width + column,
                   wide.begin() + row * width + column + n);
    }
    const Tensor wideT = cpu->upload(wide, DType::F32, {t, width});
    const Tensor blockT = cpu->upload(block, DType::F32, {t, n});
    const Tensor bT = cpu->upload(b, DType::F32, {n, r});
    const Tensor uT = cpu->upload(u, DType::F32, {r, t});
    Tensor gradB = cpu->upload(std::vector<float>(n * r), DType::F32, {n, r});
    Tensor gradBDense = cpu->upload(std::vector<float>(n * r), DType::F32, {n, r});
    Tensor gT = cpu->empty(DType::F32, {r, t});
    Tensor gTDense = cpu->empty(DType::F32, {r, t});
    const LoraOutputSite inBlock{&wideT, &bT, &uT, &gradB, &gT, column};
    const LoraOutputSite dense{&blockT, &bT, &uT, &gradBDense, &gTDense};
    cpu->loraOutputProducts(std::span(&inBlock, 1), 2.0f);
    cpu->loraOutputProducts(std::span(&dense, 1), 2.0f);
    QCOMPARE(cpu->download(gradB), cpu->download(gradBDense));
    QCOMPARE(cpu->download(gT), cpu->download(gTDense));
    const LoraOutputSite past{&wideT, &bT, &uT, &gradB, &gT, width - n + 1};
    QVERIFY(throwsWith<ShapeError>([&] { cpu->loraOutputProducts(std::span(&past, 1), 2.0f); },
                                   {"columns 6 to 9", "[4, 8]"}));
  }

  // projectionProducts (the default, on the CPU): y = x·op(w) + bias + s·lhsTᵀ·op(low) for a
  // forward projection (w and low transposed, a bias), an input gradient (as stored, no bias) and
  // a product without a term; a term of the wrong width is refused.
  void projectionProductsAreTheProductTheBiasAndTheTerm() {
    auto cpu = createCpuBackend();
    const int t = 4, in = 5, out = 3, k = 2;
    const std::vector<float> x = randomValues(t * in, 21), w = randomValues(out * in, 22);
    const std::vector<float> bias = randomValues(out, 23), lhs = randomValues(k * t, 24);
    const std::vector<float> low = randomValues(out * k, 25);
    const Tensor xT = cpu->upload(x, DType::F32, {t, in});
    const Tensor wForward = cpu->upload(w, DType::F32, {out, in});
    const Tensor wGradient = cpu->upload(w, DType::F32, {in, out});
    const Tensor biasT = cpu->upload(bias, DType::F32, {out});
    const Tensor lhsT = cpu->upload(lhs, DType::F32, {k, t});
    const Tensor lowForward = cpu->upload(low, DType::F32, {out, k});
    const Tensor lowGradient = cpu->upload(low, DType::F32, {k, out});
    Tensor y1 = cpu->empty(DType::F32, {t, out});
    Tensor y2 = cpu->empty(DType::F32, {t, out});
    Tensor y3 = cpu->empty(DType::F32, {t, out});
    const std::array<ProjectionProduct, 3> products{{
        {&xT, &wForward, true, &y1, &biasT, &lhsT, &lowForward, true, 2.0f},
        {&xT, &wGradient, false, &y2, nullptr, &lhsT, &lowGradient, false, 1.0f},
        {&xT, &wForward, true, &y3},
    }};
    cpu->projectionProducts(products);
    const std::vector<float> zero(t * out);
    std::vector<float> forward = naiveMatmul(x, false, w, true, zero, t, out, in, 1.0f, 0.0f);
    for (int i = 0; i < t * out; ++i) {
      forward[i] += bias[i % out];
    }
    QVERIFY(near(cpu->download(y1),
                 naiveMatmul(lhs, true, low, true, forward, t, out, k, 2.0f, 1.0f), 1e-5f));
    const std::vector<float> gradient =
        naiveMatmul(x, false, w, false, zero, t, out, in, 1.0f, 0.0f);
    QVERIFY(near(cpu->download(y2),
                 naiveMatmul(lhs, true, low, false, gradient, t, out, k, 1.0f, 1.0f), 1e-5f));
    QVERIFY(near(cpu->download(y3), naiveMatmul(x, false, w, true, zero, t, out, in, 1.0f, 0.0f),
                 1e-5f));
    const Tensor narrow = cpu->upload(randomValues(k * (out - 1), 26), DType::F32, {k, out - 1});
    const ProjectionProduct bad{&xT, &wGradient, false, &y2, nullptr, &lhsT, &narrow, false, 1.0f};
    QVERIFY(
        throwsWith<ShapeError>([&] { cpu->projectionProducts(std::span(&bad, 1)); }, {"matmul"}));
  }
};

QTEST_APPLESS_MAIN(TestOpMatmul)
#include "test_op_matmul.moc"

// test_op_matmul.cpp — the CPU matmul (compute/cpu/matmul.cpp) against a naive double loop:
// every transpose, alpha/beta, bf16 weights widened block by block, f16 weights, and the shape
// check. Its GPU twin is checked in backend/parity/cases_gemm.cpp.
#include <QtTest>

#include <cstring>

#include "ExpectError.h"
#include "OpTestUtil.h"
#include "compute/Backend.h"
#include "compute/Errors.h"

using namespace lorascope::compute;
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

  void f16WeightsMultiplyLikeTheirValues() {
    Tensor w = cpu_->empty(DType::F16, {2, 2});
    const std::uint16_t bits[] = {0x3c00, 0x4000, 0xbc00, 0x3800};  // 1, 2, -1, 0.5
    std::memcpy(w.data(), bits, sizeof bits);
    const Tensor x = cpu_->upload(std::vector<float>{3, 4}, DType::F32, {1, 2});
    Tensor y = cpu_->empty(DType::F32, {1, 2});
    cpu_->matmul(x, false, w, true, y, 1, 0);  // y = x·Wᵀ = [3+8, -3+2]
    QCOMPARE(cpu_->download(y), (std::vector<float>{11, -1}));
  }
};

QTEST_APPLESS_MAIN(TestOpMatmul)
#include "test_op_matmul.moc"

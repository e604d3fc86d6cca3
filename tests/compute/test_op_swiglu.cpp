// test_op_swiglu.cpp — the CPU SwiGLU (compute/cpu/swiglu.cpp): forward against hand values,
// backward against finite differences of silu.
#include <QtTest>

#include <cmath>

#include "OpTestUtil.h"
#include "compute/Backend.h"

using namespace lorascope::compute;
using lorascope::test::closeTo;
using lorascope::test::near;
using lorascope::test::randomValues;

class TestOpSwiglu : public QObject {
  Q_OBJECT

 private slots:
  void swigluForwardIsSiluOfGateTimesUp() {
    auto cpu = createCpuBackend();
    const Tensor gate = cpu->upload(std::vector<float>{1, 0, -2}, DType::F32, {1, 3});
    const Tensor up = cpu->upload(std::vector<float>{2, 5, 1}, DType::F32, {1, 3});
    Tensor out = cpu->empty(DType::F32, {1, 3});
    cpu->swigluForward(gate, up, out);
    QVERIFY(near(cpu->download(out),
                 {2.0f / (1 + std::exp(-1.0f)), 0, -2.0f / (1 + std::exp(2.0f))}, 1e-6f));
  }

  void swigluBackwardMatchesFiniteDifferences() {
    auto be = createCpuBackend();
    const auto gate = randomValues(64, 11, 3.0f), up = randomValues(64, 12),
               dout = randomValues(64, 13);
    Tensor dg = be->empty(DType::F32, {8, 8}), du = be->empty(DType::F32, {8, 8});
    be->swigluBackward(be->upload(dout, DType::F32, {8, 8}), be->upload(gate, DType::F32, {8, 8}),
                       be->upload(up, DType::F32, {8, 8}), dg, du);
    auto silu = [](double g) { return g / (1 + std::exp(-g)); };
    std::vector<double> wantGate(64), wantUp(64);
    const double eps = 1e-6;
    for (std::size_t i = 0; i < 64; ++i) {
      wantGate[i] = dout[i] * up[i] * (silu(gate[i] + eps) - silu(gate[i] - eps)) / (2 * eps);
      wantUp[i] = dout[i] * silu(gate[i]);
    }
    QVERIFY(closeTo(be->download(dg), wantGate, 1e-6));
    QVERIFY(closeTo(be->download(du), wantUp, 1e-6));
  }
};

QTEST_APPLESS_MAIN(TestOpSwiglu)
#include "test_op_swiglu.moc"

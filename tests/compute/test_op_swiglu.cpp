// test_op_swiglu.cpp — the CPU gated activations (compute/cpu/swiglu.cpp): SwiGLU forward against
// hand values, backward against finite differences of silu; GeGLU against PyTorch's tanh-GELU
// formula and its finite differences; SwiGLU's gradients side by side; the scale and the soft-cap
// ops.
#include <QtTest>

#include <cmath>

#include "ExpectError.h"
#include "OpTestUtil.h"
#include "compute/Backend.h"
#include "compute/Errors.h"

using namespace lorascope::compute;
using lorascope::test::closeTo;
using lorascope::test::near;
using lorascope::test::randomValues;
using lorascope::test::throwsWith;

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

  // swigluBackwardStacked (the default): row r of the result is dgate's row r, then dup's, the
  // two swigluBackward writes; a result not twice as wide is refused.
  void swigluBackwardStackedPutsTheGradientsSideBySide() {
    auto be = createCpuBackend();
    const Shape shape{3, 5};
    const Tensor dout = be->upload(randomValues(15, 31), DType::F32, shape);
    const Tensor gate = be->upload(randomValues(15, 32, 3.0f), DType::F32, shape);
    const Tensor up = be->upload(randomValues(15, 33), DType::F32, shape);
    Tensor dg = be->empty(DType::F32, shape), du = be->empty(DType::F32, shape);
    be->swigluBackward(dout, gate, up, dg, du);
    Tensor both = be->empty(DType::F32, {3, 10});
    be->swigluBackwardStacked(dout, gate, up, both);
    const std::vector<float> g = be->download(dg), u = be->download(du), b = be->download(both);
    for (std::size_t r = 0; r < 3; ++r) {
      for (std::size_t c = 0; c < 5; ++c) {
        QCOMPARE(b[r * 10 + c], g[r * 5 + c]);
        QCOMPARE(b[r * 10 + 5 + c], u[r * 5 + c]);
      }
    }
    Tensor narrow = be->empty(DType::F32, {3, 9});
    QVERIFY(throwsWith<ShapeError>([&] { be->swigluBackwardStacked(dout, gate, up, narrow); },
                                   {"dGateUp", "[3, 10]"}));
  }

  // gelu_pytorch_tanh(g) = ½·g·(1 + tanh(√(2/π)·(g + 0.044715·g³))), as transformers' Gemma MLP.
  void gegluMatchesTanhGeluAndItsFiniteDifferences() {
    auto be = createCpuBackend();
    const auto gate = randomValues(64, 21, 3.0f), up = randomValues(64, 22),
               dout = randomValues(64, 23);
    const Shape shape{8, 8};
    Tensor out = be->empty(DType::F32, shape);
    be->gegluForward(be->upload(gate, DType::F32, shape), be->upload(up, DType::F32, shape), out);
    Tensor dg = be->empty(DType::F32, shape), du = be->empty(DType::F32, shape);
    be->gegluBackward(be->upload(dout, DType::F32, shape), be->upload(gate, DType::F32, shape),
                      be->upload(up, DType::F32, shape), dg, du);
    auto gelu = [](double g) {
      return 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)));
    };
    std::vector<double> wantOut(64), wantGate(64), wantUp(64);
    const double eps = 1e-6;
    for (std::size_t i = 0; i < 64; ++i) {
      wantOut[i] = gelu(gate[i]) * up[i];
      wantGate[i] = dout[i] * up[i] * (gelu(gate[i] + eps) - gelu(gate[i] - eps)) / (2 * eps);
      wantUp[i] = dout[i] * gelu(gate[i]);
    }
    QVERIFY(closeTo(be->download(out), wantOut, 1e-6));
    QVERIFY(closeTo(be->download(dg), wantGate, 1e-5));
    QVERIFY(closeTo(be->download(du), wantUp, 1e-6));
  }

  void scaleAndSoftcapInPlace() {
    auto be = createCpuBackend();
    Tensor x = be->upload(std::vector<float>{-40, -1, 0, 2, 100}, DType::F32, {5});
    be->scaleActivations(x, 0.5f);
    QVERIFY(near(be->download(x), {-20, -0.5f, 0, 1, 50}, 1e-6f));
    be->softcapInPlace(x, 30.0f);
    std::vector<float> want;
    for (const float v : {-20.0f, -0.5f, 0.0f, 1.0f, 50.0f}) {
      want.push_back(30.0f * std::tanh(v / 30.0f));
    }
    QVERIFY(near(be->download(x), want, 1e-5f));
  }
};

QTEST_APPLESS_MAIN(TestOpSwiglu)
#include "test_op_swiglu.moc"

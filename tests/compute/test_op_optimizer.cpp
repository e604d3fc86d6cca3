// test_op_optimizer.cpp — the CPU backend's optimizer ops (compute/HostOptimizer.h,
// cpu/optimizer.cpp): AdamW, sum of squares, scaling, zeroing and dropout masks bit for bit against
// the host trainer's arithmetic (backend/train: Optimizer, LoraDropout, Philox), and their argument
// errors. Its GPU twin is checked in backend/parity/cases_optimizer.cpp.
#include <QtTest>

#include <cmath>
#include <cstring>
#include <random>

#include "compute/Backend.h"
#include "compute/Errors.h"
#include "train/LoraDropout.h"
#include "train/Optimizer.h"
#include "train/RandomDraws.h"

using namespace lorascope::train;
using lorascope::compute::Backend;
using lorascope::compute::DType;
using lorascope::compute::Tensor;

namespace {

// The host AdamW loop as the trainer ran it before the update moved onto the backend, kept
// verbatim as the reference the backend op must reproduce bit for bit.
void referenceAdamw(const AdamWConfig& c, double learningRate, std::int64_t step,
                    std::vector<float>& value, const std::vector<float>& grad,
                    std::vector<float>& first, std::vector<float>& second) {
  const double biasCorrection1 = 1.0 - std::pow(c.beta1, static_cast<double>(step));
  const double biasCorrection2 = 1.0 - std::pow(c.beta2, static_cast<double>(step));
  const float decay = static_cast<float>(1.0 - learningRate * c.weightDecay);
  const float stepSize = static_cast<float>(learningRate / biasCorrection1);
  const float sqrtBias2 = static_cast<float>(std::sqrt(biasCorrection2));
  const float beta1 = static_cast<float>(c.beta1);
  const float beta2 = static_cast<float>(c.beta2);
  const float eps = static_cast<float>(c.epsilon);
  for (std::size_t i = 0; i < value.size(); ++i) {
    const float g = grad[i];
    value[i] *= decay;
    first[i] = beta1 * first[i] + (1.0f - beta1) * g;
    second[i] = beta2 * second[i] + (1.0f - beta2) * g * g;
    const float denom = std::sqrt(second[i]) / sqrtBias2 + eps;
    value[i] -= stepSize * first[i] / denom;
  }
}

std::vector<float> randomValues(std::mt19937& rng, std::size_t count, float stddev) {
  std::normal_distribution<float> dist(0.0f, stddev);
  std::vector<float> out(count);
  for (float& v : out) {
    v = dist(rng);
  }
  return out;
}

bool sameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Runs f and returns the ShapeError's message, or "" when nothing was thrown.
template <typename F>
std::string shapeErrorOf(F&& f) {
  try {
    f();
  } catch (const lorascope::compute::ShapeError& e) {
    return e.what();
  }
  return "";
}

// Tensor sizes of the op tests: a single element, one below a multiple of four, a LoRA A.
constexpr std::int64_t kSizes[] = {1, 7, 3 * 1367};

}  // namespace

class TestOpOptimizer : public QObject {
  Q_OBJECT

 private slots:
  // Three steps of Backend::adamw over three tensors at once, with weight decay and a changing
  // learning rate, leave parameters and moments with the reference loop's exact bits.
  void backendAdamwIsTheHostLoopBitForBit() {
    auto backend = lorascope::compute::createCpuBackend();
    std::mt19937 rng(5);
    AdamWConfig c;
    c.weightDecay = 0.1;
    struct Host {
      std::vector<float> value, grad, first, second;
    };
    std::vector<Host> host;
    std::vector<Tensor> params, grads, firsts, seconds;
    for (std::int64_t n : kSizes) {
      const auto count = static_cast<std::size_t>(n);
      Host h{randomValues(rng, count, 0.1f), {}, randomValues(rng, count, 1e-3f), {}};
      h.second = randomValues(rng, count, 1e-4f);
      for (float& v : h.second) {
        v = std::fabs(v);
      }
      params.push_back(backend->upload(h.value, DType::F32, {n}));
      firsts.push_back(backend->upload(h.first, DType::F32, {n}));
      seconds.push_back(backend->upload(h.second, DType::F32, {n}));
      host.push_back(std::move(h));
    }
    const double rates[] = {1e-3, 2e-4, 5e-2};
    for (std::int64_t step = 1; step <= 3; ++step) {
      grads.clear();
      std::vector<lorascope::compute::AdamWTensors> list;
      for (std::size_t i = 0; i < host.size(); ++i) {
        host[i].grad = randomValues(rng, host[i].value.size(), 0.5f);
        grads.push_back(backend->upload(host[i].grad, DType::F32, {kSizes[i]}));
      }
      for (std::size_t i = 0; i < host.size(); ++i) {
        list.push_back({&params[i], &grads[i], &firsts[i], &seconds[i]});
        referenceAdamw(c, rates[step - 1], step, host[i].value, host[i].grad, host[i].first,
                       host[i].second);
      }
      backend->adamw(list, adamwScalars(c, rates[step - 1], step));
      for (std::size_t i = 0; i < host.size(); ++i) {
        QVERIFY(sameBits(backend->download(params[i]), host[i].value));
        QVERIFY(sameBits(backend->download(firsts[i]), host[i].first));
        QVERIFY(sameBits(backend->download(seconds[i]), host[i].second));
      }
    }
  }

  // The squared global norm of a list, its square root equal to globalGradNorm's to the bit;
  // clipping through scaleInPlace leaves what clipGradNorm leaves.
  void backendNormAndScaleClipLikeTheHost() {
    auto backend = lorascope::compute::createCpuBackend();
    std::mt19937 rng(9);
    std::vector<std::vector<float>> host;
    std::vector<Tensor> tensors;
    double reference = 0.0;
    for (std::int64_t n : kSizes) {
      host.push_back(randomValues(rng, static_cast<std::size_t>(n), 0.3f));
      for (float v : host.back()) {
        reference += static_cast<double>(v) * v;
      }
      tensors.push_back(backend->upload(host.back(), DType::F32, {n}));
    }
    std::vector<Tensor*> list;
    for (Tensor& t : tensors) {
      list.push_back(&t);
    }
    const std::vector<const Tensor*> constList(list.begin(), list.end());
    const double sum = backend->sumOfSquares(constList);
    QCOMPARE(sum, reference);
    std::vector<std::span<float>> views(host.begin(), host.end());
    const double hostNorm = clipGradNorm(views, 1.0);  // the norm is ≈ 19: this clips
    QCOMPARE(std::sqrt(sum), hostNorm);
    const std::optional<float> factor = clipFactor(std::sqrt(sum), 1.0);
    QVERIFY(factor.has_value() && *factor < 1.0f);
    backend->scaleInPlace(list, *factor);
    for (std::size_t i = 0; i < host.size(); ++i) {
      QVERIFY(sameBits(backend->download(tensors[i]), host[i]));
    }
    QVERIFY(!clipFactor(0.5, 1.0).has_value());
    QVERIFY(!clipFactor(5.0, 0.0).has_value());
    QCOMPARE(backend->sumOfSquares({}), 0.0);
  }

  // fillZero clears every listed tensor and nothing else.
  void fillZeroClearsTheListedTensors() {
    auto backend = lorascope::compute::createCpuBackend();
    const std::vector<float> ones(4099, 1.0f);
    Tensor a = backend->upload(ones, DType::F32, {4099});
    Tensor b = backend->upload(std::vector<float>(7, -2.0f), DType::F32, {7});
    Tensor untouched = backend->upload(ones, DType::F32, {4099});
    Tensor* list[] = {&a, &b};
    backend->fillZero(list);
    QVERIFY(sameBits(backend->download(a), std::vector<float>(4099, 0.0f)));
    QVERIFY(sameBits(backend->download(b), std::vector<float>(7, 0.0f)));
    QVERIFY(sameBits(backend->download(untouched), ones));
  }

  // Backend::dropoutMask with a LoRA dropout stream is train::dropoutMask, element for element,
  // for any shape of the mask (4003 is not a multiple of a Philox block).
  void backendDropoutMaskIsTheHostMask() {
    auto backend = lorascope::compute::createCpuBackend();
    const DropoutKey key{77, 12, 3};
    for (const double p : {0.05, 0.25, 0.0}) {
      const std::uint64_t stream = dropoutStream(key, 5, LoraModule::Up);
      Tensor mask = backend->empty(DType::F32, {4003});
      backend->dropoutMask(mask, key.seed, stream, p);
      const std::vector<float> want = dropoutMask(key, 5, LoraModule::Up, p, 4003);
      QVERIFY(sameBits(backend->download(mask), want));
      for (std::size_t i = 0; i < want.size(); ++i) {
        const float u = uniformFloat(key.seed, stream, i);
        QCOMPARE(want[i], u < static_cast<float>(p) ? 0.0f : static_cast<float>(1.0 / (1.0 - p)));
      }
      Tensor matrix = backend->empty(DType::F32, {3, 1001});
      backend->dropoutMask(matrix, key.seed, stream, p);
      const std::vector<float> first3003(want.begin(), want.begin() + 3003);
      QVERIFY(sameBits(backend->download(matrix), first3003));
    }
  }

  // Bad lists and masks are ShapeErrors naming the op and the offending entry.
  void optimizerOpsRejectBadArguments() {
    auto backend = lorascope::compute::createCpuBackend();
    Tensor f32 = backend->upload(std::vector<float>(6, 1.0f), DType::F32, {2, 3});
    Tensor bf16 = backend->upload(std::vector<float>(6, 1.0f), DType::BF16, {2, 3});
    Tensor other = backend->upload(std::vector<float>(6, 1.0f), DType::F32, {3, 2});
    const Tensor* sumList[] = {&f32, &bf16};
    QVERIFY(shapeErrorOf([&] {
              backend->sumOfSquares(sumList);
            }).find("sum_of_squares: tensor 1") != std::string::npos);
    Tensor* nullList[] = {&f32, nullptr};
    QVERIFY(shapeErrorOf([&] {
              backend->fillZero(nullList);
            }).find("fill_zero: tensor 1 of 2 is null") != std::string::npos);
    const lorascope::compute::AdamWTensors entries[] = {{&f32, &f32, &f32, &f32},
                                                        {&f32, &f32, &other, &f32}};
    const std::string adamw =
        shapeErrorOf([&] { backend->adamw(entries, adamwScalars(AdamWConfig{}, 0.1, 1)); });
    QVERIFY2(adamw.find("adamw") != std::string::npos &&
                 adamw.find("entry 1 of 2 m") != std::string::npos,
             adamw.c_str());
    QVERIFY(shapeErrorOf([&] { backend->dropoutMask(f32, 1, 2, 1.0); }).find("dropout_mask") !=
            std::string::npos);
    QVERIFY(shapeErrorOf([&] { backend->dropoutMask(bf16, 1, 2, 0.1); }).find("dropout_mask") !=
            std::string::npos);
  }
};

QTEST_APPLESS_MAIN(TestOpOptimizer)
#include "test_op_optimizer.moc"

// test_op_attention.cpp — the CPU causal GQA attention (compute/cpu/attention.cpp): forward
// against a naive double softmax (outputs and log-sum-exp), backward against a matrix-form double
// reference and finite differences (plain causal, with sliding windows shorter and longer than a
// 64-row tile, with soft-capped scores, and with rows that pack documents apart), and the shape
// and document-start checks. Its GPU twin is checked in
// backend/parity/cases_attention.cpp.
#include <QtTest>

#include <cmath>
#include <utility>

#include "ExpectError.h"
#include "OpTestUtil.h"
#include "compute/Backend.h"
#include "compute/Errors.h"

using namespace lorascope::compute;
using lorascope::test::closeTo;
using lorascope::test::randomValues;
using lorascope::test::throwsWith;

namespace {

struct AttnCase {
  int b = 2, s = 7, h = 4, kv = 2, d = 6;
  float scale = 0.4f;
  int window = 0;                         // 0: full causal
  float softcap = 0.0f;                   // 0: off
  std::vector<std::int32_t> starts = {};  // (b, s) document starts; empty: one document per row
  AttentionOptions options() const {
    AttentionOptions o{scale, window, softcap};
    o.documentStarts = starts;
    return o;
  }
  bool visible(int row, int i, int j) const {
    const bool sameDocument = starts.empty() || j >= starts[row * s + i];
    return j <= i && (window == 0 || i - j < window) && sameDocument;
  }
};

// `c` with its rows packing documents that begin at `begins` (each row its own list, from 0).
AttnCase withDocuments(AttnCase c, const std::vector<std::vector<int>>& begins) {
  c.starts.assign(static_cast<std::size_t>(c.b * c.s), 0);
  for (int b = 0; b < c.b; ++b) {
    for (int i = 0; i < c.s; ++i) {
      for (const int begin : begins[b])
        if (begin <= i)
          c.starts[b * c.s + i] = begin;
    }
  }
  return c;
}

// Matrix-form reference: S = cap(scale·QKᵀ), P = softmax(S + mask), dP = dO·Vᵀ,
// dS = P ⊙ (dP − rowsum(dO⊙O)) ⊙ cap', dQ = scale·dS·K, dK = scale·dSᵀ·Q, dV = Pᵀ·dO, in double,
// with O recomputed in double (and returned in `out`).
void referenceAttentionBackward(const AttnCase& c, const std::vector<float>& q,
                                const std::vector<float>& k, const std::vector<float>& v,
                                const std::vector<float>& dout, std::vector<double>& dq,
                                std::vector<double>& dk, std::vector<double>& dv,
                                std::vector<double>& out) {
  const int group = c.h / c.kv;
  out.assign(q.size(), 0.0);
  dq.assign(q.size(), 0.0);
  dk.assign(k.size(), 0.0);
  dv.assign(v.size(), 0.0);
  auto qi = [&](int b, int i, int h, int x) { return q[((b * c.s + i) * c.h + h) * c.d + x]; };
  auto ki = [&](int b, int j, int g, int x) { return k[((b * c.s + j) * c.kv + g) * c.d + x]; };
  auto vi = [&](int b, int j, int g, int x) { return v[((b * c.s + j) * c.kv + g) * c.d + x]; };
  auto doi = [&](int b, int i, int h, int x) { return dout[((b * c.s + i) * c.h + h) * c.d + x]; };
  for (int b = 0; b < c.b; ++b) {
    for (int h = 0; h < c.h; ++h) {
      const int g = h / group;
      std::vector<double> p(static_cast<std::size_t>(c.s * c.s), 0.0);
      std::vector<double> slope(static_cast<std::size_t>(c.s * c.s), 1.0);  // ∂S/∂(scale·q·k)
      for (int i = 0; i < c.s; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j <= i; ++j) {
          if (!c.visible(b, i, j))
            continue;
          double dot = 0;
          for (int x = 0; x < c.d; ++x)
            dot += double{qi(b, i, h, x)} * ki(b, j, g, x);
          double score = dot * c.scale;
          if (c.softcap > 0) {
            const double th = std::tanh(score / c.softcap);
            score = c.softcap * th;
            slope[i * c.s + j] = 1.0 - th * th;
          }
          p[i * c.s + j] = score;
          mx = std::max(mx, score);
        }
        for (int j = 0; j <= i; ++j)
          if (c.visible(b, i, j))
            sum += (p[i * c.s + j] = std::exp(p[i * c.s + j] - mx));
        for (int j = 0; j <= i; ++j)
          p[i * c.s + j] = c.visible(b, i, j) ? p[i * c.s + j] / sum : 0.0;
      }
      for (int i = 0; i < c.s; ++i) {
        std::vector<double> o(static_cast<std::size_t>(c.d), 0.0);
        for (int j = 0; j <= i; ++j)
          for (int x = 0; x < c.d; ++x)
            o[x] += p[i * c.s + j] * vi(b, j, g, x);
        double rowDot = 0;
        for (int x = 0; x < c.d; ++x) {
          rowDot += double{doi(b, i, h, x)} * o[x];
          out[((b * c.s + i) * c.h + h) * c.d + x] = o[x];
        }
        for (int j = 0; j <= i; ++j) {
          double dp = 0;
          for (int x = 0; x < c.d; ++x)
            dp += double{doi(b, i, h, x)} * vi(b, j, g, x);
          const double ds = p[i * c.s + j] * (dp - rowDot) * slope[i * c.s + j];
          for (int x = 0; x < c.d; ++x) {
            dq[((b * c.s + i) * c.h + h) * c.d + x] += c.scale * ds * ki(b, j, g, x);
            dk[((b * c.s + j) * c.kv + g) * c.d + x] += c.scale * ds * qi(b, i, h, x);
            dv[((b * c.s + j) * c.kv + g) * c.d + x] += p[i * c.s + j] * doi(b, i, h, x);
          }
        }
      }
    }
  }
}

void checkFiniteDifferences(Backend& backend, const AttnCase& c);

}  // namespace

class TestOpAttention : public QObject {
  Q_OBJECT

 private slots:
  void attentionIsCausalWithGroupedKvHeads() {
    auto cpu = createCpuBackend();
    const int batch = 2, seq = 5, heads = 4, kvHeads = 2, hd = 3;
    const std::vector<float> q = randomValues(batch * seq * heads * hd, 4);
    const std::vector<float> k = randomValues(batch * seq * kvHeads * hd, 5);
    const std::vector<float> v = randomValues(batch * seq * kvHeads * hd, 6);
    const float scale = 0.7f;
    Tensor out = cpu->empty(DType::F32, {batch, seq, heads, hd});
    Tensor lse = cpu->empty(DType::F32, {batch, heads, seq});
    cpu->attentionForward(cpu->upload(q, DType::F32, {batch, seq, heads, hd}),
                          cpu->upload(k, DType::F32, {batch, seq, kvHeads, hd}),
                          cpu->upload(v, DType::F32, {batch, seq, kvHeads, hd}), scale, out, lse);
    const std::vector<float> got = cpu->download(out);
    const std::vector<float> gotLse = cpu->download(lse);
    for (int b = 0; b < batch; ++b) {
      for (int h = 0; h < heads; ++h) {
        const int g = h / (heads / kvHeads);
        for (int i = 0; i < seq; ++i) {
          std::vector<double> w(i + 1);
          double z = 0;
          for (int j = 0; j <= i; ++j) {
            double s = 0;
            for (int d = 0; d < hd; ++d)
              s += q[((b * seq + i) * heads + h) * hd + d] *
                   k[((b * seq + j) * kvHeads + g) * hd + d];
            w[j] = std::exp(s * scale);
            z += w[j];
          }
          QVERIFY(std::fabs(gotLse[(b * heads + h) * seq + i] - std::log(z)) < 1e-5);
          for (int d = 0; d < hd; ++d) {
            double o = 0;
            for (int j = 0; j <= i; ++j)
              o += w[j] / z * v[((b * seq + j) * kvHeads + g) * hd + d];
            QVERIFY(std::fabs(got[((b * seq + i) * heads + h) * hd + d] - o) < 1e-5);
          }
        }
      }
    }
  }

  void attentionBackwardMatchesMatrixReference();
  void attentionBackwardMatchesFiniteDifferences();
  void attentionBackwardRejectsMismatchedShapes();
  void cachedAttentionMatchesTheMatrixReference();
};

void TestOpAttention::attentionBackwardMatchesMatrixReference() {
  auto be = createCpuBackend();
  for (const AttnCase& c :
       {AttnCase{}, AttnCase{1, 9, 3, 3, 4, 0.5f}, AttnCase{2, 5, 4, 1, 8, 0.3f},
        AttnCase{2, 9, 4, 2, 6, 0.4f, 3}, AttnCase{1, 150, 2, 1, 8, 0.4f, 70},
        AttnCase{1, 150, 2, 2, 8, 0.4f, 0, 2.0f}, AttnCase{2, 70, 4, 2, 4, 1.5f, 20, 1.5f},
        // Packed documents: one of a single token, starts inside and on 64-row tiles, a row of
        // one document; with a window and with soft-capping.
        withDocuments(AttnCase{2, 150, 4, 2, 8, 0.4f}, {{0, 37, 64, 65, 130}, {0}}),
        withDocuments(AttnCase{2, 150, 2, 1, 8, 0.4f, 20}, {{0, 5, 100}, {0, 63, 64, 149}}),
        withDocuments(AttnCase{1, 70, 4, 2, 4, 1.5f, 0, 1.5f}, {{0, 3, 4, 40}})}) {
    const std::size_t nq = static_cast<std::size_t>(c.b * c.s * c.h * c.d);
    const std::size_t nk = static_cast<std::size_t>(c.b * c.s * c.kv * c.d);
    const auto q = randomValues(nq, 1), k = randomValues(nk, 2), v = randomValues(nk, 3);
    const auto dout = randomValues(nq, 4);
    const Shape qs{c.b, c.s, c.h, c.d}, ks{c.b, c.s, c.kv, c.d};
    Tensor tq = be->upload(q, DType::F32, qs), tk = be->upload(k, DType::F32, ks),
           tv = be->upload(v, DType::F32, ks), tdo = be->upload(dout, DType::F32, qs);
    Tensor out = be->empty(DType::F32, qs), lse = be->empty(DType::F32, {c.b, c.h, c.s});
    be->attentionForward(tq, tk, tv, c.options(), out, lse);
    Tensor dq = be->empty(DType::F32, qs), dk = be->empty(DType::F32, ks),
           dv = be->empty(DType::F32, ks);
    be->attentionBackward(tdo, tq, tk, tv, out, lse, c.options(), dq, dk, dv);
    std::vector<double> rq, rk, rv, ro;
    referenceAttentionBackward(c, q, k, v, dout, rq, rk, rv, ro);
    QVERIFY(closeTo(be->download(out), ro, 2e-6));
    QVERIFY(closeTo(be->download(dq), rq, 2e-6));
    QVERIFY(closeTo(be->download(dk), rk, 2e-6));
    QVERIFY(closeTo(be->download(dv), rv, 2e-6));
  }
}

void TestOpAttention::attentionBackwardMatchesFiniteDifferences() {
  // L = Σ dout ⊙ attention(q, k, v); central differences over a few elements of q, k and v.
  auto be = createCpuBackend();
  // Plain causal, then a window of 3 with scores capped at 2, then two documents in the row.
  for (const AttnCase& c : {AttnCase{1, 5, 4, 2, 4, 0.5f}, AttnCase{1, 5, 4, 2, 4, 1.5f, 3, 2.0f},
                            withDocuments(AttnCase{1, 5, 4, 2, 4, 0.5f}, {{0, 2}})})
    checkFiniteDifferences(*be, c);
}

namespace {

// L = Σ dout ⊙ attention(q, k, v); central differences over a few elements of q, k and v.
void checkFiniteDifferences(Backend& backend, const AttnCase& c) {
  Backend* be = &backend;
  const Shape qs{c.b, c.s, c.h, c.d}, ks{c.b, c.s, c.kv, c.d};
  std::vector<float> in[3] = {randomValues(80, 5), randomValues(40, 6), randomValues(40, 7)};
  const auto dout = randomValues(80, 8);
  auto loss = [&]() {
    Tensor out = be->empty(DType::F32, qs), lse = be->empty(DType::F32, {c.b, c.h, c.s});
    be->attentionForward(be->upload(in[0], DType::F32, qs), be->upload(in[1], DType::F32, ks),
                         be->upload(in[2], DType::F32, ks), c.options(), out, lse);
    double l = 0;
    const auto o = be->download(out);
    for (std::size_t i = 0; i < o.size(); ++i)
      l += double{o[i]} * dout[i];
    return l;
  };
  Tensor tq = be->upload(in[0], DType::F32, qs), tk = be->upload(in[1], DType::F32, ks),
         tv = be->upload(in[2], DType::F32, ks);
  Tensor out = be->empty(DType::F32, qs), lse = be->empty(DType::F32, {c.b, c.h, c.s});
  be->attentionForward(tq, tk, tv, c.options(), out, lse);
  Tensor grads[3] = {be->empty(DType::F32, qs), be->empty(DType::F32, ks),
                     be->empty(DType::F32, ks)};
  be->attentionBackward(be->upload(dout, DType::F32, qs), tq, tk, tv, out, lse, c.options(),
                        grads[0], grads[1], grads[2]);
  const float eps = 1e-2f;
  for (int t = 0; t < 3; ++t) {
    const auto g = be->download(grads[t]);
    for (std::size_t i = 0; i < in[t].size(); i += 7) {
      const float saved = in[t][i];
      in[t][i] = saved + eps;
      const double up = loss();
      in[t][i] = saved - eps;
      const double down = loss();
      in[t][i] = saved;
      const double fd = (up - down) / (2 * eps);
      QVERIFY2(
          std::fabs(fd - g[i]) < 2e-3 * (1 + std::fabs(fd)),
          qPrintable(QString("tensor %1 element %2: %3 vs fd %4").arg(t).arg(i).arg(g[i]).arg(fd)));
    }
  }
}

}  // namespace

void TestOpAttention::attentionBackwardRejectsMismatchedShapes() {
  auto be = createCpuBackend();
  Tensor q = be->empty(DType::F32, {1, 4, 2, 2}), k = be->empty(DType::F32, {1, 4, 1, 2});
  Tensor out = be->empty(DType::F32, {1, 4, 2, 2}), lse = be->empty(DType::F32, {1, 2, 4});
  Tensor dq = be->empty(DType::F32, {1, 4, 2, 2}), badDk = be->empty(DType::F32, {1, 4, 2, 2});
  Tensor dv = be->empty(DType::F32, {1, 4, 1, 2});
  QVERIFY(throwsWith<ShapeError>(
      [&] { be->attentionBackward(out, q, k, k, out, lse, 1.0f, dq, badDk, dv); },
      {"attention_backward: dk"}));
  // Document starts: one per query, never past their token, never falling along a row.
  AttentionOptions documents(1.0f);
  const std::vector<std::int32_t> short3 = {0, 0, 0};
  const std::vector<std::int32_t> past = {0, 2, 2, 2};
  const std::vector<std::int32_t> falling = {0, 1, 0, 0};
  documents.documentStarts = short3;
  QVERIFY(throwsWith<ShapeError>([&] { be->attentionForward(q, k, k, documents, out, lse); },
                                 {"attention_forward: 3 document starts for batch 1 × seq 4"}));
  documents.documentStarts = past;
  QVERIFY(throwsWith<ShapeError>([&] { be->attentionForward(q, k, k, documents, out, lse); },
                                 {"document start 2 of token 1 in row 0"}));
  documents.documentStarts = falling;
  QVERIFY(throwsWith<ShapeError>(
      [&] { be->attentionBackward(out, q, k, k, out, lse, documents, dq, dv, dv); },
      {"attention_backward: document start 0 of token 2 in row 0"}));
}

// Generation's attention over a KV cache (Backend::attentionCached): the last `queries` rows of a
// batch-1 sequence over all its keys equal those rows of the causal reference, with the sliding
// window and the soft-cap of AttentionOptions applied as attentionForward applies them.
void TestOpAttention::cachedAttentionMatchesTheMatrixReference() {
  auto be = createCpuBackend();
  for (const auto& [c, queries] :
       {std::pair{AttnCase{1, 9, 4, 2, 6, 0.4f}, 1}, std::pair{AttnCase{1, 9, 4, 2, 6, 0.4f}, 9},
        std::pair{AttnCase{1, 12, 4, 2, 6, 0.4f, 3}, 1},
        std::pair{AttnCase{1, 12, 4, 2, 6, 0.4f, 3}, 5},
        std::pair{AttnCase{1, 12, 4, 1, 6, 1.5f, 0, 2.0f}, 2},
        std::pair{AttnCase{1, 12, 4, 2, 6, 1.5f, 5, 2.0f}, 12}}) {
    const std::size_t nq = static_cast<std::size_t>(c.s * c.h * c.d);
    const std::size_t nk = static_cast<std::size_t>(c.s * c.kv * c.d);
    const auto q = randomValues(nq, 1), k = randomValues(nk, 2), v = randomValues(nk, 3);
    std::vector<double> rq, rk, rv, ro;
    referenceAttentionBackward(c, q, k, v, randomValues(nq, 4), rq, rk, rv, ro);
    const std::size_t first = static_cast<std::size_t>((c.s - queries) * c.h * c.d);
    const std::vector<float> lastQ(q.begin() + static_cast<std::ptrdiff_t>(first), q.end());
    const Shape qs{queries, c.h, c.d}, ks{c.s, c.kv, c.d};
    Tensor out = be->empty(DType::F32, qs);
    be->attentionCached(be->upload(lastQ, DType::F32, qs), be->upload(k, DType::F32, ks),
                        be->upload(v, DType::F32, ks), c.options(), out);
    QVERIFY(closeTo(be->download(out),
                    std::vector<double>(ro.begin() + static_cast<std::ptrdiff_t>(first), ro.end()),
                    2e-6));
  }
}

QTEST_APPLESS_MAIN(TestOpAttention)
#include "test_op_attention.moc"

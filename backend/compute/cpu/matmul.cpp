// cpu/matmul.cpp — fp32 GEMM through OpenBLAS, with 16-bit weights widened on the fly.
//
// Note [widen per matmul, not at load]: frozen weights stay mmapped in their stored dtype. A 7B
// model is 14 GB in bf16 but 28 GB in fp32, so widening at load would double the resident memory
// of exactly the machines that fall back to the CPU. Instead each matmul widens its 16-bit operand
// in row blocks of at most kScratchFloats into one reused scratch buffer, and runs one sgemm per
// block. The widening is O(n·k) against the O(m·n·k) product, so for the token counts of training
// batches it costs a few percent; f32 weights are passed to sgemm straight from the mapping.
#include "compute/cpu/matmul.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <cblas.h>

#include "compute/Convert.h"  // defines: widenToFloat
#include "compute/Errors.h"
#include "compute/cpu/op_times.h"  // defines: OpTimer
#include "compute/cpu/parallel.h"  // defines: parallelFor, cpuThreadsHere, keepBlasSingleThreaded
#include "compute/cpu/skinny_gemm.h"  // defines: skinnySgemm

namespace lorascope::compute::cpu {
namespace {

constexpr std::int64_t kScratchFloats = std::int64_t{4} << 20;  // 16 MiB of fp32 per block
// m·n·k below which a GEMM stays on one thread (≈ 0.5 MFLOP: splitting costs more than it saves)
constexpr std::int64_t kMinSplitWork = std::int64_t{1} << 18;
constexpr std::int64_t kMinTile = 32;  // rows or columns of c per tile, at least

blasint toBlasInt(std::int64_t v) {
  if (v < 0 || v > std::numeric_limits<blasint>::max()) {
    throw ShapeError("matmul: dimension " + std::to_string(v) + " does not fit OpenBLAS' int");
  }
  return static_cast<blasint>(v);
}

// Every size fits blasint: sgemm checked the whole product's before splitting it.
void sgemmOneThread(const float* a, bool transposeA, std::int64_t lda, const float* b,
                    bool transposeB, std::int64_t ldb, float* c, std::int64_t ldc, std::int64_t m,
                    std::int64_t n, std::int64_t k, float alpha, float beta) {
  if (skinnySgemm(a, transposeA, lda, b, transposeB, ldb, c, ldc, m, n, k, alpha, beta)) {
    return;
  }
  keepBlasSingleThreaded();
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, static_cast<blasint>(m),
              static_cast<blasint>(n), static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda),
              b, static_cast<blasint>(ldb), beta, c, static_cast<blasint>(ldc));
}

// About `parts` tiles of an (m, n) c, as square as the shape allows: each tile packs its own
// panels of a and b, so square tiles pack the least. Splitting never cuts the reduction over k.
struct TileGrid {
  std::int64_t rowParts = 1;
  std::int64_t columnParts = 1;
  std::int64_t tileM = 0;
  std::int64_t tileN = 0;
  std::int64_t tiles() const { return rowParts * columnParts; }
};
TileGrid tileGrid(std::int64_t m, std::int64_t n, std::int64_t parts) {
  const double ratio = static_cast<double>(parts) * static_cast<double>(m) / static_cast<double>(n);
  std::int64_t rowParts = std::clamp<std::int64_t>(std::llround(std::sqrt(ratio)), 1, parts);
  rowParts = std::min(rowParts, std::max<std::int64_t>(1, m / kMinTile));
  const std::int64_t columnParts =
      std::min((parts + rowParts - 1) / rowParts, std::max<std::int64_t>(1, n / kMinTile));
  return {rowParts, columnParts, (m + rowParts - 1) / rowParts,
          (n + columnParts - 1) / columnParts};
}

// Tile `tile` of `grid` over term t: c[m0 : m0+tileM, n0 : n0+tileN] = the term's product there.
void sgemmTile(const GemmTerm& t, const TileGrid& grid, std::int64_t tile) {
  const auto [m, n, k] = t.dims;
  const std::int64_t m0 = tile / grid.columnParts * grid.tileM;
  const std::int64_t n0 = tile % grid.columnParts * grid.tileN;
  if (m0 >= m || n0 >= n) {
    return;
  }
  const float* aTile = t.transposeA ? t.a + m0 : t.a + m0 * t.lda;
  const float* bTile = t.transposeB ? t.b + n0 * t.ldb : t.b + n0;
  sgemmOneThread(aTile, t.transposeA, t.lda, bTile, t.transposeB, t.ldb, t.c + m0 * t.ldc + n0,
                 t.ldc, std::min(grid.tileM, m - m0), std::min(grid.tileN, n - n0), k, t.alpha,
                 t.beta);
}

void checkBlasSizes(const GemmTerm& t) {
  for (const std::int64_t size : {t.dims.m, t.dims.n, t.dims.k, t.lda, t.ldb, t.ldc}) {
    toBlasInt(size);
  }
}

}  // namespace

void sgemm(const float* a, bool transposeA, std::int64_t lda, const float* b, bool transposeB,
           std::int64_t ldb, float* c, std::int64_t ldc, MatmulDims dims, float alpha, float beta) {
  const GemmTerm term{a, transposeA, lda, b, transposeB, ldb, c, ldc, dims, alpha, beta};
  checkBlasSizes(term);
  const int threads = cpuThreadsHere();
  if (threads <= 1 || dims.m * dims.n * dims.k < kMinSplitWork) {
    sgemmOneThread(a, transposeA, lda, b, transposeB, ldb, c, ldc, dims.m, dims.n, dims.k, alpha,
                   beta);
    return;
  }
  const TileGrid grid = tileGrid(dims.m, dims.n, threads);
  parallelFor(grid.tiles(), [&](std::int64_t tile) { sgemmTile(term, grid, tile); });
}

void sgemmGroup(std::span<const GemmTerm> terms) {
  const OpTimer timer(CpuOp::Matmul);
  // The distinct outputs in order of first appearance, each with its terms.
  struct Output {
    float* c = nullptr;
    std::vector<const GemmTerm*> terms;
    std::int64_t work = 0;
    TileGrid grid;
    std::int64_t firstTile = 0;
  };
  std::vector<Output> outputs;
  std::int64_t totalWork = 0;
  for (const GemmTerm& t : terms) {
    checkBlasSizes(t);
    auto out =
        std::find_if(outputs.begin(), outputs.end(), [&](const Output& o) { return o.c == t.c; });
    if (out == outputs.end()) {
      out = outputs.insert(outputs.end(), Output{t.c, {}, 0, {}, 0});
    } else if (out->terms.front()->dims.m != t.dims.m || out->terms.front()->dims.n != t.dims.n) {
      throw ShapeError("matmul group: two products write one c with different shapes");
    }
    out->terms.push_back(&t);
    out->work += t.dims.m * t.dims.n * t.dims.k;
    totalWork += t.dims.m * t.dims.n * t.dims.k;
  }
  for (const GemmTerm& t : terms) {
    for (const Output& o : outputs) {
      if (t.a == o.c || t.b == o.c) {
        throw ShapeError("matmul group: a product reads the c another one writes");
      }
    }
  }
  const int threads = cpuThreadsHere();
  if (threads <= 1 || totalWork < kMinSplitWork) {
    for (const GemmTerm& t : terms) {
      sgemmOneThread(t.a, t.transposeA, t.lda, t.b, t.transposeB, t.ldb, t.c, t.ldc, t.dims.m,
                     t.dims.n, t.dims.k, t.alpha, t.beta);
    }
    return;
  }
  std::int64_t tiles = 0;
  for (Output& o : outputs) {
    const std::int64_t parts =
        o.work < kMinSplitWork
            ? 1
            : std::max<std::int64_t>(
                  1, std::llround(static_cast<double>(threads) * static_cast<double>(o.work) /
                                  static_cast<double>(totalWork)));
    o.grid = tileGrid(o.terms.front()->dims.m, o.terms.front()->dims.n, parts);
    o.firstTile = tiles;
    tiles += o.grid.tiles();
  }
  parallelFor(tiles, [&](std::int64_t tile) {
    const Output* o = &outputs.front();
    while (o != &outputs.back() && tile >= (o + 1)->firstTile) {
      ++o;
    }
    for (const GemmTerm* t : o->terms) {
      sgemmTile(*t, o->grid, tile - o->firstTile);
    }
  });
}

void matmul(const float* a, bool transposeA, const void* b, DType bDtype, bool transposeB, float* c,
            MatmulDims dims, float alpha, float beta, std::vector<float>& scratch) {
  const OpTimer timer(CpuOp::Matmul);
  const auto [m, n, k] = dims;
  if (m == 0 || n == 0) {
    return;
  }
  const std::int64_t lda = transposeA ? m : k;
  const std::int64_t ldb = transposeB ? k : n;
  const std::int64_t ldc = n;
  if (k == 0) {  // empty product: c = beta · c
    for (std::int64_t i = 0; i < m * n; ++i) {
      c[i] = beta == 0.0f ? 0.0f : beta * c[i];
    }
    return;
  }
  if (bDtype == DType::F32) {
    sgemm(a, transposeA, lda, static_cast<const float*>(b), transposeB, ldb, c, ldc, dims, alpha,
          beta);
    return;
  }
  // b is stored as rows of length `rowLength`: (n, k) when transposed, else (k, n).
  const std::int64_t rows = transposeB ? n : k;
  const std::int64_t rowLength = transposeB ? k : n;
  const std::int64_t blockRows = std::max<std::int64_t>(1, kScratchFloats / rowLength);
  scratch.resize(static_cast<std::size_t>(std::min(rows, blockRows) * rowLength));
  for (std::int64_t r0 = 0; r0 < rows; r0 += blockRows) {
    const std::int64_t count = std::min(blockRows, rows - r0);
    widenToFloat(b, bDtype, r0 * rowLength, count * rowLength, scratch.data());
    if (transposeB) {
      // Rows r0.. of b are columns r0.. of c: c[:, r0:r0+count] = op(a) · blockᵀ.
      sgemm(a, transposeA, lda, scratch.data(), true, ldb, c + r0, ldc, {m, count, k}, alpha, beta);
    } else {
      // Rows r0.. of b pair with columns r0.. of op(a): accumulate the partial product.
      const float* aBlock = transposeA ? a + r0 * m : a + r0;
      sgemm(aBlock, transposeA, lda, scratch.data(), false, ldb, c, ldc, {m, n, count}, alpha,
            r0 == 0 ? beta : 1.0f);
    }
  }
}

}  // namespace lorascope::compute::cpu

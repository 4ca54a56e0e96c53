//===- Avx512Gemm.cpp - gaccrt's own AVX-512 GEMM kernels -----------------===//
//
// Register-blocked f32 GEMM kernels for the shapes that micro-batching
// produces: a small micro-batch b on one side of every GEMM of a step (the
// b x N x K forward and backward-data GEMMs, and the N x K x b weight
// gradients that accumulate into a large C). oneDNN and OpenBLAS are tuned
// for large square-ish problems; inside a 3x512 MLP step at b = 32 both
// run at 80-155 GFLOP/s on a Zen 5 core, these kernels at 160-190
// (bench/README.md).
//
// The kernel computes a MR x (16 * NV) tile of C in MR * NV zmm registers:
// for each p of the inner size it loads NV vectors of row p of B and
// broadcasts MR elements of column p of op(A). op(A) may have any strides
// (the weight gradient's A^T is read in place); B must have unit column
// stride; its rows of an inner block are copied into 64-column panels
// (packPanels) unless few rows of C read a narrow B. A transposed B (the
// backward-data GEMM, x W^T) is either computed as C^T = op(B)^T op(A)^T into a
// scratch buffer and added to C in 16 x 16 blocks transposed in registers (few
// rows of C, transposedGemm), or packed transposed panel by panel (packedGemm).
// The order of the tiles follows the large operand's rows (see kernelGemm).
// With several GEMM threads a GEMM is split into slices of C, one per
// thread (parallelGemm, GemmThreads.cpp).
//
// Compiled for AVX-512F through function target attributes, so that gaccrt
// itself still runs on any x86-64; avx512Available() checks the CPU once.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define GACCRT_AVX512_KERNELS 1
#include <immintrin.h>
#else
#define GACCRT_AVX512_KERNELS 0
#endif

using namespace gaccrt;

#if GACCRT_AVX512_KERNELS

#define GACCRT_AVX512 __attribute__((target("avx512f,fma")))

namespace {

/// Rows of B (the inner size) per pass over C: C tiles are loaded and stored
/// once per pass.
constexpr int64_t kInnerBlock = 512;
/// Floats of B kept in L2 across the tiles of one inner block (512 KiB).
constexpr int64_t kL2Floats = 128 * 1024;

/// Cache lines a tile prefetches while it computes, one per inner step
/// while p < count, in row-major order: line q = first + p is
/// base + (q / linesPerRow) * stride + (q % linesPerRow) * 16 floats.
struct Prefetch {
  const float *base = nullptr;
  int64_t stride = 0, linesPerRow = 1, first = 0, count = 0;
};

/// The epilogue of a GEMM (gaccrt_sgemm_epilogue) as a slice of its C sees
/// it: rectangles of the slice at rows and columns offset by row0 and col0
/// in the whole C. Calls nothing without an epilogue.
struct SliceEpilogue {
  const Epilogue *epilogue = nullptr;
  int64_t row0 = 0, col0 = 0;
  void operator()(int64_t i0, int64_t i1, int64_t j0, int64_t j1) const {
    if (epilogue)
      epilogue->fn(epilogue->context, row0 + i0, row0 + i1, col0 + j0,
                   col0 + j1);
  }
};

/// Tile t's share, when `tiles` tiles share them evenly in row-major order,
/// of the prefetches of a block of `lines` lines from `base` (linesPerRow
/// lines per row, rows `stride` floats apart).
inline Prefetch shareOfBlock(const float *base, int64_t stride,
                             int64_t linesPerRow, int64_t lines, int64_t tiles,
                             int64_t t) {
  Prefetch prefetch;
  int64_t linesPerTile = (lines + tiles - 1) / tiles;
  if (t * linesPerTile < lines) {
    prefetch.base = base;
    prefetch.stride = stride;
    prefetch.linesPerRow = linesPerRow;
    prefetch.first = t * linesPerTile;
    prefetch.count = std::min(linesPerTile, lines - prefetch.first);
  }
  return prefetch;
}

/// A further pair of operands whose products a tile adds to the same sums,
/// after the first's (see pairedGemm): op(A2)[i, p] = a[i * rsA + p * csA]
/// and B2[p, j] = b[p * ldb + j] for p < k.
struct SecondGemm {
  int64_t k = 0;
  const float *a = nullptr;
  int64_t rsA = 0, csA = 0;
  const float *b = nullptr;
  int64_t ldb = 0;
};

/// The most further pairs of one paired pass (gaccrt_sgemm_quad: three).
constexpr int kMaxSeconds = 3;

/// One inner step of a tile: acc[r] += column[r * rowStride] * row (NV
/// vectors, the last masked by `lastMask`).
template <int MR, int NV>
GACCRT_AVX512 inline __attribute__((always_inline)) void
innerStep(__m512 (&acc)[MR][NV], const float *column, int64_t rowStride,
          const float *row, __mmask16 lastMask) {
  __m512 rowB[NV];
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v)
    rowB[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(lastMask, row + 16 * v)
                          : _mm512_loadu_ps(row + 16 * v);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r) {
    __m512 element = _mm512_set1_ps(column[r * rowStride]);
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = _mm512_fmadd_ps(element, rowB[v], acc[r][v]);
  }
}

/// C[0:MR, 0:16*NV] = alpha * op(A)[0:MR, 0:kc] * B[0:kc, 0:16*NV]
/// (+ C when `loadC`), where op(A)[i, p] = a[i * rsA + p * csA] and
/// B[p, j] = b[p * ldb + j]; the last vector of each row is masked by
/// `lastMask`. With `seconds` further pairs at `second`, their products are
/// summed after the first kc, in order (the sum of one GEMM over the inner
/// ranges one after the other).
template <int MR, int NV>
GACCRT_AVX512 inline __attribute__((always_inline)) void
tile(int64_t kc, const float *a, int64_t rsA, int64_t csA, const float *b,
     int64_t ldb, float *c, int64_t ldc, float alpha, bool loadC,
     __mmask16 lastMask, const Prefetch &prefetch, const SecondGemm *second,
     int seconds) {
  __m512 acc[MR][NV];
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v)
      acc[r][v] = _mm512_setzero_ps();
  // The prefetch walk: the next line is `column` floats into `row`.
  int64_t prefetches = std::min(prefetch.count, kc);
  const float *row = nullptr;
  int64_t column = 0, rowEnd = 16 * prefetch.linesPerRow;
  if (prefetches > 0) {
    row = prefetch.base +
          (prefetch.first / prefetch.linesPerRow) * prefetch.stride;
    column = (prefetch.first % prefetch.linesPerRow) * 16;
  }
  for (int64_t p = 0; p < kc; ++p) {
    if (p < prefetches) {
      _mm_prefetch(reinterpret_cast<const char *>(row + column), _MM_HINT_T0);
      column += 16;
      if (column == rowEnd) {
        column = 0;
        row += prefetch.stride;
      }
    }
    innerStep<MR, NV>(acc, a + p * csA, rsA, b + p * ldb, lastMask);
  }
  for (int g = 0; g < seconds; ++g)
    for (int64_t p = 0; p < second[g].k; ++p)
      innerStep<MR, NV>(acc, second[g].a + p * second[g].csA, second[g].rsA,
                        second[g].b + p * second[g].ldb, lastMask);
  __m512 scale = _mm512_set1_ps(alpha);
#pragma GCC unroll 16
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      float *out = c + r * ldc + 16 * v;
      __mmask16 mask = v == NV - 1 ? lastMask : __mmask16(0xffff);
      __m512 result = loadC ? _mm512_fmadd_ps(acc[r][v], scale,
                                              _mm512_maskz_loadu_ps(mask, out))
                            : _mm512_mul_ps(acc[r][v], scale);
      _mm512_mask_storeu_ps(out, mask, result);
    }
}

/// The most rows of a tile NV vectors wide: MR * NV accumulators, NV rows
/// of B and one broadcast in 32 zmm registers.
constexpr int maxRows(int nv) { return nv >= 4 ? 6 : nv == 3 ? 8 : 12; }

template <int NV>
GACCRT_AVX512 void
tileRows(int64_t rows, int64_t kc, const float *a, int64_t rsA, int64_t csA,
         const float *b, int64_t ldb, float *c, int64_t ldc, float alpha,
         bool loadC, __mmask16 lastMask, const Prefetch &prefetch,
         const SecondGemm *second, int seconds) {
#define GACCRT_TILE(MR)                                                        \
  case MR:                                                                     \
    if constexpr (MR <= maxRows(NV))                                           \
      tile<MR, NV>(kc, a, rsA, csA, b, ldb, c, ldc, alpha, loadC, lastMask,    \
                   prefetch, second, seconds);                                 \
    return;
  switch (rows) {
    GACCRT_TILE(1)
    GACCRT_TILE(2)
    GACCRT_TILE(3)
    GACCRT_TILE(4)
    GACCRT_TILE(5)
    GACCRT_TILE(6)
    GACCRT_TILE(7)
    GACCRT_TILE(8)
    GACCRT_TILE(9)
    GACCRT_TILE(10)
    GACCRT_TILE(11)
    GACCRT_TILE(12)
  default:
    return;
  }
#undef GACCRT_TILE
}

/// The tile of `rows` x `cols` (up to maxRows x 64) at `ct`, over kc inner
/// steps from `at` and `bt`.
GACCRT_AVX512 inline void
tileAt(int64_t rows, int64_t cols, int64_t kc, float alpha, const float *at,
       int64_t rsA, int64_t csA, const float *bt, int64_t ldb, bool loadC,
       float *ct, int64_t ldc, const Prefetch &prefetch,
       const SecondGemm *second = nullptr, int seconds = 0) {
  int nv = int((cols + 15) / 16);
  int64_t lastCols = cols - 16 * (nv - 1);
  __mmask16 lastMask =
      lastCols == 16 ? __mmask16(0xffff) : __mmask16((1u << lastCols) - 1);
  switch (nv) {
  case 1:
    tileRows<1>(rows, kc, at, rsA, csA, bt, ldb, ct, ldc, alpha, loadC,
                lastMask, prefetch, second, seconds);
    break;
  case 2:
    tileRows<2>(rows, kc, at, rsA, csA, bt, ldb, ct, ldc, alpha, loadC,
                lastMask, prefetch, second, seconds);
    break;
  case 3:
    tileRows<3>(rows, kc, at, rsA, csA, bt, ldb, ct, ldc, alpha, loadC,
                lastMask, prefetch, second, seconds);
    break;
  default:
    tileRows<4>(rows, kc, at, rsA, csA, bt, ldb, ct, ldc, alpha, loadC,
                lastMask, prefetch, second, seconds);
    break;
  }
}

/// The tiles of at most `most` rows that `rows` rows take.
constexpr int64_t tileCount(int64_t rows, int64_t most) {
  return (rows + most - 1) / most;
}

/// The first row of tile t when `tiles` tiles share `rows` rows evenly
/// (their sizes differ by at most one; t = tiles gives `rows`). Even tiles
/// rather than full ones and a remainder: 32 rows in six tiles of 5-6 rows
/// rather than five of 6 and one of 2, whose 8 accumulators wait for the 4
/// rows of B that each inner step loads from L2 (forward GEMMs at b = 32).
constexpr int64_t tileStart(int64_t rows, int64_t tiles, int64_t t) {
  return rows * t / tiles;
}

/// The rows of a band of C when the tiles go along its rows.
constexpr int64_t bandRows(int64_t n) {
  return n >= 64 ? maxRows(4) : maxRows(int((n + 15) / 16));
}

/// Whether the tiles of C = op(A) * B (m x n, inner size k) go along the
/// rows of C (see kernelGemm).
constexpr bool tilesAlongRows(int64_t m, int64_t k) {
  return m > std::min(k, kInnerBlock);
}

/// The inner block of a GEMM with n columns of C whose tiles go along the
/// rows of C: its rows of B stay in L2 across the bands.
constexpr int64_t rowsInnerBlock(int64_t n) {
  return std::clamp<int64_t>(kL2Floats / n, 16, kInnerBlock);
}

/// The prefetches of a tile of band `band` (of `bands` even bands of the m
/// rows of C) at column j0 when the tiles go along the rows of C: its
/// columns of the next band's rows of C, which the hardware prefetcher
/// fetches late (each row of a 512- or 1024-wide C is its own 2-4 KiB
/// stream; a 100-layer 512-wide m = 8 step got 17 % faster).
inline Prefetch bandPrefetch(int64_t m, int64_t n, float *c, int64_t ldc,
                             int64_t bands, int64_t band, int64_t j0) {
  Prefetch prefetch;
  if (band + 1 >= bands)
    return prefetch;
  int64_t next = tileStart(m, bands, band + 1);
  prefetch.base = c + next * ldc + j0;
  prefetch.stride = ldc;
  prefetch.linesPerRow = (std::min<int64_t>(64, n - j0) + 15) / 16;
  prefetch.count =
      (tileStart(m, bands, band + 2) - next) * prefetch.linesPerRow;
  return prefetch;
}

/// The calling thread's packed rows of B (packPanels).
thread_local std::vector<float> packedB;

/// Copies B[0:kc, 0:n] (row-major, ldb) to `to` as 64-column panels one
/// after the other (panel q's row p at (q * kc + p) * 64; a last panel
/// narrower than 64 columns keeps 64-float rows). A tile then reads its
/// kc x 64 panel in memory order: in place, the rows of a panel are ldb
/// floats apart, and at 4 KiB (a 1024-wide layer) every row of the panel
/// and every row of a row-major op(A) map to the same L1 set, so that a
/// tile reloads both from L2 in every inner step (a 512 x 1024 x 1024
/// forward GEMM ran at half the rate of its backward-data GEMM, which packs
/// W: bench/README.md).
GACCRT_AVX512 void packPanels(const float *b, int64_t ldb, int64_t n,
                              int64_t kc, float *to) {
  int64_t panels = (n + 63) / 64;
  for (int64_t p = 0; p < kc; ++p)
    for (int64_t q = 0; q < panels; ++q) {
      int64_t cols = std::min<int64_t>(64, n - 64 * q);
      for (int64_t j = 0; j < cols; j += 16) {
        __mmask16 mask = cols - j >= 16 ? __mmask16(0xffff)
                                        : __mmask16((1u << (cols - j)) - 1);
        _mm512_storeu_ps(to + (q * kc + p) * 64 + j,
                         _mm512_maskz_loadu_ps(mask, b + p * ldb + 64 * q + j));
      }
    }
}

/// packPanels into the calling thread's packedB.
GACCRT_AVX512 const float *packPanels(const float *b, int64_t ldb, int64_t n,
                                      int64_t kc) {
  packedB.resize(size_t((n + 63) / 64 * kc * 64));
  packPanels(b, ldb, n, kc, packedB.data());
  return packedB.data();
}

/// Whether the tiles of a GEMM with m rows of C whose tiles go down B's
/// panels read them from a packed copy: when the panel serves more than
/// one band of tiles of 32 rows, or its rows are 4 KiB or more apart (the
/// L1 set conflicts above); for 32 rows of a 512-wide layer, the copy cost
/// as much as it saved.
constexpr bool packsPanels(int64_t m, int64_t ldb) {
  return m > 32 || ldb >= 1024;
}

/// The calling thread's packed strips of op(A) (packStrips).
thread_local std::vector<float> packedA;

/// Whether the tiles of a GEMM whose tiles go along the rows of C read
/// op(A) from packed strips (packStrips): when op(A) is stored transposed
/// (a weight gradient's activations, rsA = 1) with rows a multiple of 4 KiB
/// apart, and each strip serves several tiles (more than one 64-column
/// panel of C). In place, a tile's inner steps then read one element from
/// each row of A, and all those lines map to one L1 set: every inner step
/// reloads its line from L2. Packed, a 1024x1024x512 weight gradient ran
/// 4-6 % faster on 1 and 2 threads; at 1-2 KiB apart (widths 256 and 512)
/// the copy cost more than it saved (5-16 % slower). The copy of an inner
/// block is at most 4 MiB (a taller op(A) is read in place).
constexpr bool packsStrips(int64_t rsA, int64_t csA, int64_t m, int64_t n,
                           int64_t kc) {
  return rsA == 1 && csA % 1024 == 0 && n > 64 && m * kc <= (int64_t(1) << 20);
}

/// Copies the strips of op(A)[0:m, k0:k0+kc] (op(A)[i, p] = a[i + p * csA],
/// A stored transposed) of `tiles` even tiles of rows (tileStart) into
/// packedA: tile t's rows i0..i1 at packedA[i0 * kc + p * (i1 - i0) + r],
/// read by a tile with rsA = 1, csA = i1 - i0 (the same elements in the
/// same order: the same sums). It reads the block's rows of A in order.
GACCRT_AVX512 const float *packStrips(const float *a, int64_t csA, int64_t m,
                                      int64_t k0, int64_t kc, int64_t tiles) {
  packedA.resize(size_t(m * kc));
  float *to = packedA.data();
  for (int64_t p = 0; p < kc; ++p) {
    const float *row = a + (k0 + p) * csA;
    for (int64_t t = 0; t < tiles; ++t) {
      int64_t i0 = tileStart(m, tiles, t),
              rows = tileStart(m, tiles, t + 1) - i0;
      __mmask16 mask = __mmask16((1u << rows) - 1);
      _mm512_mask_storeu_ps(to + i0 * kc + p * rows, mask,
                            _mm512_maskz_loadu_ps(mask, row + i0));
    }
  }
  return to;
}

/// C = alpha * op(A) * B + (C if `accumulate`), C row-major (ldc), B
/// row-major (ldb), op(A)[i, p] = a[i * rsA + p * csA]; `alongRows` is
/// tilesAlongRows(m, k) of the whole GEMM when this is a slice of it.
///
/// Memory order matters more than the arithmetic once an operand comes from
/// DRAM (a layer's weight or gradient accumulator does, between its uses
/// in a step): one core reads 22 GB/s in order but 8 GB/s in 256-byte
/// pieces 2-4 KiB apart. So when C has more rows than the inner size (a
/// weight gradient: C is the large operand), the tiles go along the rows
/// of C (each C row is read in order, the next band of rows prefetched)
/// and the inner block is sized to keep its rows of B in L2; otherwise
/// (forward, backward-data: B is the large operand) the tiles go down a
/// 64-column panel of B within an inner block of 512 rows while they
/// prefetch the next panel (the best of 64-512 rows; the prefetches made the
/// 4x1024 m = 8 step 4 % faster). Going along B's rows instead (all panels
/// of an inner block of 32-128 rows, the next block prefetched in memory
/// order) ran 7-12 % slower with hot caches: each tile then reloads its
/// C and pays its setup every 32-128 inner steps.
///
/// With `a2` and `c2` (tiles along panels only), the same GEMM for a second
/// op(A) (same strides) into a second C: each panel of B serves the tiles
/// of both, one pass over B for two micro-batches (gaccrt_sgemm_rows_pair);
/// every element is summed as in its own call.
GACCRT_AVX512 void kernelGemm(int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t rsA, int64_t csA,
                              const float *b, int64_t ldb, bool accumulate,
                              float *c, int64_t ldc, bool alongRows,
                              const float *a2 = nullptr, float *c2 = nullptr,
                              const SliceEpilogue &done = SliceEpilogue()) {
  int64_t block = alongRows ? rowsInnerBlock(n) : kInnerBlock;
  // Along rows: even bands of up to 6 rows of C (the widest tile's; a
  // narrower tile takes more rows, so one tile spans a band), each swept
  // left to right in tiles of up to 64 columns.
  int64_t bands = tileCount(m, bandRows(n));
  for (int64_t k0 = 0; k0 < k; k0 += block) {
    int64_t kc = std::min(block, k - k0);
    bool loadC = accumulate || k0 > 0;
    bool last = k0 + kc == k;
    if (alongRows) {
      // Every band reads all of the block's rows of B: packed once.
      const float *packed = packPanels(b + k0 * ldb, ldb, n, kc);
      const float *strips = packsStrips(rsA, csA, m, n, kc)
                                ? packStrips(a, csA, m, k0, kc, bands)
                                : nullptr;
      for (int64_t band = 0; band < bands; ++band) {
        int64_t i0 = tileStart(m, bands, band);
        int64_t rows = tileStart(m, bands, band + 1) - i0;
        for (int64_t j0 = 0; j0 < n; j0 += 64) {
          int64_t cols = std::min<int64_t>(64, n - j0);
          tileAt(rows, cols, kc, alpha,
                 strips ? strips + i0 * kc : a + i0 * rsA + k0 * csA,
                 strips ? 1 : rsA, strips ? rows : csA, packed + j0 * kc, 64,
                 loadC, c + i0 * ldc + j0, ldc,
                 bandPrefetch(m, n, c, ldc, bands, band, j0));
          if (last)
            done(i0, i0 + rows, j0, j0 + cols);
        }
      }
      continue;
    }
    for (int64_t j0 = 0; j0 < n; j0 += 64) {
      int nv = int((std::min<int64_t>(64, n - j0) + 15) / 16);
      // The tiles of a panel share the prefetches of the next panel's rows
      // of B, in row order, so that it does not come from DRAM in 256-byte
      // pieces when its first tile needs it (spreading them over all tiles
      // rather than the first 4 made 4x1024 b = 64 forward GEMMs 3-5 %
      // faster).
      int64_t nextJ = j0 + 64 < n ? j0 + 64 : 0;
      int64_t nextK = j0 + 64 < n ? k0 : k0 + kc;
      int64_t nextRows = std::min(block, k - nextK);
      int64_t nextLinesPerRow = (std::min<int64_t>(64, n - nextJ) + 15) / 16;
      int64_t lines = nextRows > 0 ? nextRows * nextLinesPerRow : 0;
      int64_t tiles = tileCount(m, maxRows(nv));
      int64_t halves = a2 ? 2 : 1;
      int64_t cols = std::min<int64_t>(64, n - j0);
      const float *panel = b + k0 * ldb + j0;
      int64_t ldPanel = ldb;
      if (packsPanels(halves * m, ldb)) {
        panel = packPanels(panel, ldb, cols, kc);
        ldPanel = 64;
      }
      for (int64_t half = 0; half < halves; ++half)
        for (int64_t t = 0; t < tiles; ++t) {
          int64_t i0 = tileStart(m, tiles, t), i1 = tileStart(m, tiles, t + 1);
          tileAt(i1 - i0, cols, kc, alpha,
                 (half ? a2 : a) + i0 * rsA + k0 * csA, rsA, csA, panel,
                 ldPanel, loadC, (half ? c2 : c) + i0 * ldc + j0, ldc,
                 shareOfBlock(b + nextK * ldb + nextJ, ldb, nextLinesPerRow,
                              lines, halves * tiles, half * tiles + t));
          if (last)
            done(i0, i1, j0, j0 + cols);
        }
    }
  }
}

/// C = alpha * (op(A) * B + op(A2) * B2 + ...) + (C if `accumulate`) for
/// the `seconds` further operand pairs at `second`: kernelGemm of one GEMM
/// whose inner range is the pairs' one after the other (op(A) and op(A2)
/// side by side, B over B2, ...), without copying them together. Each tile sums
/// the k + k2 products in registers and reads and writes its part of C once: a
/// weight gradient of two micro-batches in one pass, with half the loads,
/// stores and setup per multiply-add of a tile of C at a small inner size (b =
/// 32: 32 inner steps per tile). All inner sizes together are at most
/// rowsInnerBlock(n) (one inner block), so the result has the bits of that
/// GEMM on the kernels.
GACCRT_AVX512 void pairedGemm(int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t rsA, int64_t csA,
                              const float *b, int64_t ldb, bool accumulate,
                              const SecondGemm *second, int seconds, float *c,
                              int64_t ldc) {
  // Every band reads all rows of every B: each packed once, one after the
  // other (packPanels).
  int64_t panelFloats = (n + 63) / 64 * 64, inner = k;
  for (int g = 0; g < seconds; ++g)
    inner += second[g].k;
  packedB.resize(size_t(panelFloats * inner));
  const float *packed[kMaxSeconds + 1];
  float *to = packedB.data();
  for (int g = 0; g <= seconds; ++g) {
    int64_t kg = g ? second[g - 1].k : k;
    packPanels(g ? second[g - 1].b : b, g ? second[g - 1].ldb : ldb, n, kg, to);
    packed[g] = to;
    to += panelFloats * kg;
  }
  int64_t bands = tileCount(m, bandRows(n));
  for (int64_t band = 0; band < bands; ++band) {
    int64_t i0 = tileStart(m, bands, band);
    int64_t rows = tileStart(m, bands, band + 1) - i0;
    for (int64_t j0 = 0; j0 < n; j0 += 64) {
      SecondGemm at[kMaxSeconds];
      for (int g = 0; g < seconds; ++g) {
        at[g] = second[g];
        at[g].a += i0 * at[g].rsA;
        at[g].b = packed[g + 1] + j0 * at[g].k;
        at[g].ldb = 64;
      }
      tileAt(rows, std::min<int64_t>(64, n - j0), k, alpha, a + i0 * rsA, rsA,
             csA, packed[0] + j0 * k, 64, accumulate, c + i0 * ldc + j0, ldc,
             bandPrefetch(m, n, c, ldc, bands, band, j0), at, seconds);
    }
  }
}

GACCRT_AVX512 void packedGemm(int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t rsA, int64_t csA,
                              const float *w, int64_t ldw, bool accumulate,
                              float *c, int64_t ldc, const SliceEpilogue &done);

/// How a GEMM's tiles go (see kernelGemm, packedGemm and transposedGemm).
enum class Order { Rows, PairedRows, Panels, PackedPanels, Transposed };

GACCRT_AVX512 void transposedGemm(int64_t m, int64_t n, int64_t k, float alpha,
                                  const float *a, int64_t rsA, int64_t csA,
                                  const float *w, int64_t ldw, bool accumulate,
                                  float *c, int64_t ldc, bool alongRows,
                                  const float *a2 = nullptr,
                                  float *c2 = nullptr,
                                  const SliceEpilogue &done = SliceEpilogue());

/// A GEMM split into slices of C for several threads: bands of rows when its
/// tiles go along the rows of C, else 64-column panels (for a transposed B,
/// 64 rows of W).
struct Slices {
  int64_t m, n, k;
  float alpha;
  const float *a;
  int64_t rsA, csA;
  /// B (row-major, ldb) or, for PackedPanels and Transposed, W = B^T
  /// (row-major, ldb).
  const float *b;
  int64_t ldb;
  bool accumulate;
  float *c;
  int64_t ldc;
  Order order;
  /// The further GEMMs of PairedRows.
  SecondGemm second[kMaxSeconds] = {};
  int seconds = 0;
  /// Panels and Transposed: a second op(A) (same sizes and strides) and C
  /// (same ldc) sharing B (gaccrt_sgemm_rows_pair); null for one GEMM.
  const float *a2 = nullptr;
  float *c2 = nullptr;
  /// The epilogue of gaccrt_sgemm_epilogue (one GEMM, not PairedRows or a
  /// second op(A)), or null.
  const Epilogue *epilogue = nullptr;
  /// Set by parallelGemm: the slices of C (units of `unit` rows or
  /// columns) and how many parts share them.
  int64_t units = 0, unit = 0;
  int parts = 1;
};

GACCRT_AVX512 void runSlice(void *context, int part) {
  const Slices &s = *static_cast<const Slices *>(context);
  int64_t first = s.units * part / s.parts * s.unit;
  int64_t last = s.units * (part + 1) / s.parts * s.unit;
  switch (s.order) {
  case Order::Rows:
    last = std::min(last, s.m);
    if (first < last)
      kernelGemm(last - first, s.n, s.k, s.alpha, s.a + first * s.rsA, s.rsA,
                 s.csA, s.b, s.ldb, s.accumulate, s.c + first * s.ldc, s.ldc,
                 true, nullptr, nullptr, SliceEpilogue{s.epilogue, first, 0});
    return;
  case Order::PairedRows: {
    last = std::min(last, s.m);
    if (first >= last)
      return;
    SecondGemm second[kMaxSeconds];
    for (int g = 0; g < s.seconds; ++g) {
      second[g] = s.second[g];
      second[g].a += first * second[g].rsA;
    }
    pairedGemm(last - first, s.n, s.k, s.alpha, s.a + first * s.rsA, s.rsA,
               s.csA, s.b, s.ldb, s.accumulate, second, s.seconds,
               s.c + first * s.ldc, s.ldc);
    return;
  }
  case Order::Panels:
    last = std::min(last, s.n);
    if (first < last)
      kernelGemm(s.m, last - first, s.k, s.alpha, s.a, s.rsA, s.csA,
                 s.b + first, s.ldb, s.accumulate, s.c + first, s.ldc, false,
                 s.a2, s.c2 ? s.c2 + first : nullptr,
                 SliceEpilogue{s.epilogue, 0, first});
    return;
  case Order::PackedPanels:
    last = std::min(last, s.n);
    if (first < last)
      packedGemm(s.m, last - first, s.k, s.alpha, s.a, s.rsA, s.csA,
                 s.b + first * s.ldb, s.ldb, s.accumulate, s.c + first, s.ldc,
                 SliceEpilogue{s.epilogue, 0, first});
    return;
  case Order::Transposed:
    last = std::min(last, s.n);
    if (first < last)
      transposedGemm(s.m, last - first, s.k, s.alpha, s.a, s.rsA, s.csA,
                     s.b + first * s.ldb, s.ldb, s.accumulate, s.c + first,
                     s.ldc, tilesAlongRows(s.n, s.k), s.a2,
                     s.c2 ? s.c2 + first : nullptr,
                     SliceEpilogue{s.epilogue, 0, first});
    return;
  }
}

/// Multiply-adds per part at the least (about 5 us): a GEMM of fewer than
/// 2^20 runs on its caller alone, and one near that is not spread over
/// every core of a large machine.
constexpr int64_t kMinPartMacs = int64_t(1) << 19;

/// The parts (threads) of the calling thread's last GEMM on the kernels.
thread_local int lastParts = 0;

/// Runs the GEMM of `slices` (its sizes, operands and order set) on up to
/// `threads` threads, each computing a slice of C.
GACCRT_AVX512 void parallelGemm(Slices slices, int threads) {
  bool rows = slices.order == Order::Rows || slices.order == Order::PairedRows;
  slices.unit = rows ? bandRows(slices.n) : 64;
  slices.units = ((rows ? slices.m : slices.n) + slices.unit - 1) / slices.unit;
  int64_t inner = slices.k;
  for (int g = 0; g < slices.seconds; ++g)
    inner += slices.second[g].k;
  int64_t macs = slices.m * slices.n * inner * (slices.a2 ? 2 : 1);
  slices.parts = int(std::min<int64_t>(
      {threads, slices.units, std::max<int64_t>(1, macs / kMinPartMacs)}));
  if (slices.parts > 1 && runGemmParts(slices.parts, runSlice, &slices)) {
    lastParts = slices.parts;
    return;
  }
  lastParts = slices.parts = 1;
  runSlice(&slices, 0);
}

/// kernelGemm on up to `threads` threads.
GACCRT_AVX512 void parallelGemm(int64_t m, int64_t n, int64_t k, float alpha,
                                const float *a, int64_t rsA, int64_t csA,
                                const float *b, int64_t ldb, bool accumulate,
                                float *c, int64_t ldc, int threads,
                                const Epilogue *epilogue) {
  Order order = tilesAlongRows(m, k) ? Order::Rows : Order::Panels;
  Slices slices{m, n, k, alpha, a, rsA, csA, b, ldb, accumulate, c, ldc, order};
  slices.epilogue = epilogue;
  parallelGemm(slices, threads);
}

/// vpermt2ps indices of transpose16's stages: stage s swaps the off-diagonal
/// h x h blocks (h = 8, 4, 2, 1) of each 2h x 2h block; lane l of kLow takes
/// row i's element l when (l / h) is even and row (i + h)'s element l - h
/// otherwise (16 + index: the second source), kHigh the other halves.
alignas(64) constexpr int32_t kLow[4][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
    {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
    {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
    {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30}};
alignas(64) constexpr int32_t kHigh[4][16] = {
    {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31},
    {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31},
    {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31},
    {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}};

/// Transposes the 16 x 16 block r[0..15] (rows) in registers: 4 stages of 8
/// two-source permutes (vpermt2ps).
GACCRT_AVX512 inline __attribute__((always_inline)) void
transpose16(__m512 r[16]) {
#pragma GCC unroll 4
  for (int stage = 0; stage < 4; ++stage) {
    int h = 8 >> stage;
    __m512i low = _mm512_load_si512(kLow[stage]);
    __m512i high = _mm512_load_si512(kHigh[stage]);
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) {
      if ((i / h) % 2)
        continue;
      __m512 first = r[i], second = r[i + h];
      r[i] = _mm512_permutex2var_ps(first, low, second);
      r[i + h] = _mm512_permutex2var_ps(first, high, second);
    }
  }
}

/// C[i, j] = alpha * T[j, i] (+ beta * C[i, j] unless beta is 0) for C
/// m x n (ldc) and T n x m (row-major, ldt), in 16 x 16 blocks transposed
/// in registers.
GACCRT_AVX512 void addTransposed(const float *t, int64_t ldt, int64_t m,
                                 int64_t n, float alpha, float beta, float *c,
                                 int64_t ldc) {
  __m512 scale = _mm512_set1_ps(alpha), betas = _mm512_set1_ps(beta);
  for (int64_t i0 = 0; i0 < m; i0 += 16)
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
      if (i0 + 16 <= m && j0 + 16 <= n) {
        __m512 r[16];
        for (int q = 0; q < 16; ++q)
          r[q] = _mm512_loadu_ps(t + (j0 + q) * ldt + i0);
        transpose16(r);
        for (int q = 0; q < 16; ++q) {
          float *out = c + (i0 + q) * ldc + j0;
          __m512 value = _mm512_mul_ps(r[q], scale);
          if (beta != 0.0f)
            value = _mm512_fmadd_ps(betas, _mm512_loadu_ps(out), value);
          _mm512_storeu_ps(out, value);
        }
        continue;
      }
      for (int64_t i = i0; i < std::min(m, i0 + 16); ++i)
        for (int64_t j = j0; j < std::min(n, j0 + 16); ++j) {
          float value = alpha * t[j * ldt + i];
          float &out = c[i * ldc + j];
          out = beta == 0.0f ? value : value + beta * out;
        }
    }
}

/// Packs W[0:cols, 0:kc] (row-major, ldw; cols <= 64) transposed into
/// panel[p * 64 + j] = W[j, p], in 16 x 16 blocks transposed in registers
/// (columns of the panel from cols to the next multiple of 16 get zeros).
GACCRT_AVX512 void packTransposed(const float *w, int64_t ldw, int64_t cols,
                                  int64_t kc, float *panel) {
  for (int64_t p0 = 0; p0 < kc; p0 += 16) {
    int64_t steps = std::min<int64_t>(16, kc - p0);
    __mmask16 mask =
        steps == 16 ? __mmask16(0xffff) : __mmask16((1u << steps) - 1);
    for (int64_t j0 = 0; j0 < cols; j0 += 16) {
      __m512 r[16];
      for (int q = 0; q < 16; ++q)
        r[q] = j0 + q < cols
                   ? _mm512_maskz_loadu_ps(mask, w + (j0 + q) * ldw + p0)
                   : _mm512_setzero_ps();
      transpose16(r);
      for (int64_t q = 0; q < steps; ++q)
        _mm512_storeu_ps(panel + (p0 + q) * 64 + j0, r[q]);
    }
  }
}

/// The packed panel of the calling thread (kInnerBlock x 64 floats).
thread_local std::vector<float> packedPanel;

/// C = alpha * op(A) * W^T + (C if `accumulate`) for W n x k (row-major,
/// ldw), the transposed B of a backward-data GEMM (x W^T): for each
/// 64-column panel of C and inner block, the panel's 64 rows of W are
/// packed transposed (W is read in memory order, 64 rows at a time) and
/// every tile of the panel reads them from the packed copy; the next
/// block's rows of W are prefetched meanwhile.
GACCRT_AVX512 void packedGemm(int64_t m, int64_t n, int64_t k, float alpha,
                              const float *a, int64_t rsA, int64_t csA,
                              const float *w, int64_t ldw, bool accumulate,
                              float *c, int64_t ldc,
                              const SliceEpilogue &done) {
  packedPanel.resize(size_t(kInnerBlock * 64));
  float *panel = packedPanel.data();
  for (int64_t j0 = 0; j0 < n; j0 += 64) {
    int64_t cols = std::min<int64_t>(64, n - j0);
    int nv = int((cols + 15) / 16);
    int64_t tiles = tileCount(m, maxRows(nv));
    for (int64_t k0 = 0; k0 < k; k0 += kInnerBlock) {
      int64_t kc = std::min(kInnerBlock, k - k0);
      packTransposed(w + j0 * ldw + k0, ldw, cols, kc, panel);
      // The next block: the panel's next inner block, else the next panel.
      int64_t nextJ = k0 + kc < k ? j0 : j0 + 64;
      int64_t nextK = k0 + kc < k ? k0 + kc : 0;
      int64_t nextRows = nextJ < n ? std::min<int64_t>(64, n - nextJ) : 0;
      int64_t nextLinesPerRow = (std::min(kInnerBlock, k - nextK) + 15) / 16;
      int64_t lines = nextRows * nextLinesPerRow;
      for (int64_t t = 0; t < tiles; ++t) {
        int64_t i0 = tileStart(m, tiles, t), i1 = tileStart(m, tiles, t + 1);
        tileAt(i1 - i0, cols, kc, alpha, a + i0 * rsA + k0 * csA, rsA, csA,
               panel, 64, accumulate || k0 > 0, c + i0 * ldc + j0, ldc,
               shareOfBlock(w + nextJ * ldw + nextK, ldw, nextLinesPerRow,
                            lines, tiles, t));
        if (k0 + kc == k)
          done(i0, i1, j0, j0 + cols);
      }
    }
  }
}

/// Scratch space of the calling thread (the transposed route's operands).
thread_local std::vector<float> scratchT, scratchA;

/// Scratch kept for the next call up to this many floats (16 MiB); a larger
/// one is freed after its call.
constexpr size_t kKeptScratchFloats = size_t(4) << 20;

void releaseLargeScratch(std::vector<float> &scratch) {
  if (scratch.capacity() > kKeptScratchFloats)
    std::vector<float>().swap(scratch);
}

/// C = beta * C unless beta is 0 (C is never read) or 1.
void prescaleC(float beta, int64_t m, int64_t n, float *c, int64_t ldc) {
  if (beta != 0.0f && beta != 1.0f)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        c[i * ldc + j] *= beta;
}

/// Whether C = op(A) * W^T takes the transposed route (transposedGemm)
/// rather than packedGemm: for at most 64 rows of C and an inner size of 128
/// or more, where skipping the packing pays (64x1024x1024: 186 against 168
/// GFLOP/s, with hot caches on Zen 5; packed wins from 96 rows on, 177-197
/// against 117-148, and for a small inner size). Also on several threads:
/// on 2, x W^T of three 512- or 1024-wide layers in turn ran at 265-293
/// GFLOP/s against 251-256 packed (b = 32 and 64), and inside the 3x512
/// m = 8 step at 235-241 against 203-209.
bool transposedRoute(int64_t m, int64_t k) { return m <= 64 && k >= 128; }

/// The transposed route of C = alpha * op(A) * W^T + (C if `accumulate`)
/// for W n x k (row-major, ldw): T = W * op(A)^T (n x m, row-major, in
/// scratch) with W as the broadcast operand, read in memory order without
/// packing, and op(A)^T as the row-major one (in place when op(A) is
/// column-major, i.e. A stored transposed; else copied), then C += alpha *
/// T^T. Each slice of several threads (rows of W, columns of C) copies
/// op(A)^T for itself: one copy shared by the threads moved between their
/// cores' caches (20 us on 2 threads against 3 on one for 64x1024).
/// `alongRows` is tilesAlongRows of the whole T.
///
/// With `a2` and `c2`, the same for a second op(A) (same strides) into a
/// second C: op(A)^T and op(A2)^T side by side in the scratch, one pass
/// over W for both (gaccrt_sgemm_rows_pair); each element of T is summed as
/// in its own call.
GACCRT_AVX512 void transposedGemm(int64_t m, int64_t n, int64_t k, float alpha,
                                  const float *a, int64_t rsA, int64_t csA,
                                  const float *w, int64_t ldw, bool accumulate,
                                  float *c, int64_t ldc, bool alongRows,
                                  const float *a2, float *c2,
                                  const SliceEpilogue &done) {
  int64_t width = a2 ? 2 * m : m;
  const float *aT = a;
  int64_t ldaT = csA;
  if (rsA != 1 || a2) {
    scratchA.resize(size_t(k * width));
    for (int64_t half = 0; half < (a2 ? 2 : 1); ++half) {
      const float *from = half ? a2 : a;
      float *to = scratchA.data() + half * m;
      if (csA == 1)
        addTransposed(from, rsA, k, m, 1.0f, 0.0f, to, width);
      else
        for (int64_t i = 0; i < m; ++i)
          for (int64_t p = 0; p < k; ++p)
            to[p * width + i] = from[i * rsA + p * csA];
    }
    aT = scratchA.data();
    ldaT = width;
  }
  scratchT.resize(size_t(n * width));
  float *t = scratchT.data();
  kernelGemm(n, width, k, 1.0f, w, ldw, 1, aT, ldaT, /*accumulate=*/false, t,
             width, alongRows);
  addTransposed(t, width, m, n, alpha, accumulate ? 1.0f : 0.0f, c, ldc);
  done(0, m, 0, n);
  if (a2)
    addTransposed(t + m, width, m, n, alpha, accumulate ? 1.0f : 0.0f, c2, ldc);
  releaseLargeScratch(scratchT);
  releaseLargeScratch(scratchA);
}

} // namespace

bool gaccrt::avx512Available() {
  static const bool available = __builtin_cpu_supports("avx512f");
  return available;
}

int gaccrt::avx512LastThreads() { return lastParts; }

bool gaccrt::avx512Sgemm(const GemmArgs &args) {
  if (!avx512Available() || args.cColStride != 1 || args.m <= 0 ||
      args.n <= 0 || args.k <= 0)
    return false;
  int64_t m = args.m, n = args.n, k = args.k;
  float *c = args.c;
  int64_t ldc = args.cRowStride;
  if (args.bColStride != 1 && args.bRowStride != 1)
    return false;
  // The caller's epilogue, if this is its C: applied tile by tile.
  Epilogue epilogue;
  if (pendingEpilogue && pendingEpilogue.c == c && pendingEpilogue.m == m &&
      pendingEpilogue.n == n) {
    epilogue = pendingEpilogue;
    pendingEpilogue = Epilogue();
  }
  const Epilogue *done = epilogue ? &epilogue : nullptr;
  prescaleC(args.beta, m, n, c, ldc);
  if (args.bColStride == 1) {
    parallelGemm(m, n, k, args.alpha, args.a, args.aRowStride, args.aColStride,
                 args.b, args.bRowStride, args.beta != 0.0f, c, ldc,
                 args.threads, done);
    return true;
  }
  // op(B) is column-major, i.e. B stored row-major n x k (W of x W^T).
  Slices slices{m,
                n,
                k,
                args.alpha,
                args.a,
                args.aRowStride,
                args.aColStride,
                args.b,
                args.bColStride,
                args.beta != 0.0f,
                c,
                ldc,
                transposedRoute(m, k) ? Order::Transposed
                                      : Order::PackedPanels};
  slices.epilogue = done;
  parallelGemm(slices, args.threads);
  return true;
}

bool gaccrt::avx512SgemmPair(const GemmArgs *gemms, int count) {
  if (count < 2 || count > kMaxSeconds + 1)
    return false;
  const GemmArgs &first = gemms[0];
  int64_t m = first.m, n = first.n, inner = 0;
  auto fits = [&](const GemmArgs &g) {
    return g.m == m && g.n == n && g.k > 0 && g.c == first.c &&
           g.cRowStride == first.cRowStride && g.cColStride == 1 &&
           g.bColStride == 1 && g.alpha == first.alpha;
  };
  for (int i = 0; i < count; ++i) {
    if (!fits(gemms[i]) || (i > 0 && gemms[i].beta != 1.0f))
      return false;
    inner += gemms[i].k;
  }
  if (!avx512Available() || m <= 0 || n <= 0 || !tilesAlongRows(m, inner) ||
      inner > rowsInnerBlock(n))
    return false;
  float *c = first.c;
  int64_t ldc = first.cRowStride;
  prescaleC(first.beta, m, n, c, ldc);
  Slices slices{m,
                n,
                first.k,
                first.alpha,
                first.a,
                first.aRowStride,
                first.aColStride,
                first.b,
                first.bRowStride,
                first.beta != 0.0f,
                c,
                ldc,
                Order::PairedRows};
  for (int i = 1; i < count; ++i) {
    const GemmArgs &g = gemms[i];
    slices.second[i - 1] =
        SecondGemm{g.k, g.a, g.aRowStride, g.aColStride, g.b, g.bRowStride};
  }
  slices.seconds = count - 1;
  parallelGemm(slices, first.threads);
  return true;
}

bool gaccrt::avx512SgemmRowsPair(const GemmArgs &first, const float *a2,
                                 float *c2) {
  int64_t m = first.m, n = first.n, k = first.k;
  if (!avx512Available() || first.cColStride != 1 || m <= 0 || n <= 0 || k <= 0)
    return false;
  Slices slices{m,
                n,
                k,
                first.alpha,
                first.a,
                first.aRowStride,
                first.aColStride,
                first.b,
                0,
                first.beta != 0.0f,
                first.c,
                first.cRowStride,
                Order::Panels};
  slices.a2 = a2;
  slices.c2 = c2;
  if (first.bColStride == 1) {
    // The panels route of each GEMM alone (the tiles go down B's panels),
    // so that the elements are summed as in two avx512Sgemm calls.
    if (tilesAlongRows(m, k))
      return false;
    slices.ldb = first.bRowStride;
  } else if (first.bRowStride == 1 && transposedRoute(m, k) &&
             rowsInnerBlock(2 * m) == rowsInnerBlock(m)) {
    // x W^T: the transposed route of each GEMM alone, with op(A)^T and
    // op(A2)^T side by side (the same inner blocks as one T of m columns).
    slices.ldb = first.bColStride;
    slices.order = Order::Transposed;
  } else {
    return false;
  }
  prescaleC(first.beta, m, n, first.c, first.cRowStride);
  prescaleC(first.beta, m, n, c2, first.cRowStride);
  parallelGemm(slices, first.threads);
  return true;
}

#else // !GACCRT_AVX512_KERNELS

bool gaccrt::avx512Available() { return false; }

int gaccrt::avx512LastThreads() { return 0; }

bool gaccrt::avx512Sgemm(const GemmArgs &) { return false; }

bool gaccrt::avx512SgemmPair(const GemmArgs *, int) { return false; }

bool gaccrt::avx512SgemmRowsPair(const GemmArgs &, const float *, float *) {
  return false;
}

#endif

//===- GemmPairs.cpp - gaccrt_sgemm_pair, _quad and _rows_pair ------------===//
//
// The paired GEMM entry points of the CPU lowering: gaccrt_sgemm_pair and
// gaccrt_sgemm_quad accumulate two or four products into one C,
// gaccrt_sgemm_rows_pair multiplies two row blocks by one B. Operands that lie
// one after the other in memory run as one gaccrt_sgemm over all of them; else,
// when gaccrt's kernels would run every one of the GEMMs (runsOnKernels), as
// one pass of the kernels; else as separate gaccrt_sgemm calls, which give the
// same bits. Built on Blas.cpp and GemmTuning.cpp (BlasInternal.h).
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"

#include "BlasInternal.h"
#include "Gemm.h"
#include "GemmShapes.h"
#include "Internal.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

using namespace gaccrt;

namespace {

/// Whether the calling thread's last gaccrt_sgemm_pair took the paired pass.
thread_local bool lastPaired = false;

/// Whether `second` continues `first` in memory along dimension `dim`
/// (0: rows, 1: columns): the same size across it, the same strides, and
/// its first element where `first`'s next one along `dim` would be.
bool continues(const Matrix &first, const Matrix &second, int dim) {
  int64_t firstSize = dim == 0 ? first.size0 : first.size1;
  int64_t secondSize = dim == 0 ? second.size0 : second.size1;
  int64_t stride = dim == 0 ? first.stride0 : first.stride1;
  int64_t across = dim == 0 ? first.size1 : first.size0;
  if (!first.aligned || !second.aligned || firstSize <= 0 || secondSize <= 0 ||
      across <= 0 || stride <= 0 || first.stride0 != second.stride0 ||
      first.stride1 != second.stride1 ||
      across != (dim == 0 ? second.size1 : second.size0))
    return false;
  auto address = [](const Matrix &matrix) {
    return reinterpret_cast<uintptr_t>(matrix.aligned) +
           static_cast<uintptr_t>(matrix.offset) * sizeof(float);
  };
  return address(second) ==
         address(first) +
             static_cast<uintptr_t>(firstSize * stride) * sizeof(float);
}

/// Stacks `count` operands along `dim` into `stacked` when each continues
/// the one before: the operands of GEMM pairs whose buffers gacc-plan-arena
/// placed one after the other.
bool stackAll(const Matrix *operands, int count, int dim, Matrix &stacked) {
  stacked = operands[0];
  for (int i = 1; i < count; ++i) {
    if (!continues(operands[i - 1], operands[i], dim))
      return false;
    (dim == 0 ? stacked.size0 : stacked.size1) +=
        dim == 0 ? operands[i].size0 : operands[i].size1;
  }
  return true;
}

/// The inner sizes of `count` GEMMs as "k1+k2+...".
std::string innerSizes(const GemmSizes *sizes, int count) {
  std::string text;
  for (int i = 0; i < count; ++i)
    text += (i ? "+" : "") + std::to_string(sizes[i].k);
  return text;
}

/// The paired pass of gaccrt_sgemm_pair and gaccrt_sgemm_quad on the
/// kernels: C += alpha * sum of op(A[i]) * op(B[i]) (C scaled by beta
/// first) in one pass over C, when C is row-major, every operand usable in
/// place and every shape on the kernels; false (nothing written) otherwise.
/// Traces the pass as "sgemm <name> MxNxk1+k2...".
bool runPairedPass(const char *name, bool ta, bool tb, float alpha, float beta,
                   int count, const Matrix *a, const Matrix *b, const Matrix &c,
                   const GemmSizes *sizes) {
  int64_t m = sizes[0].m, n = sizes[0].n;
  if (m <= 0 || n <= 0 || !c.aligned || c.stride1 != 1 || c.stride0 < n ||
      std::max(m, n) > INT_MAX)
    return false;
  std::vector<Operand> as, bs;
  for (int i = 0; i < count; ++i) {
    if (sizes[i].k <= 0 || sizes[i].k > INT_MAX || !a[i].aligned ||
        !b[i].aligned)
      return false;
    as.push_back(describe(a[i].aligned + a[i].offset, a[i].size0, a[i].size1,
                          a[i].stride0, a[i].stride1, ta));
    bs.push_back(describe(b[i].aligned + b[i].offset, b[i].size0, b[i].size1,
                          b[i].stride0, b[i].stride1, tb));
    if (!as.back().copy.empty() || !bs.back().copy.empty())
      return false;
  }
  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;
  float *cData = c.aligned + c.offset;
  std::vector<GemmArgs> gemms;
  for (int i = 0; i < count; ++i) {
    float iBeta = i == 0 ? beta : 1.0f;
    if (!runsOnKernels(as[i], bs[i], m, n, sizes[i].k, iBeta, c.stride0))
      return false;
    gemms.push_back(gemmArgs(as[i], bs[i], m, n, sizes[i].k, alpha, iBeta,
                             cData, c.stride0));
  }
  if (!avx512SgemmPair(gemms.data(), count))
    return false;
  lastLibrary = "avx512";
  if (tracing) {
    double end = gaccrt_now_us();
    std::string shape = std::to_string(m) + "x" + std::to_string(n) + "x";
    std::string more;
    for (int i = 0; i < count; ++i) {
      shape += (i ? "+" : "") + std::to_string(sizes[i].k);
      if (i > 0)
        more += ", \"k" + std::to_string(i + 1) +
                "\": " + std::to_string(sizes[i].k);
    }
    traceComplete(std::string("sgemm ") + name + " " + shape, "accumulate",
                  start, end - start,
                  "{" + sizesArgs(m, n, sizes[0].k, more, ta, tb) +
                      ", \"library\": \"avx512\", \"paired\": 1" +
                      threadsArg() + "}");
  }
  return true;
}
} // namespace

int32_t gaccrt_internal_last_gemm_paired(void) { return lastPaired; }

void gaccrt_sgemm_pair(int32_t transA, int32_t transB, float alpha, float beta,
                       float *a1Alloc, float *a1Aligned, int64_t a1Offset,
                       int64_t a1Size0, int64_t a1Size1, int64_t a1Stride0,
                       int64_t a1Stride1, float *b1Alloc, float *b1Aligned,
                       int64_t b1Offset, int64_t b1Size0, int64_t b1Size1,
                       int64_t b1Stride0, int64_t b1Stride1, float *a2Alloc,
                       float *a2Aligned, int64_t a2Offset, int64_t a2Size0,
                       int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1,
                       float *b2Alloc, float *b2Aligned, int64_t b2Offset,
                       int64_t b2Size0, int64_t b2Size1, int64_t b2Stride0,
                       int64_t b2Stride1, float *cAlloc, float *cAligned,
                       int64_t cOffset, int64_t cSize0, int64_t cSize1,
                       int64_t cStride0, int64_t cStride1) {
  bool ta = transA != 0, tb = transB != 0;
  GemmSizes sizes[2];
  std::string mismatch = checkGemmShapes(ta, tb, a1Size0, a1Size1, b1Size0,
                                         b1Size1, cSize0, cSize1, sizes[0]);
  if (mismatch.empty())
    mismatch = checkGemmShapes(ta, tb, a2Size0, a2Size1, b2Size0, b2Size1,
                               cSize0, cSize1, sizes[1]);
  if (!mismatch.empty())
    fatal("gaccrt_sgemm_pair: " + mismatch);
  Matrix a[2] = {{a1Aligned, a1Offset, a1Size0, a1Size1, a1Stride0, a1Stride1},
                 {a2Aligned, a2Offset, a2Size0, a2Size1, a2Stride0, a2Stride1}};
  Matrix b[2] = {{b1Aligned, b1Offset, b1Size0, b1Size1, b1Stride0, b1Stride1},
                 {b2Aligned, b2Offset, b2Size0, b2Size1, b2Stride0, b2Stride1}};
  Matrix c{cAligned, cOffset, cSize0, cSize1, cStride0, cStride1};
  lastPaired = false;
  // Operands that lie one after the other are one GEMM over both inner
  // ranges (the library chosen for its shape).
  Matrix stackedA, stackedB;
  if (stackAll(a, 2, ta ? 0 : 1, stackedA) &&
      stackAll(b, 2, tb ? 1 : 0, stackedB)) {
    runSgemm("gaccrt_sgemm_pair", ta, tb, alpha, beta, stackedA, stackedB, c,
             "pair",
             shapeText(sizes[0].m, sizes[0].n) + "x" + innerSizes(sizes, 2),
             ", \"stacked\": 1");
    lastPaired = true;
    return;
  }
  if (runPairedPass("pair", ta, tb, alpha, beta, 2, a, b, c, sizes)) {
    lastPaired = true;
    return;
  }
  // Two calls: the paired pass has their bits wherever it runs.
  gaccrt_sgemm(transA, transB, alpha, beta, a1Alloc, a1Aligned, a1Offset,
               a1Size0, a1Size1, a1Stride0, a1Stride1, b1Alloc, b1Aligned,
               b1Offset, b1Size0, b1Size1, b1Stride0, b1Stride1, cAlloc,
               cAligned, cOffset, cSize0, cSize1, cStride0, cStride1);
  gaccrt_sgemm(transA, transB, alpha, 1.0f, a2Alloc, a2Aligned, a2Offset,
               a2Size0, a2Size1, a2Stride0, a2Stride1, b2Alloc, b2Aligned,
               b2Offset, b2Size0, b2Size1, b2Stride0, b2Stride1, cAlloc,
               cAligned, cOffset, cSize0, cSize1, cStride0, cStride1);
}

void gaccrt_sgemm_quad(
    int32_t transA, int32_t transB, float alpha, float beta, float *a1Alloc,
    float *a1Aligned, int64_t a1Offset, int64_t a1Size0, int64_t a1Size1,
    int64_t a1Stride0, int64_t a1Stride1, float *b1Alloc, float *b1Aligned,
    int64_t b1Offset, int64_t b1Size0, int64_t b1Size1, int64_t b1Stride0,
    int64_t b1Stride1, float *a2Alloc, float *a2Aligned, int64_t a2Offset,
    int64_t a2Size0, int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1,
    float *b2Alloc, float *b2Aligned, int64_t b2Offset, int64_t b2Size0,
    int64_t b2Size1, int64_t b2Stride0, int64_t b2Stride1, float *a3Alloc,
    float *a3Aligned, int64_t a3Offset, int64_t a3Size0, int64_t a3Size1,
    int64_t a3Stride0, int64_t a3Stride1, float *b3Alloc, float *b3Aligned,
    int64_t b3Offset, int64_t b3Size0, int64_t b3Size1, int64_t b3Stride0,
    int64_t b3Stride1, float *a4Alloc, float *a4Aligned, int64_t a4Offset,
    int64_t a4Size0, int64_t a4Size1, int64_t a4Stride0, int64_t a4Stride1,
    float *b4Alloc, float *b4Aligned, int64_t b4Offset, int64_t b4Size0,
    int64_t b4Size1, int64_t b4Stride0, int64_t b4Stride1, float *cAlloc,
    float *cAligned, int64_t cOffset, int64_t cSize0, int64_t cSize1,
    int64_t cStride0, int64_t cStride1) {
  bool ta = transA != 0, tb = transB != 0;
  Matrix a[4] = {{a1Aligned, a1Offset, a1Size0, a1Size1, a1Stride0, a1Stride1},
                 {a2Aligned, a2Offset, a2Size0, a2Size1, a2Stride0, a2Stride1},
                 {a3Aligned, a3Offset, a3Size0, a3Size1, a3Stride0, a3Stride1},
                 {a4Aligned, a4Offset, a4Size0, a4Size1, a4Stride0, a4Stride1}};
  Matrix b[4] = {{b1Aligned, b1Offset, b1Size0, b1Size1, b1Stride0, b1Stride1},
                 {b2Aligned, b2Offset, b2Size0, b2Size1, b2Stride0, b2Stride1},
                 {b3Aligned, b3Offset, b3Size0, b3Size1, b3Stride0, b3Stride1},
                 {b4Aligned, b4Offset, b4Size0, b4Size1, b4Stride0, b4Stride1}};
  Matrix c{cAligned, cOffset, cSize0, cSize1, cStride0, cStride1};
  GemmSizes sizes[4];
  for (int i = 0; i < 4; ++i) {
    std::string mismatch =
        checkGemmShapes(ta, tb, a[i].size0, a[i].size1, b[i].size0, b[i].size1,
                        cSize0, cSize1, sizes[i]);
    if (!mismatch.empty())
      fatal("gaccrt_sgemm_quad: " + mismatch);
  }
  lastPaired = false;
  Matrix stackedA, stackedB;
  if (stackAll(a, 4, ta ? 0 : 1, stackedA) &&
      stackAll(b, 4, tb ? 1 : 0, stackedB)) {
    runSgemm("gaccrt_sgemm_quad", ta, tb, alpha, beta, stackedA, stackedB, c,
             "quad",
             shapeText(sizes[0].m, sizes[0].n) + "x" + innerSizes(sizes, 4),
             ", \"stacked\": 1");
    lastPaired = true;
    return;
  }
  if (runPairedPass("quad", ta, tb, alpha, beta, 4, a, b, c, sizes)) {
    lastPaired = true;
    return;
  }
  // Otherwise the two pairs (each one pass where the kernels take it).
  gaccrt_sgemm_pair(transA, transB, alpha, beta, a1Alloc, a1Aligned, a1Offset,
                    a1Size0, a1Size1, a1Stride0, a1Stride1, b1Alloc, b1Aligned,
                    b1Offset, b1Size0, b1Size1, b1Stride0, b1Stride1, a2Alloc,
                    a2Aligned, a2Offset, a2Size0, a2Size1, a2Stride0, a2Stride1,
                    b2Alloc, b2Aligned, b2Offset, b2Size0, b2Size1, b2Stride0,
                    b2Stride1, cAlloc, cAligned, cOffset, cSize0, cSize1,
                    cStride0, cStride1);
  gaccrt_sgemm_pair(transA, transB, alpha, 1.0f, a3Alloc, a3Aligned, a3Offset,
                    a3Size0, a3Size1, a3Stride0, a3Stride1, b3Alloc, b3Aligned,
                    b3Offset, b3Size0, b3Size1, b3Stride0, b3Stride1, a4Alloc,
                    a4Aligned, a4Offset, a4Size0, a4Size1, a4Stride0, a4Stride1,
                    b4Alloc, b4Aligned, b4Offset, b4Size0, b4Size1, b4Stride0,
                    b4Stride1, cAlloc, cAligned, cOffset, cSize0, cSize1,
                    cStride0, cStride1);
  lastPaired = false;
}

void gaccrt_sgemm_rows_pair(
    int32_t transA, int32_t transB, float alpha, float beta, float *a1Alloc,
    float *a1Aligned, int64_t a1Offset, int64_t a1Size0, int64_t a1Size1,
    int64_t a1Stride0, int64_t a1Stride1, float *bAlloc, float *bAligned,
    int64_t bOffset, int64_t bSize0, int64_t bSize1, int64_t bStride0,
    int64_t bStride1, float *c1Alloc, float *c1Aligned, int64_t c1Offset,
    int64_t c1Size0, int64_t c1Size1, int64_t c1Stride0, int64_t c1Stride1,
    float *a2Alloc, float *a2Aligned, int64_t a2Offset, int64_t a2Size0,
    int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1, float *c2Alloc,
    float *c2Aligned, int64_t c2Offset, int64_t c2Size0, int64_t c2Size1,
    int64_t c2Stride0, int64_t c2Stride1) {
  bool ta = transA != 0, tb = transB != 0;
  GemmSizes first, second;
  std::string mismatch = checkGemmShapes(ta, tb, a1Size0, a1Size1, bSize0,
                                         bSize1, c1Size0, c1Size1, first);
  if (mismatch.empty())
    mismatch = checkGemmShapes(ta, tb, a2Size0, a2Size1, bSize0, bSize1,
                               c2Size0, c2Size1, second);
  if (!mismatch.empty())
    fatal("gaccrt_sgemm_rows_pair: " + mismatch);
  int64_t m = first.m, n = first.n, k = first.k;
  // Rows that lie one after the other, in A and in C, are one GEMM over
  // all of them (the library chosen for its shape).
  Matrix as[2] = {
      {a1Aligned, a1Offset, a1Size0, a1Size1, a1Stride0, a1Stride1},
      {a2Aligned, a2Offset, a2Size0, a2Size1, a2Stride0, a2Stride1}};
  Matrix cs[2] = {
      {c1Aligned, c1Offset, c1Size0, c1Size1, c1Stride0, c1Stride1},
      {c2Aligned, c2Offset, c2Size0, c2Size1, c2Stride0, c2Stride1}};
  Matrix stackedA, stackedC;
  if (stackAll(as, 2, ta ? 1 : 0, stackedA) && stackAll(cs, 2, 0, stackedC)) {
    runSgemm("gaccrt_sgemm_rows_pair", ta, tb, alpha, beta, stackedA,
             {bAligned, bOffset, bSize0, bSize1, bStride0, bStride1}, stackedC,
             "rows pair",
             std::to_string(m) + "+" + std::to_string(second.m) + "x" +
                 std::to_string(n) + "x" + std::to_string(k),
             ", \"stacked\": 1");
    lastPaired = true;
    return;
  }
  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;
  // One pass over op(B) for both: the same sizes and layouts, C row-major,
  // every operand usable in place, the shape on the kernels.
  bool fused = false;
  lastPaired = false;
  if (m > 1 && n > 1 && k > 0 && second.m == m && a1Aligned && a2Aligned &&
      bAligned && c1Aligned && c2Aligned && a1Stride0 == a2Stride0 &&
      a1Stride1 == a2Stride1 && c1Stride1 == 1 && c2Stride1 == 1 &&
      c1Stride0 == c2Stride0 && c1Stride0 >= n &&
      std::max({m, n, k}) <= INT_MAX) {
    Operand a1 = describe(a1Aligned + a1Offset, a1Size0, a1Size1, a1Stride0,
                          a1Stride1, ta);
    Operand a2 = describe(a2Aligned + a2Offset, a2Size0, a2Size1, a2Stride0,
                          a2Stride1, ta);
    Operand b =
        describe(bAligned + bOffset, bSize0, bSize1, bStride0, bStride1, tb);
    if (a1.copy.empty() && a2.copy.empty() && b.copy.empty() &&
        a1.transposed == a2.transposed && a1.ld == a2.ld &&
        runsOnKernels(a1, b, m, n, k, beta, c1Stride0) &&
        avx512SgemmRowsPair(gemmArgs(a1, b, m, n, k, alpha, beta,
                                     c1Aligned + c1Offset, c1Stride0),
                            a2.data, c2Aligned + c2Offset)) {
      fused = true;
      lastLibrary = "avx512";
    }
  }
  lastPaired = fused;
  if (!fused) {
    // Two calls: the fused pass has their bits wherever it runs.
    gaccrt_sgemm(transA, transB, alpha, beta, a1Alloc, a1Aligned, a1Offset,
                 a1Size0, a1Size1, a1Stride0, a1Stride1, bAlloc, bAligned,
                 bOffset, bSize0, bSize1, bStride0, bStride1, c1Alloc,
                 c1Aligned, c1Offset, c1Size0, c1Size1, c1Stride0, c1Stride1);
    gaccrt_sgemm(transA, transB, alpha, beta, a2Alloc, a2Aligned, a2Offset,
                 a2Size0, a2Size1, a2Stride0, a2Stride1, bAlloc, bAligned,
                 bOffset, bSize0, bSize1, bStride0, bStride1, c2Alloc,
                 c2Aligned, c2Offset, c2Size0, c2Size1, c2Stride0, c2Stride1);
    return;
  }
  if (tracing) {
    double end = gaccrt_now_us();
    std::string shape = std::to_string(m) + "+" + std::to_string(m) + "x" +
                        std::to_string(n) + "x" + std::to_string(k);
    traceComplete(
        "sgemm rows pair " + shape, beta != 0.0f ? "accumulate" : "gemm", start,
        end - start,
        "{" + sizesArgs(m, n, k, ", \"m2\": " + std::to_string(m), ta, tb) +
            ", \"library\": \"avx512\"" + threadsArg() + "}");
  }
}

//===- Blas.cpp - GEMM for compiled code through OpenBLAS -----------------===//
//
// gaccrt_sgemm: C = alpha * op(A) * op(B) + beta * C on 2-D f32 memrefs in
// MLIR's expanded descriptor form, by one cblas_sgemm call. Strided views are
// passed to BLAS in place when BLAS can describe them (a row stride with unit
// column stride, or the transposed, column-major layout); anything else goes
// through a contiguous copy. The compiled accumulation `acc += x^T g` is the
// beta = 1 case and is traced as "accumulate".
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"

#include "GemmShapes.h"
#include "Internal.h"

#include <cblas.h>

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

using namespace gaccrt;

namespace {

/// A GEMM operand as BLAS sees it: a row-major `rows` x `cols` matrix with
/// leading dimension `ld`, used transposed when `transposed`.
struct Operand {
  const float *data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t ld = 1;
  bool transposed = false;
  std::vector<float> copy; // owns `data` when the layout needed a copy
};

/// Describes the stored matrix X (rows x cols with the given strides) for
/// BLAS, copying it when its layout has no BLAS description.
Operand describe(const float *base, int64_t rows, int64_t cols, int64_t stride0,
                 int64_t stride1, bool transposed) {
  Operand operand;
  // A stride along a dimension of size <= 1 is never used: pick the one
  // that makes the layout describable.
  int64_t rowMajorStride0 = rows <= 1 ? std::max<int64_t>(cols, 1) : stride0;
  int64_t rowMajorStride1 = cols <= 1 ? 1 : stride1;
  int64_t colMajorStride0 = rows <= 1 ? 1 : stride0;
  int64_t colMajorStride1 = cols <= 1 ? std::max<int64_t>(rows, 1) : stride1;
  if (rowMajorStride1 == 1 && rowMajorStride0 >= std::max<int64_t>(cols, 1)) {
    operand.data = base;
    operand.rows = rows;
    operand.cols = cols;
    operand.ld = rowMajorStride0;
    operand.transposed = transposed;
    return operand;
  }
  if (colMajorStride0 == 1 && colMajorStride1 >= std::max<int64_t>(rows, 1)) {
    // Column-major X is row-major X^T.
    operand.data = base;
    operand.rows = cols;
    operand.cols = rows;
    operand.ld = colMajorStride1;
    operand.transposed = !transposed;
    return operand;
  }
  operand.copy.resize(static_cast<size_t>(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      operand.copy[i * cols + j] = base[i * stride0 + j * stride1];
  operand.data = operand.copy.data();
  operand.rows = rows;
  operand.cols = cols;
  operand.ld = std::max<int64_t>(cols, 1);
  operand.transposed = transposed;
  return operand;
}

CBLAS_TRANSPOSE toBlas(bool transposed) {
  return transposed ? CblasTrans : CblasNoTrans;
}

/// C = beta * C, where beta == 0 clears C (NaN included) as BLAS does.
void scale(float *c, int64_t rows, int64_t cols, int64_t stride0,
           int64_t stride1, float beta) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      float &element = c[i * stride0 + j * stride1];
      element = beta == 0.0f ? 0.0f : beta * element;
    }
}

} // namespace

void gaccrt_sgemm(int32_t transA, int32_t transB, float alpha, float beta,
                  float *aAlloc, float *aAligned, int64_t aOffset,
                  int64_t aSize0, int64_t aSize1, int64_t aStride0,
                  int64_t aStride1, float *bAlloc, float *bAligned,
                  int64_t bOffset, int64_t bSize0, int64_t bSize1,
                  int64_t bStride0, int64_t bStride1, float *cAlloc,
                  float *cAligned, int64_t cOffset, int64_t cSize0,
                  int64_t cSize1, int64_t cStride0, int64_t cStride1) {
  (void)aAlloc;
  (void)bAlloc;
  (void)cAlloc;
  bool ta = transA != 0, tb = transB != 0;
  GemmSizes sizes;
  std::string mismatch = checkGemmShapes(ta, tb, aSize0, aSize1, bSize0, bSize1,
                                         cSize0, cSize1, sizes);
  if (!mismatch.empty())
    fatal("gaccrt_sgemm: " + mismatch);
  int64_t m = sizes.m, n = sizes.n, k = sizes.k;
  if (std::max({m, n, k}) > INT_MAX)
    fatal("gaccrt_sgemm: sizes " + shapeText(m, n) + "x" + std::to_string(k) +
          " exceed the BLAS integer range");
  if (m == 0 || n == 0)
    return;
  if (!aAligned || !bAligned || !cAligned)
    fatal("gaccrt_sgemm: NULL data pointer for a non-empty operand");

  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;

  float *c = cAligned + cOffset;
  if (k == 0) {
    scale(c, m, n, cStride0, cStride1, beta);
  } else {
    Operand a =
        describe(aAligned + aOffset, aSize0, aSize1, aStride0, aStride1, ta);
    Operand b =
        describe(bAligned + bOffset, bSize0, bSize1, bStride0, bStride1, tb);
    int64_t cRowStride = m <= 1 ? std::max<int64_t>(n, 1) : cStride0;
    int64_t cColStride = n <= 1 ? 1 : cStride1;
    int64_t cColMajorRowStride = m <= 1 ? 1 : cStride0;
    int64_t cColMajorColStride = n <= 1 ? std::max<int64_t>(m, 1) : cStride1;
    if (cColStride == 1 && cRowStride >= n) {
      cblas_sgemm(CblasRowMajor, toBlas(a.transposed), toBlas(b.transposed),
                  int(m), int(n), int(k), alpha, a.data, int(a.ld), b.data,
                  int(b.ld), beta, c, int(cRowStride));
    } else if (cColMajorRowStride == 1 && cColMajorColStride >= m) {
      // Column-major C: compute C^T = op(B)^T * op(A)^T in row-major terms.
      cblas_sgemm(CblasRowMajor, toBlas(!b.transposed), toBlas(!a.transposed),
                  int(n), int(m), int(k), alpha, b.data, int(b.ld), a.data,
                  int(a.ld), beta, c, int(cColMajorColStride));
    } else {
      if ((m > 1 && cStride0 == 0) || (n > 1 && cStride1 == 0))
        fatal("gaccrt_sgemm: C (" + shapeText(m, n) + ", strides " +
              std::to_string(cStride0) + ", " + std::to_string(cStride1) +
              ") has overlapping elements");
      std::vector<float> temporary(static_cast<size_t>(m * n), 0.0f);
      if (beta != 0.0f)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            temporary[i * n + j] = c[i * cStride0 + j * cStride1];
      cblas_sgemm(CblasRowMajor, toBlas(a.transposed), toBlas(b.transposed),
                  int(m), int(n), int(k), alpha, a.data, int(a.ld), b.data,
                  int(b.ld), beta, temporary.data(), int(n));
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          c[i * cStride0 + j * cStride1] = temporary[i * n + j];
    }
  }

  if (tracing) {
    double end = gaccrt_now_us();
    traceComplete("sgemm " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                      std::to_string(k),
                  beta != 0.0f ? "accumulate" : "gemm", start, end - start,
                  "{\"m\": " + std::to_string(m) +
                      ", \"n\": " + std::to_string(n) +
                      ", \"k\": " + std::to_string(k) + "}");
  }
}

//===- Blas.cpp - GEMM for compiled code through oneDNN or OpenBLAS -------===//
//
// gaccrt_sgemm: C = alpha * op(A) * op(B) + beta * C on 2-D f32 memrefs in
// MLIR's expanded descriptor form, by one oneDNN matmul (OnednnGemm.cpp),
// gaccrt's AVX-512 kernels (Avx512Gemm.cpp) or one cblas_sgemm call. Strided
// views are passed in place when the library can describe them (a row stride
// with unit column stride, or the transposed, column-major layout); anything
// else goes through a contiguous copy. The compiled accumulation `acc += x^T g`
// is the beta = 1 case and is traced as "accumulate". The library is chosen by
// gaccrt_set_gemm_library or GACCRT_GEMM (default "auto" when oneDNN or the
// AVX-512 kernels can run: each GEMM shape is timed with every library in its
// first calls and keeps the fastest).
//
// This file is gaccrt_sgemm itself: operand layouts, copies and the trace
// event. The library setting is in GemmLibrary.cpp, the choice of library
// for each GEMM in GemmTuning.cpp, and the paired entry points in
// GemmPairs.cpp; BlasInternal.h declares what they share.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"

#include "BlasInternal.h"
#include "GemmShapes.h"
#include "Internal.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

using namespace gaccrt;

Operand gaccrt::describe(const float *base, int64_t rows, int64_t cols,
                         int64_t stride0, int64_t stride1, bool transposed) {
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

namespace {

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

std::string gaccrt::threadsArg() {
  int32_t threads = gaccrt_internal_last_gemm_threads();
  return threads > 1 ? ", \"threads\": " + std::to_string(threads) : "";
}

std::string gaccrt::sizesArgs(int64_t m, int64_t n, int64_t k,
                              const std::string &more, bool ta, bool tb) {
  return "\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) +
         ", \"k\": " + std::to_string(k) + more +
         ", \"trans_a\": " + (ta ? "1" : "0") +
         ", \"trans_b\": " + (tb ? "1" : "0");
}

thread_local Epilogue gaccrt::pendingEpilogue;

namespace {

/// One epilogue run after its GEMM, in bands of rows.
struct EpilogueRows {
  const Epilogue *epilogue;
  int64_t n;
};

void runEpilogueRows(void *context, int64_t lo, int64_t hi) {
  const EpilogueRows &rows = *static_cast<const EpilogueRows *>(context);
  rows.epilogue->fn(rows.epilogue->context, lo, hi, 0, rows.n);
}

} // namespace

void gaccrt::runEpilogueAfter(const Epilogue &epilogue, int64_t m, int64_t n) {
  EpilogueRows rows{&epilogue, n};
  // A few operations per element: a bias and an activation.
  gaccrt_parallel_for(runEpilogueRows, &rows, m, 4 * n);
}

void gaccrt::runPendingEpilogue(const float *c, int64_t m, int64_t n) {
  if (!pendingEpilogue || pendingEpilogue.c != c || pendingEpilogue.m != m ||
      pendingEpilogue.n != n)
    return;
  Epilogue epilogue = pendingEpilogue;
  pendingEpilogue = Epilogue();
  runEpilogueAfter(epilogue, m, n);
}

void gaccrt::runSgemm(const char *caller, bool ta, bool tb, float alpha,
                      float beta, const Matrix &am, const Matrix &bm,
                      const Matrix &cm, const char *name,
                      const std::string &traceShape,
                      const std::string &traceArgs, const Epilogue &epilogue) {
  lastLibrary = "none";
  GemmSizes sizes;
  std::string mismatch = checkGemmShapes(ta, tb, am.size0, am.size1, bm.size0,
                                         bm.size1, cm.size0, cm.size1, sizes);
  if (!mismatch.empty())
    fatal(std::string(caller) + ": " + mismatch);
  int64_t m = sizes.m, n = sizes.n, k = sizes.k;
  if (std::max({m, n, k}) > INT_MAX)
    fatal(std::string(caller) + ": sizes " + shapeText(m, n) + "x" +
          std::to_string(k) + " exceed the BLAS integer range");
  if (m == 0 || n == 0)
    return;
  if (!am.aligned || !bm.aligned || !cm.aligned)
    fatal(std::string(caller) + ": NULL data pointer for a non-empty operand");

  bool tracing = traceEnabled();
  double start = tracing ? gaccrt_now_us() : 0.0;

  int64_t cStride0 = cm.stride0, cStride1 = cm.stride1;
  float *c = cm.aligned + cm.offset;
  // Whether the epilogue is still to run (not taken by the kernels).
  bool epilogueLeft = bool(epilogue);
  if (k == 0) {
    scale(c, m, n, cStride0, cStride1, beta);
  } else {
    Operand a = describe(am.aligned + am.offset, am.size0, am.size1, am.stride0,
                         am.stride1, ta);
    Operand b = describe(bm.aligned + bm.offset, bm.size0, bm.size1, bm.stride0,
                         bm.stride1, tb);
    int64_t cRowStride = m <= 1 ? std::max<int64_t>(n, 1) : cStride0;
    int64_t cColStride = n <= 1 ? 1 : cStride1;
    int64_t cColMajorRowStride = m <= 1 ? 1 : cStride0;
    int64_t cColMajorColStride = n <= 1 ? std::max<int64_t>(m, 1) : cStride1;
    if (cColStride == 1 && cRowStride >= n) {
      if (epilogue) {
        pendingEpilogue = epilogue;
        pendingEpilogue.c = c;
        pendingEpilogue.m = m;
        pendingEpilogue.n = n;
      }
      rowMajorSgemm(a, b, m, n, k, alpha, beta, c, cRowStride);
      epilogueLeft = bool(pendingEpilogue);
      pendingEpilogue = Epilogue();
    } else if (cColMajorRowStride == 1 && cColMajorColStride >= m) {
      // Column-major C: compute C^T = op(B)^T * op(A)^T in row-major terms.
      Operand bT = {b.data, b.rows, b.cols, b.ld, !b.transposed, {}};
      Operand aT = {a.data, a.rows, a.cols, a.ld, !a.transposed, {}};
      rowMajorSgemm(bT, aT, n, m, k, alpha, beta, c, cColMajorColStride);
    } else {
      if ((m > 1 && cStride0 == 0) || (n > 1 && cStride1 == 0))
        fatal(std::string(caller) + ": C (" + shapeText(m, n) + ", strides " +
              std::to_string(cStride0) + ", " + std::to_string(cStride1) +
              ") has overlapping elements");
      std::vector<float> temporary(static_cast<size_t>(m * n), 0.0f);
      if (beta != 0.0f)
        for (int64_t i = 0; i < m; ++i)
          for (int64_t j = 0; j < n; ++j)
            temporary[i * n + j] = c[i * cStride0 + j * cStride1];
      rowMajorSgemm(a, b, m, n, k, alpha, beta, temporary.data(), n);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j)
          c[i * cStride0 + j * cStride1] = temporary[i * n + j];
    }
  }

  if (epilogueLeft)
    runEpilogueAfter(epilogue, m, n);

  if (tracing) {
    double end = gaccrt_now_us();
    std::string shape =
        std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
    std::string sizes = sizesArgs(m, n, k, "", ta, tb);
    std::string eventName =
        name ? std::string("sgemm ") + name + " " + traceShape
             : "sgemm " + shape;
    traceComplete(eventName, beta != 0.0f ? "accumulate" : "gemm", start,
                  end - start,
                  "{" + sizes + ", \"library\": \"" + lastLibrary + "\"" +
                      traceArgs + threadsArg() + "}");
    if (!pendingDecision.empty()) {
      traceComplete("gemm choice " + shape, "gemm-tuning", end, 0.0,
                    "{" + sizes + ", " + pendingDecision + "}");
      pendingDecision.clear();
    }
  }
}

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
  runSgemm("gaccrt_sgemm", transA != 0, transB != 0, alpha, beta,
           {aAligned, aOffset, aSize0, aSize1, aStride0, aStride1},
           {bAligned, bOffset, bSize0, bSize1, bStride0, bStride1},
           {cAligned, cOffset, cSize0, cSize1, cStride0, cStride1});
}

void gaccrt_sgemm_epilogue(
    int32_t transA, int32_t transB, float alpha, float beta, float *aAlloc,
    float *aAligned, int64_t aOffset, int64_t aSize0, int64_t aSize1,
    int64_t aStride0, int64_t aStride1, float *bAlloc, float *bAligned,
    int64_t bOffset, int64_t bSize0, int64_t bSize1, int64_t bStride0,
    int64_t bStride1, float *cAlloc, float *cAligned, int64_t cOffset,
    int64_t cSize0, int64_t cSize1, int64_t cStride0, int64_t cStride1,
    void (*epilogue)(void *, int64_t, int64_t, int64_t, int64_t),
    void *context) {
  (void)aAlloc;
  (void)bAlloc;
  (void)cAlloc;
  if (!epilogue)
    fatal("gaccrt_sgemm_epilogue: NULL epilogue");
  Epilogue work;
  work.fn = epilogue;
  work.context = context;
  runSgemm("gaccrt_sgemm_epilogue", transA != 0, transB != 0, alpha, beta,
           {aAligned, aOffset, aSize0, aSize1, aStride0, aStride1},
           {bAligned, bOffset, bSize0, bSize1, bStride0, bStride1},
           {cAligned, cOffset, cSize0, cSize1, cStride0, cStride1}, nullptr, "",
           ", \"epilogue\": true", work);
}

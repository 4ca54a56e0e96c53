//===- GemmShapes.h - shape checks shared by the GEMM entry points -------===//
//
// gaccrt_sgemm (OpenBLAS) and gaccrt_cuda_sgemm (cuBLAS) validate their
// memref descriptors the same way. Header-only: the two libraries export
// only C symbols, so the check is compiled into each.
//
//===----------------------------------------------------------------------===//

#ifndef GACCRT_LIB_GEMMSHAPES_H
#define GACCRT_LIB_GEMMSHAPES_H

#include <cstdint>
#include <string>

namespace gaccrt {

/// The sizes of C = op(A) * op(B).
struct GemmSizes {
  int64_t m = 0, n = 0, k = 0;
};

/// Formats a matrix shape as "RxC".
inline std::string shapeText(int64_t rows, int64_t cols) {
  return std::to_string(rows) + "x" + std::to_string(cols);
}

/// Computes the GEMM sizes from the stored shapes of A, B and C and the
/// transpose flags; returns an empty string, or the message that names all
/// three shapes when they do not agree (the caller prefixes its name).
inline std::string checkGemmShapes(bool ta, bool tb, int64_t aSize0,
                                   int64_t aSize1, int64_t bSize0,
                                   int64_t bSize1, int64_t cSize0,
                                   int64_t cSize1, GemmSizes &sizes) {
  int64_t m = ta ? aSize1 : aSize0;
  int64_t k = ta ? aSize0 : aSize1;
  int64_t kB = tb ? bSize1 : bSize0;
  int64_t n = tb ? bSize0 : bSize1;
  sizes = {m, n, k};
  auto describeOp = [](const char *name, int64_t size0, int64_t size1,
                       bool transposed) {
    std::string text = std::string(name) + " is " + shapeText(size0, size1);
    return transposed
               ? "op(" + std::string(name) + ") = " + name + "^T, " + text
               : text;
  };
  if (aSize0 < 0 || aSize1 < 0 || bSize0 < 0 || bSize1 < 0 || cSize0 < 0 ||
      cSize1 < 0 || k != kB || cSize0 != m || cSize1 != n)
    return "shapes do not agree for C = op(A) * op(B): " +
           describeOp("A", aSize0, aSize1, ta) + "; " +
           describeOp("B", bSize0, bSize1, tb) + "; C is " +
           shapeText(cSize0, cSize1) + " (expected " + shapeText(m, n) +
           " from op(A) " + shapeText(m, k) + " and op(B) " + shapeText(kB, n) +
           ")";
  return "";
}

} // namespace gaccrt

#endif // GACCRT_LIB_GEMMSHAPES_H

//===- CudaBlas.cpp - GEMM for compiled code through cuBLAS ---------------===//
//
// gaccrt_cuda_sgemm: gaccrt_sgemm's contract (row-major semantics on MLIR
// memref descriptors, both transposes, beta = 1 accumulation) on device
// memory, as one cublasSgemm on the compute stream. cuBLAS is column-major:
// a row-major matrix with leading dimension ld is, to cuBLAS, its transpose
// with the same ld, so row-major C = op(A) op(B) is computed as the
// column-major C^T = op(B)^T op(A)^T, and a column-major C directly. Views
// that neither layout describes are copied to a contiguous device buffer
// (stream-ordered, with cublasScopy) and C is copied back the same way.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt_cuda.h"

#include "CudaInternal.h"
#include "GemmShapes.h"

#include <algorithm>
#include <climits>
#include <string>

using namespace gaccrt;

namespace {

const char *const kCaller = "gaccrt_cuda_sgemm";

int toInt(int64_t value, const char *what) {
  if (value > INT_MAX || value < INT_MIN)
    cudaFatal(std::string(kCaller) + ": " + what + " " + std::to_string(value) +
              " exceeds cuBLAS's 32-bit range");
  return static_cast<int>(value);
}

/// A contiguous device buffer on the compute stream, freed in stream order.
struct Temporary {
  CUdeviceptr pointer = 0;
  CUstream stream = nullptr;
  Temporary() = default;
  Temporary(const Temporary &) = delete;
  Temporary &operator=(const Temporary &) = delete;
  ~Temporary() {
    if (pointer)
      checkCu(gCuda.cuMemFreeAsync(pointer, stream), "cuMemFreeAsync", kCaller);
  }
  float *allocate(int64_t elements, CUstream onStream) {
    stream = onStream;
    checkCu(
        gCuda.cuMemAllocAsync(
            &pointer,
            static_cast<size_t>(std::max<int64_t>(elements, 1)) * sizeof(float),
            stream),
        "cuMemAllocAsync", kCaller);
    return reinterpret_cast<float *>(pointer);
  }
};

/// Copies between a strided rows x cols view and a contiguous row-major
/// buffer, one cublasScopy per row or per column (whichever are fewer).
void copyView(cublasHandle_t blas, float *view, int64_t rows, int64_t cols,
              int64_t stride0, int64_t stride1, float *contiguous,
              bool toContiguous) {
  if (rows <= cols) {
    for (int64_t i = 0; i < rows; ++i) {
      float *strided = view + i * stride0;
      float *packed = contiguous + i * cols;
      checkBlas(toContiguous ? cublasScopy(blas, toInt(cols, "size"), strided,
                                           toInt(stride1, "stride"), packed, 1)
                             : cublasScopy(blas, toInt(cols, "size"), packed, 1,
                                           strided, toInt(stride1, "stride")),
                "cublasScopy", kCaller);
    }
  } else {
    for (int64_t j = 0; j < cols; ++j) {
      float *strided = view + j * stride1;
      float *packed = contiguous + j;
      checkBlas(toContiguous ? cublasScopy(blas, toInt(rows, "size"), strided,
                                           toInt(stride0, "stride"), packed,
                                           toInt(cols, "size"))
                             : cublasScopy(blas, toInt(rows, "size"), packed,
                                           toInt(cols, "size"), strided,
                                           toInt(stride0, "stride")),
                "cublasScopy", kCaller);
    }
  }
}

/// A GEMM operand as cuBLAS sees it, in row-major terms: a `rows` x `cols`
/// row-major matrix with leading dimension `ld`, used transposed when
/// `transposed`.
struct Operand {
  float *data = nullptr;
  int64_t ld = 1;
  bool transposed = false;
  Temporary copy;
};

/// Describes the stored matrix X (rows x cols with the given strides),
/// copying it when its layout has no BLAS description.
void describe(Operand &operand, const char *name, float *base, int64_t rows,
              int64_t cols, int64_t stride0, int64_t stride1, bool transposed,
              cublasHandle_t blas, CUstream stream) {
  // A stride along a dimension of size <= 1 is never used: pick the one
  // that makes the layout describable.
  int64_t rowMajorStride0 = rows <= 1 ? std::max<int64_t>(cols, 1) : stride0;
  int64_t rowMajorStride1 = cols <= 1 ? 1 : stride1;
  int64_t colMajorStride0 = rows <= 1 ? 1 : stride0;
  int64_t colMajorStride1 = cols <= 1 ? std::max<int64_t>(rows, 1) : stride1;
  if (rowMajorStride1 == 1 && rowMajorStride0 >= std::max<int64_t>(cols, 1)) {
    operand.data = base;
    operand.ld = rowMajorStride0;
    operand.transposed = transposed;
    return;
  }
  if (colMajorStride0 == 1 && colMajorStride1 >= std::max<int64_t>(rows, 1)) {
    // Column-major X is row-major X^T.
    operand.data = base;
    operand.ld = colMajorStride1;
    operand.transposed = !transposed;
    return;
  }
  if ((rows > 1 && stride0 <= 0) || (cols > 1 && stride1 <= 0))
    cudaFatal(std::string(kCaller) + ": " + name + " (" +
              shapeText(rows, cols) + ", strides " + std::to_string(stride0) +
              ", " + std::to_string(stride1) +
              ") has a zero or negative stride, which the CUDA backend does "
              "not support");
  operand.data = operand.copy.allocate(rows * cols, stream);
  copyView(blas, base, rows, cols, stride0, stride1, operand.data,
           /*toContiguous=*/true);
  operand.ld = std::max<int64_t>(cols, 1);
  operand.transposed = transposed;
}

cublasOperation_t toBlas(bool transposed) {
  return transposed ? CUBLAS_OP_T : CUBLAS_OP_N;
}

/// One column-major cublasSgemm. With k == 0 the operands are not read (C
/// becomes beta * C), but cuBLAS still checks their leading dimensions.
void gemm(cublasHandle_t blas, bool transposed1, bool transposed2, int64_t m,
          int64_t n, int64_t k, float alpha, const float *x1, int64_t ld1,
          const float *x2, int64_t ld2, float beta, float *c, int64_t ldc) {
  if (k == 0) {
    x1 = x2 = c;
    ld1 = transposed1 ? 1 : std::max<int64_t>(m, 1);
    ld2 = transposed2 ? std::max<int64_t>(n, 1) : 1;
  }
  checkBlas(cublasSgemm(blas, toBlas(transposed1), toBlas(transposed2),
                        toInt(m, "size"), toInt(n, "size"), toInt(k, "size"),
                        &alpha, x1, toInt(ld1, "leading dimension"), x2,
                        toInt(ld2, "leading dimension"), &beta, c,
                        toInt(ldc, "leading dimension")),
            "cublasSgemm", kCaller);
}

} // namespace

void gaccrt_cuda_sgemm(int32_t transA, int32_t transB, float alpha, float beta,
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
  gaccrt::GemmSizes sizes;
  std::string mismatch = gaccrt::checkGemmShapes(ta, tb, aSize0, aSize1, bSize0,
                                                 bSize1, cSize0, cSize1, sizes);
  if (!mismatch.empty())
    cudaFatal(std::string(kCaller) + ": " + mismatch);
  int64_t m = sizes.m, n = sizes.n, k = sizes.k;
  if (std::max({m, n, k}) > INT_MAX)
    cudaFatal(std::string(kCaller) + ": sizes " + shapeText(m, n) + "x" +
              std::to_string(k) + " exceed cuBLAS's 32-bit range");
  CudaState &state = requireCuda(kCaller);
  if (m == 0 || n == 0)
    return;
  if (!cAligned || (k > 0 && (!aAligned || !bAligned)))
    cudaFatal(std::string(kCaller) +
              ": NULL data pointer for a non-empty operand");

  cublasHandle_t blas = state.blas;
  CUstream stream = computeStream(kCaller);
  bool tracing = gaccrt_trace_enabled() != 0;
  CUevent start = nullptr;
  if (tracing) {
    start = acquireTimingEvent(kCaller);
    checkCu(gCuda.cuEventRecord(start, stream), "cuEventRecord", kCaller);
  }

  {
    Operand a, b;
    if (k > 0) {
      describe(a, "A", aAligned + aOffset, aSize0, aSize1, aStride0, aStride1,
               ta, blas, stream);
      describe(b, "B", bAligned + bOffset, bSize0, bSize1, bStride0, bStride1,
               tb, blas, stream);
    }
    float *c = cAligned + cOffset;
    int64_t cRowStride = m <= 1 ? std::max<int64_t>(n, 1) : cStride0;
    int64_t cColStride = n <= 1 ? 1 : cStride1;
    int64_t cColMajorRowStride = m <= 1 ? 1 : cStride0;
    int64_t cColMajorColStride = n <= 1 ? std::max<int64_t>(m, 1) : cStride1;
    if (cColStride == 1 && cRowStride >= n) {
      // Row-major C: cuBLAS computes the column-major C^T = op(B)^T op(A)^T.
      gemm(blas, b.transposed, a.transposed, n, m, k, alpha, b.data, b.ld,
           a.data, a.ld, beta, c, cRowStride);
    } else if (cColMajorRowStride == 1 && cColMajorColStride >= m) {
      // Column-major C is what cuBLAS computes natively.
      gemm(blas, !a.transposed, !b.transposed, m, n, k, alpha, a.data, a.ld,
           b.data, b.ld, beta, c, cColMajorColStride);
    } else {
      if ((m > 1 && cStride0 <= 0) || (n > 1 && cStride1 <= 0))
        cudaFatal(std::string(kCaller) + ": C (" + shapeText(m, n) +
                  ", strides " + std::to_string(cStride0) + ", " +
                  std::to_string(cStride1) +
                  ") has overlapping elements or a negative stride");
      Temporary temporary;
      float *packed = temporary.allocate(m * n, stream);
      if (beta != 0.0f)
        copyView(blas, c, m, n, cStride0, cStride1, packed,
                 /*toContiguous=*/true);
      gemm(blas, b.transposed, a.transposed, n, m, k, alpha, b.data, b.ld,
           a.data, a.ld, beta, packed, n);
      copyView(blas, c, m, n, cStride0, cStride1, packed,
               /*toContiguous=*/false);
    }
  }

  if (tracing) {
    CUevent end = acquireTimingEvent(kCaller);
    checkCu(gCuda.cuEventRecord(end, stream), "cuEventRecord", kCaller);
    addPendingTraceEvent(
        {"sgemm " + std::to_string(m) + "x" + std::to_string(n) + "x" +
             std::to_string(k),
         beta != 0.0f ? "accumulate" : "gemm",
         "{\"m\": " + std::to_string(m) + ", \"n\": " + std::to_string(n) +
             ", \"k\": " + std::to_string(k) + ", \"device\": \"cuda\"}",
         start, end},
        kCaller);
  }
}

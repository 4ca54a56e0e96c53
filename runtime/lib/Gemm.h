//===- Gemm.h - gaccrt_sgemm's libraries ----------------------------------===//
//
// gaccrt_sgemm runs a GEMM through oneDNN's matmul primitive, oneDNN's
// dnnl_sgemm, gaccrt's own AVX-512 kernels or OpenBLAS: under "auto", the
// default, each GEMM shape is timed on every library that can run it and
// keeps the fastest; "onednn" is a fixed shape rule between oneDNN and
// OpenBLAS on one thread and oneDNN's two GEMMs timed per shape on several;
// "onednn-sgemm", "avx512" and "openblas" run everything they can on that
// library. A library that has no kernel for the CPU or the layout declines
// and OpenBLAS runs the GEMM. GemmLibrary.cpp and GemmTuning.cpp own the
// choice (BlasInternal.h); OnednnGemm.cpp loads oneDNN and calls it;
// Avx512Gemm.cpp has the kernels.
//
//===----------------------------------------------------------------------===//

#ifndef GACCRT_LIB_GEMM_H
#define GACCRT_LIB_GEMM_H

#include <cstdint>
#include <string>

namespace gaccrt {

/// C = alpha * op(A) * op(B) + beta * C with op(A) m x k, op(B) k x n and C
/// m x n given by element strides (any may be 1 for a transposed view).
struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  const float *a = nullptr;
  int64_t aRowStride = 0, aColStride = 0;
  const float *b = nullptr;
  int64_t bRowStride = 0, bColStride = 0;
  float *c = nullptr;
  int64_t cRowStride = 0, cColStride = 0;
  /// The most threads the GEMM may use (gaccrt's kernels; the libraries
  /// have their own counts).
  int threads = 1;
};

/// The elementwise work a GEMM runs on the rectangles of its C once they
/// are final (gaccrt_sgemm_epilogue): fn(context, i0, i1, j0, j1) in the
/// indices of the caller's C.
struct Epilogue {
  void (*fn)(void *, int64_t, int64_t, int64_t, int64_t) = nullptr;
  void *context = nullptr;
  /// The caller's row-major C (its first element) and sizes: a kernel GEMM
  /// takes the epilogue only for this C, computed as it is stored.
  const float *c = nullptr;
  int64_t m = 0, n = 0;
  explicit operator bool() const { return fn != nullptr; }
};

/// The epilogue of the calling thread's gaccrt_sgemm_epilogue while its GEMM
/// runs; avx512Sgemm takes it (and clears it) when it computes that C in
/// place, else the caller runs it after the GEMM.
extern thread_local Epilogue pendingEpilogue;

/// Runs `epilogue` on all of an m x n C, in bands of rows on the GEMM
/// threads (a GEMM on a library other than the kernels).
void runEpilogueAfter(const Epilogue &epilogue, int64_t m, int64_t n);

/// Runs and clears the pending epilogue when it is this C's and the GEMM
/// left it (ran on a library other than the kernels).
void runPendingEpilogue(const float *c, int64_t m, int64_t n);

/// Runs `args` through oneDNN; false (nothing written) when oneDNN is not
/// available or has no brgemm kernel (AVX-512) for the layout.
bool onednnSgemm(const GemmArgs &args);

/// Whether gaccrt was built with oneDNN's header and libdnnl.so.2 loads
/// (loaded at the first call).
bool onednnAvailable();

/// Runs `args` through oneDNN's BLAS-like dnnl_sgemm (its packing GEMM, on
/// any CPU, on the GEMM thread count); false (nothing written) when oneDNN
/// is not available or C is not row-major.
bool onednnBlasSgemm(const GemmArgs &args);

/// Whether onednnBlasSgemm can run (oneDNN loads and has dnnl_sgemm).
bool onednnBlasAvailable();

/// Runs body(context, part) for every part in [0, parts) on oneDNN's OpenMP
/// threads (the caller one of them), as its GEMMs run; false, with nothing
/// run, when oneDNN or its OpenMP runtime (libgomp) is not loaded.
bool onednnParallel(int parts, void (*body)(void *, int), void *context);

/// Runs `args` through gaccrt's own register-blocked AVX-512 kernels
/// (Avx512Gemm.cpp); false (nothing written) when the CPU has no AVX-512F or
/// C or op(B) has no unit stride.
bool avx512Sgemm(const GemmArgs &args);

/// Runs `gemms[0]` and then the other `count` - 1 (2 to 4 in all; same C,
/// m, n, alpha and threads; beta 1 after the first) through gaccrt's
/// AVX-512 kernels in one pass over C, with the bits of one avx512Sgemm over
/// their operands stacked along the inner size; false (nothing written) when
/// the kernels cannot: no AVX-512F, a layout or shape other than a weight
/// gradient's (tiles along the rows of C, op(B) row-major, all inner sizes
/// together within one inner block).
bool avx512SgemmPair(const GemmArgs *gemms, int count);

/// Runs `first` and the same GEMM for op(A2) = `a2` (op(A)'s sizes and
/// strides) into `c2` (C's sizes and strides) through gaccrt's AVX-512
/// kernels in one pass over op(B), with the bits of the two avx512Sgemm
/// calls; false (nothing written) when the kernels cannot: no AVX-512F, or
/// a GEMM whose route is neither the panels of a row-major op(B) nor the
/// transposed route of x W^T.
bool avx512SgemmRowsPair(const GemmArgs &first, const float *a2, float *c2);

/// Whether the CPU runs gaccrt's AVX-512 kernels (AVX-512F).
bool avx512Available();
/// The threads that ran the calling thread's last avx512Sgemm (0 before
/// the first).
int avx512LastThreads();

/// Runs body(context, part) for every part in [0, parts) on as many threads
/// (GemmThreads.cpp), part 0 on the caller; false, with nothing run, when
/// another thread's GEMM is using the workers, or when the caller runs a
/// part of such a call itself.
bool runGemmParts(int parts, void (*body)(void *, int), void *context);
/// The thread count of the GEMM libraries: OpenBLAS's
/// (OPENBLAS_NUM_THREADS, then OMP_NUM_THREADS, then the core count).
int gemmThreads();
/// Whether every f32 GEMM of gaccrt_sgemm and gaccrt_sgemm_pair runs on
/// gaccrt's AVX-512 kernels (GACCRT_GEMM avx512, or auto on several
/// threads, on a CPU with AVX-512F): no GEMM library with threads of its
/// own takes part.
bool kernelsTakeEveryGemm();

/// The error message for an unknown GACCRT_GEMM, or "" when it is unset or
/// names a library this gaccrt has (gaccrt_init reports it).
std::string checkGemmLibraryEnv();

/// Whether the copies of gaccrt_parallel_copies always run in turn
/// (gaccrt_set_copies("lockstep"), GACCRT_COPIES=lockstep).
bool copiesInLockstep();

/// The error for an unknown GACCRT_COPIES, else "".
std::string checkCopiesEnv();

} // namespace gaccrt

#endif // GACCRT_LIB_GEMM_H

// GEMM libraries at the shapes of a micro-batched MLP step: OpenBLAS, BLIS,
// oneDNN's BLAS-like dnnl_sgemm, and gaccrt_sgemm as compiled steps call it
// (oneDNN's matmul primitive or OpenBLAS per GEMM; libgaccrt.so from the
// path in GACCRT_LIB), each loaded with dlopen, so none is a build
// dependency; single precision, row-major, for each layer's three GEMMs at
// micro-batch b:
//   forward   Y[b,n]  = X[b,k] W[k,n]
//   backward  dX[b,k] = dY[b,n] W[k,n]^T
//   weights   dW[k,n] += X[b,k]^T dY[b,n]      (K = b: the small one)
// Prints, per library and b, the median time of the three (microseconds)
// and GFLOP/s. Thread counts come from the environment
// (OPENBLAS_NUM_THREADS, BLIS_NUM_THREADS, OMP_NUM_THREADS for oneDNN).
//
//   gemm_libs WIDTH B1 [B2 ...]
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef void (*cblas_sgemm_fn)(int, int, int, int, int, int, float,
                               const float *, int, const float *, int, float,
                               float *, int);
typedef int (*dnnl_sgemm_fn)(char, char, int64_t, int64_t, int64_t, float,
                             const float *, int64_t, const float *, int64_t,
                             float, float *, int64_t);
typedef void (*gaccrt_sgemm_fn)(int32_t, int32_t, float, float, float *,
                                float *, int64_t, int64_t, int64_t, int64_t,
                                int64_t, float *, float *, int64_t, int64_t,
                                int64_t, int64_t, int64_t, float *, float *,
                                int64_t, int64_t, int64_t, int64_t, int64_t);

enum { RowMajor = 101, NoTrans = 111, Trans = 112 };

struct Lib {
  const char *name;
  const char *path;
  cblas_sgemm_fn cblas;
  dnnl_sgemm_fn dnnl;
  gaccrt_sgemm_fn gaccrt;
};

// C[M,N] = alpha op(A) op(B) + beta C, row-major.
static void gemm(const struct Lib *lib, int ta, int tb, int M, int N, int K,
                 const float *A, int lda, const float *B, int ldb, float beta,
                 float *C, int ldc) {
  if (lib->gaccrt)
    // Memref descriptors of the stored matrices (op(X) = X^T when transX).
    lib->gaccrt(ta, tb, 1.0f, beta, (float *)A, (float *)A, 0, ta ? K : M,
                ta ? M : K, lda, 1, (float *)B, (float *)B, 0, tb ? N : K,
                tb ? K : N, ldb, 1, C, C, 0, M, N, ldc, 1);
  else if (lib->cblas)
    lib->cblas(RowMajor, ta ? Trans : NoTrans, tb ? Trans : NoTrans, M, N, K,
               1.0f, A, lda, B, ldb, beta, C, ldc);
  else
    lib->dnnl(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb,
              beta, C, ldc);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s WIDTH B1 [B2 ...]\n", argv[0]);
    return 2;
  }
  int n = atoi(argv[1]);
  struct Lib libs[] = {
      {"OpenBLAS", "libopenblas.so.0", 0, 0, 0},
      {"BLIS", "/usr/lib/x86_64-linux-gnu/blis-pthread/libblas.so.3", 0, 0, 0},
      {"oneDNN", "libdnnl.so.2", 0, 0, 0},
      {"gaccrt", getenv("GACCRT_LIB") ? getenv("GACCRT_LIB") : "libgaccrt.so",
       0, 0, 0},
  };
  printf("| library | b | forward us | backward us | weights us | step "
         "GFLOP/s |\n|---|---|---|---|---|---|\n");
  for (unsigned l = 0; l < sizeof(libs) / sizeof(libs[0]); ++l) {
    struct Lib *lib = &libs[l];
    void *handle = dlopen(lib->path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      printf("| %s | not installed (%s) | | | | |\n", lib->name, lib->path);
      continue;
    }
    if (l == 2)
      lib->dnnl = (dnnl_sgemm_fn)dlsym(handle, "dnnl_sgemm");
    else if (l == 3)
      lib->gaccrt = (gaccrt_sgemm_fn)dlsym(handle, "gaccrt_sgemm");
    else
      lib->cblas = (cblas_sgemm_fn)dlsym(handle, "cblas_sgemm");
    if (!lib->cblas && !lib->dnnl && !lib->gaccrt) {
      printf("| %s | no sgemm symbol | | | | |\n", lib->name);
      continue;
    }
    for (int a = 2; a < argc; ++a) {
      int b = atoi(argv[a]);
      float *X = calloc((size_t)b * n, sizeof(float));
      float *W = calloc((size_t)n * n, sizeof(float));
      float *Y = calloc((size_t)b * n, sizeof(float));
      float *dW = calloc((size_t)n * n, sizeof(float));
      for (long i = 0; i < (long)b * n; ++i)
        X[i] = (float)((i * 7) % 13) / 13.0f;
      for (long i = 0; i < (long)n * n; ++i)
        W[i] = (float)((i * 5) % 11) / 11.0f;
      enum { Reps = 41 };
      double t[3][Reps];
      for (int r = 0; r < Reps + 3; ++r) {
        double t0 = now();
        gemm(lib, 0, 0, b, n, n, X, n, W, n, 0.0f, Y, n);
        double t1 = now();
        gemm(lib, 0, 1, b, n, n, Y, n, W, n, 0.0f, X, n);
        double t2 = now();
        gemm(lib, 1, 0, n, n, b, X, n, Y, n, 1.0f, dW, n);
        double t3 = now();
        if (r >= 3) {
          t[0][r - 3] = t1 - t0;
          t[1][r - 3] = t2 - t1;
          t[2][r - 3] = t3 - t2;
        }
      }
      double med[3], total = 0;
      for (int k = 0; k < 3; ++k) {
        qsort(t[k], Reps, sizeof(double), compare);
        med[k] = t[k][Reps / 2];
        total += med[k];
      }
      double flops = 3.0 * 2.0 * b * (double)n * n;
      printf("| %s | %d | %.1f | %.1f | %.1f | %.1f |\n", lib->name, b,
             med[0] * 1e6, med[1] * 1e6, med[2] * 1e6, flops / total * 1e-9);
      free(X);
      free(W);
      free(Y);
      free(dW);
    }
  }
  return 0;
}

//===- BlasInternal.h - what gaccrt_sgemm's files share ---------*- C++ -*-===//
//
// gaccrt_sgemm and its paired forms are split in layers, each file calling
// only those listed before it: GemmLibrary.cpp (the library setting, the GEMM
// thread count, which library ran last), GemmTuning.cpp (one row-major GEMM on
// the chosen library: the shape rule and the per-shape timing of "auto"),
// Blas.cpp (gaccrt_sgemm: layouts, copies, trace events) and GemmPairs.cpp
// (gaccrt_sgemm_pair, _quad and _rows_pair). This header declares what crosses
// those files; Gemm.h is their interface to the libraries themselves.
//
//===----------------------------------------------------------------------===//

#ifndef GACCRT_LIB_BLASINTERNAL_H
#define GACCRT_LIB_BLASINTERNAL_H

#include "Gemm.h"

#include <cstdint>
#include <string>
#include <vector>

namespace gaccrt {

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

//===----------------------------------------------------------------------===//
// GemmLibrary.cpp
//===----------------------------------------------------------------------===//

/// Auto: with one GEMM thread oneDNN's matmul, oneDNN's sgemm, the AVX-512
/// kernels or OpenBLAS per GEMM shape, timed in its first calls; with
/// several the kernels (else OpenBLAS). Onednn: with one GEMM thread the
/// fixed shape rule of prefersOnednn; with several every GEMM on oneDNN,
/// its matmul or its sgemm per shape as timed. OnednnSgemm: oneDNN's sgemm
/// for every GEMM. Avx512: gaccrt's kernels for every GEMM, on the GEMM
/// thread count. Openblas: OpenBLAS alone.
enum class Library { Unset, Auto, Onednn, OnednnSgemm, Avx512, Openblas };

/// The library setting: gaccrt_set_gemm_library's, else GACCRT_GEMM's (fatal
/// when it names no library this gaccrt has), else "auto".
Library library();

/// The library of the calling thread's last gaccrt_sgemm (its trace event
/// and gaccrt_internal_last_gemm_library).
extern thread_local const char *lastLibrary;

//===----------------------------------------------------------------------===//
// GemmTuning.cpp
//===----------------------------------------------------------------------===//

/// The GEMM in the element strides of GemmArgs (row-major C).
GemmArgs gemmArgs(const Operand &a, const Operand &b, int64_t m, int64_t n,
                  int64_t k, float alpha, float beta, float *c,
                  int64_t cRowStride);

/// One GEMM on row-major-describable operands through the chosen library
/// (see Library). `cColStride` is 1 (row-major C).
void rowMajorSgemm(const Operand &a, const Operand &b, int64_t m, int64_t n,
                   int64_t k, float alpha, float beta, float *c,
                   int64_t cRowStride);

/// Whether gaccrt_sgemm would run the GEMM (row-major C) on gaccrt's
/// AVX-512 kernels: always under "avx512" and under "auto" on several GEMM
/// threads; under "auto" on one thread when the shape's tuning has chosen
/// them. Never tunes: a pair of GEMMs whose shapes are still being timed
/// runs as two calls (gaccrt_sgemm_pair).
bool runsOnKernels(const Operand &a, const Operand &b, int64_t m, int64_t n,
                   int64_t k, float beta, int64_t cRowStride);

/// The trace arguments of a decision the current gaccrt_sgemm made (traced
/// there as a "gemm-tuning" event, under the caller's sizes); "" if none.
extern thread_local std::string pendingDecision;

//===----------------------------------------------------------------------===//
// Blas.cpp
//===----------------------------------------------------------------------===//

/// Describes the stored matrix X (rows x cols with the given strides) for
/// BLAS, copying it when its layout has no BLAS description.
Operand describe(const float *base, int64_t rows, int64_t cols, int64_t stride0,
                 int64_t stride1, bool transposed);

/// The trace argument ", \"threads\": N" of a GEMM gaccrt's kernels ran on
/// several threads, else "".
std::string threadsArg();

/// The trace arguments of a GEMM's sizes and transposes (`more`: further
/// sizes after k).
std::string sizesArgs(int64_t m, int64_t n, int64_t k, const std::string &more,
                      bool ta, bool tb);

/// A 2-D memref operand as the C ABI passes it (without its allocated
/// pointer).
struct Matrix {
  float *aligned;
  int64_t offset, size0, size1, stride0, stride1;
};

/// gaccrt_sgemm on `a`, `b` and `c`; its trace event is named "sgemm
/// <name> <shape>" (with `traceArgs` among its arguments) when `name` is not
/// null, "sgemm <shape>" otherwise. `caller` names the entry point in
/// errors.
void runSgemm(const char *caller, bool ta, bool tb, float alpha, float beta,
              const Matrix &am, const Matrix &bm, const Matrix &cm,
              const char *name = nullptr, const std::string &traceShape = "",
              const std::string &traceArgs = "",
              const Epilogue &epilogue = Epilogue());

} // namespace gaccrt

#endif // GACCRT_LIB_BLASINTERNAL_H

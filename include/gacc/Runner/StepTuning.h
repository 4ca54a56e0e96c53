//===- StepTuning.h - a step's GEMM library timed on whole steps -*- C++
//-*-===//
//
// Under GACCRT_GEMM=auto with several GEMM threads, every GEMM of a step
// runs on one whole-step choice: gaccrt's AVX-512 kernels ("avx512"),
// OpenBLAS ("openblas") or the kernels with the copies of each pair of
// micro-batches in lockstep ("avx512-lockstep"). The choice is measured on
// the machine that runs the step: the step runs in one process per
// candidate (so that no other library's spinning workers bias the timing),
// twice, in alternating order, and the candidate with the fastest median
// step (the kernels unless another is at least 5 % faster) is recorded in
// gaccrt's GEMM cache under the step's key, where later runs find it
// (runtime/README.md). gacc-run and gacc-run-aot share this; it links no
// LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_STEPTUNING_H
#define GACC_RUNNER_STEPTUNING_H

#include <string>
#include <vector>

namespace mlir::gacc {

/// How a runner sets up the GEMM library of its step (setUpStepGemms).
struct StepGemmSetup {
  /// The runner's name, for its progress line.
  std::string tool;
  /// This executable ("": /proc/self/exe) and the arguments that run the
  /// same step again (no flag that says how long it runs, what it writes or
  /// prints, or tunes): each candidate's process runs them with --steps=12
  /// --warmup=2.
  std::string self;
  std::vector<std::string> args;
  /// The step's key in the GEMM cache (one word: letters, digits, '-', '_',
  /// '.').
  std::string key;
  /// --tune-gemm: tune now (an error where it cannot).
  bool tune = false;
  /// --auto-tune-gemm: tune when the cache has no choice for the step and
  /// can keep one.
  bool autoTune = true;
  /// The step has copies of pairs that may run side by side: the lockstep
  /// form is a candidate too.
  bool lockstepToo = false;
  /// Print the progress line before tuning.
  bool print = true;
};

/// Sets the library of this process's GEMMs for the step of `setup`: a
/// cached whole-step choice, a fresh one (--tune-gemm, or the step's first
/// run here with `autoTune`), or nothing (one GEMM thread, a forced
/// GACCRT_GEMM, several ranks, no choice). Returns false with `error` for
/// a --tune-gemm that cannot run; `note` is what follows "GEMM library: "
/// in the header ("" when nothing was looked up or tuned).
bool setUpStepGemms(const StepGemmSetup &setup, std::string &note,
                    std::string &error);

/// Reads the step library at `path` once: its GEMM cache key, "step-" and
/// a hash of its bytes (the step and every option that changed its code),
/// and whether it asks gaccrt_copies_concurrent, i.e. has copies of pairs
/// with a lockstep form. False when it cannot be read.
bool describeStepLibrary(const std::string &path, std::string &key,
                         bool &hasCopies);

} // namespace mlir::gacc

#endif // GACC_RUNNER_STEPTUNING_H

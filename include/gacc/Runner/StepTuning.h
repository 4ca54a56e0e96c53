//===- StepTuning.h - a step's GEMM library timed on whole steps -*- C++
//-*-===//
//
// Under GACCRT_GEMM=auto with several GEMM threads, every GEMM of a step
// runs on one whole-step choice: gaccrt's AVX-512 kernels ("avx512"),
// oneDNN ("onednn"), OpenBLAS ("openblas") or the kernels with the copies
// of each pair of micro-batches in lockstep ("avx512-lockstep"). The choice
// is measured on the machine that runs the step, in the runner's process,
// on the step it has compiled or loaded: each candidate runs a few steps
// (one to warm up, then at least two timed), a candidate whose first timed
// step is far behind the best so far stops there, and the candidates within
// 10 % of the best are timed a second time in reverse order (a candidate's
// time is its fastest step). The kernels keep the step unless another is at
// least 5 % faster. The choice is recorded in gaccrt's GEMM cache under the
// step's key, where later runs find it (runtime/README.md). gacc-run and
// gacc-run-aot share this; it links no LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_STEPTUNING_H
#define GACC_RUNNER_STEPTUNING_H

#include <functional>
#include <string>

namespace mlir::gacc {

/// How a runner sets up the GEMM library of its step (setUpStepGemms).
struct StepGemmSetup {
  /// The runner's name, for its progress line.
  std::string tool;
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
  /// Runs one step on the runner's buffers with the GEMM library gaccrt is
  /// set to, and sets `ms` to its time. Tuning runs it many times; the
  /// runner puts its inputs back afterwards (setUpStepGemms says when).
  std::function<bool(double &ms, std::string &error)> runStep;
};

/// Sets the library of this process's GEMMs for the step of `setup`: a
/// cached whole-step choice, a fresh one (--tune-gemm, or the step's first
/// run here with `autoTune`), or nothing (one GEMM thread, a forced
/// GACCRT_GEMM, several ranks, no choice). `ranSteps` says whether steps
/// ran (the runner's buffers then hold their results, not its inputs).
/// Returns false with `error` for a --tune-gemm that cannot run or a step
/// that failed; `note` is what follows "GEMM library: " in the header (""
/// when nothing was looked up or tuned).
bool setUpStepGemms(const StepGemmSetup &setup, bool &ranSteps,
                    std::string &note, std::string &error);

/// Reads the step library at `path` once: its GEMM cache key, "step-" and
/// a hash of its bytes (the step and every option that changed its code),
/// and whether it asks gaccrt_copies_concurrent, i.e. has copies of pairs
/// with a lockstep form. False when it cannot be read.
bool describeStepLibrary(const std::string &path, std::string &key,
                         bool &hasCopies);

} // namespace mlir::gacc

#endif // GACC_RUNNER_STEPTUNING_H

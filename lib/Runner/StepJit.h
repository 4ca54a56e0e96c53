//===- StepJit.h - the machine code of a compiled step ----------*- C++ -*-===//
//
// StepJit: a lowered step (LLVM dialect) translated to LLVM IR, optimized for
// the host CPU by optimizeStepModule, and compiled by LLVM's ORC JIT with
// its code generation split over threads (the module is cut into parts of
// whole functions, compiled concurrently). CompiledStep's JIT; private to
// libgacc-runner.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_RUNNER_STEPJIT_H
#define GACC_LIB_RUNNER_STEPJIT_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace llvm::orc {
class LLJIT;
} // namespace llvm::orc

namespace mlir {
class Operation;
} // namespace mlir

namespace mlir::gacc {

struct StepJitOptions {
  /// When set, the LLVM IR after optimizeStepModule (each part's, one after
  /// the other) is written to this file.
  std::string optimizedIrFile;
  /// Threads of optimization and code generation (and parts of the
  /// module); 0: one per hardware thread, at most 8.
  unsigned threads = 0;
  /// Called once the step is LLVM IR: MLIR's code is no longer needed.
  std::function<void()> onTranslated;
};

/// The machine code of a step before it is linked: what the step cache
/// (StepCache.h) keeps.
struct StepObjects {
  /// The object files of the module's parts (generateObjects).
  std::vector<llvm::SmallString<0>> objects;
  /// The global constructors and destructors, by the names they were given
  /// (external, so that they can be looked up), in the order they run.
  std::vector<std::string> constructors, destructors;
};

class StepJit {
public:
  ~StepJit();

  /// Translates `module` (a `builtin.module` in the LLVM dialect) whose
  /// function `entry` is the step to LLVM IR, adds the packed entry and
  /// optimizes and compiles it for the host CPU. False with `error` set on
  /// failure.
  static bool compile(Operation *module, llvm::StringRef entry,
                      const StepJitOptions &options, StepObjects &objects,
                      std::string &error);

  /// Links `objects` (compile()'s, for the step `entry`) in a JIT of their
  /// own; `symbols` are the addresses of the runtime functions they call
  /// (the process's own symbols resolve the rest). Null with `error` set on
  /// failure.
  static std::unique_ptr<StepJit> link(const StepObjects &objects,
                                       llvm::StringRef entry,
                                       const llvm::StringMap<void *> &symbols,
                                       std::string &error);

  /// Runs the step through its packed entry `_mlir_<entry>(void **)`: one
  /// pointer per argument of `entry`, then one to its result. The first
  /// call runs the module's global constructors (a CUDA step's module
  /// loads) first.
  void invoke(void **packedArgs);

  /// A global constructor or destructor, run by name.
  struct Structor {
    std::string name;
    void (*function)() = nullptr;
  };

private:
  StepJit();

  std::unique_ptr<llvm::orc::LLJIT> jit;
  std::vector<Structor> constructors, destructors;
  void (*entry)(void **) = nullptr;
  bool initialized = false;
};

} // namespace mlir::gacc

#endif // GACC_LIB_RUNNER_STEPJIT_H

//===- OptimizeStep.h - LLVM's optimization of a lowered step ---*- C++ -*-===//
//
// optimizeStepModule: the LLVM optimization pipeline that gacc-run's JIT
// (CompiledStep::compile), gacc-compile and every embedder of the runner run
// on a lowered step before code generation, so that a step compiled ahead of
// time and one compiled at run time get the same code.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_OPTIMIZESTEP_H
#define GACC_RUNNER_OPTIMIZESTEP_H

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <memory>
#include <vector>

namespace llvm {
class Function;
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir::gacc {

/// Optimizes `module` (the LLVM IR of a lowered step, its triple and data
/// layout set) for the CPU of `targetMachine`: LLVM's O3 pipeline, the loop
/// vectorizer and SLP at the CPU's vector width, without loop unrolling.
/// A step's loops run over buffers at constant offsets of its arena, so
/// that LLVM's full-unroll cost model finds every address folds and unrolls
/// whole nests: at width 512 that made the IR of a 25-layer MLP 12x larger
/// and its code generation 30x slower, for no faster step (the vectorizer
/// interleaves its loops anyway).
void optimizeStepModule(llvm::Module &module,
                        llvm::TargetMachine &targetMachine);

/// Generates the object code of `module` on `threads` threads: with one,
/// as one object; with more, in four parts per thread of whole functions
/// (as llvm::SplitModule cuts a module, but with about as many instructions
/// in each part), each thread taking the next part when done with one, with
/// its own LLVMContext (the parts go through bitcode) and a target machine
/// made by `createMachine` (called once per part, concurrently). With
/// `optimize`, each part first gets optimizeStepModule, so that LLVM's
/// optimization runs in parallel too (a step's functions are the step, its
/// regions and its chunks, which are noinline: cutting the module between
/// them loses little interprocedural optimization); without it, `module` is
/// optimized already. When `optimizedIr` is given, it receives the LLVM IR
/// of each part after optimization. Code generation and optimization are
/// most of LLVM's time for a deep step. Local symbols are given external
/// linkage and hidden visibility, so that a part may refer to another's.
/// `module` must have no global constructors or destructors when `threads`
/// > 1. Returns the object files, one per part (at most one per function).
llvm::Expected<std::vector<llvm::SmallString<0>>> generateObjects(
    std::unique_ptr<llvm::Module> module, unsigned threads,
    const std::function<llvm::Expected<std::unique_ptr<llvm::TargetMachine>>()>
        &createMachine,
    bool optimize = false, std::vector<std::string> *optimizedIr = nullptr);

/// Marks `function`, an entry point that unpacks a step's arguments and
/// calls it once per step, to be compiled without optimization (optnone,
/// noinline: FastISel). A step of hundreds of layers has thousands of
/// scalar parameters (each memref is 3 + 2 x rank of them), so its packed
/// entry is one straight-line block of thousands of loads, on which
/// SelectionDAG's combiner spent over 2 s at 100 layers of width 512.
void setCheapToCompile(llvm::Function &function);

/// Replaces every function of `module` that is identical to another one by
/// that one (LLVM's MergeFunctions; the module's local functions first get
/// unnamed_addr, as nothing compares their addresses, so that a duplicate is
/// removed rather than made a thunk). generateObjects does this first.
void mergeIdenticalFunctions(llvm::Module &module);

/// The default number of parts of generateObjects: one per hardware
/// thread, at most 8.
unsigned getDefaultCodegenThreads();

} // namespace mlir::gacc

#endif // GACC_RUNNER_OPTIMIZESTEP_H

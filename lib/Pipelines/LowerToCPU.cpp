//===- LowerToCPU.cpp - the gacc-lower-to-cpu pipeline ----------*- C++ -*-===//
//
// Lowers a gradient-accumulated step (the output of gacc-pipeline) to the
// LLVM dialect for the host:
//   regions of one size and form outlined to one function called once per
//   region, the others inlined (with trace markers), elementwise tensor ops to
//   linalg and fused, one-shot bufferization (function boundaries with identity
//   layouts; shard.all_reduce in place on its bucket, as a runtime call),
//   data-dependent gather indices clamped and integer divisions by zero (or
//   INT_MIN / -1) made to divide by 1, both reported through the runtime,
//   gacc.scatter_add as serial loops in place on its accumulator (an
//   out-of-range row skipped and reported),
//   results to out-parameters, bucket all-reduces marked gacc.overlap split
//   into a start after the final region's last write of the bucket and a
//   wait before its first read, f32 matmuls to gaccrt_sgemm (beta = 0 for the
//   first region, 1 when accumulating), two micro-batches' weight gradients
//   per gaccrt_sgemm_pair, deallocation after the last use,
//   loops (the outermost parallel ones on the runtime's threads), LLVM (one
//   conversion for arith, memref, func, cf and index).
// Heap allocations go through MLIR's generic allocation functions, which the
// gacc runtime implements with accounting.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Pipelines/Pipelines.h"
#include "gacc/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::gacc;

void mlir::gacc::buildBufferizedStepPipeline(
    OpPassManager &pm, bool traceRegions, bool reportIndexErrors,
    bool outlineRegions, bool overlapAllReduce, bool outlineFunctions,
    bool atomicScatterAdd) {
  if (outlineRegions) {
    OutlineMicroBatchesPassOptions outlineOptions;
    outlineOptions.traceRegions = traceRegions;
    outlineOptions.functions = outlineFunctions;
    pm.addPass(createOutlineMicroBatchesPass(outlineOptions));
  }
  // One collective per accumulator for bufferization's sake (merged back
  // into one per bucket by gacc-place-buckets). After the outlining: it
  // rewrites only the bucket's storage and collective, outside the regions,
  // and then runs (and verifies its result) on one loop instead of m
  // regions.
  pm.addPass(createSplitBucketsPass());
  InlineMicroBatchesPassOptions inlineOptions;
  inlineOptions.traceRegions = traceRegions;
  pm.addPass(createInlineMicroBatchesPass(inlineOptions));
  pm.addPass(createStripRolesPass());
  // Before fusion: contractions written as generics become GEMMs.
  pm.addPass(createContractionToMatmulPass());
  pm.addPass(createConvertElementwiseToLinalgPass());
  pm.addPass(createFuseElementwisePass());
  // No CSE here: merging identical fills would make accumulators share an
  // init and force copies in bufferization.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCopyRepeatedResultsPass());
  GuardGathersPassOptions guard;
  guard.report = reportIndexErrors;
  pm.addPass(createGuardGathersPass(guard));
  // Integer divisions that could trap (by zero, INT_MIN / -1) divide by 1
  // there instead, reported at the same sites.
  GuardDivisionsPassOptions guardDivisions;
  guardDivisions.report = reportIndexErrors;
  pm.addPass(createGuardDivisionsPass(guardDivisions));

  pm.addPass(createUnshareEmptyTensorsPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  // A loop on the state may compute its next tensor into a new buffer
  // (elementwise ops get fresh destinations): gacc-deallocate-buffers gives
  // such an iter_arg one buffer outside the loop.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Embedding gradients add their rows in place (bounds-checked; reported
  // at the sites gacc-guard-gathers gave them).
  LowerScatterAddPassOptions scatter;
  scatter.atomic = atomicScatterAdd;
  pm.addPass(createLowerScatterAddPass(scatter));
  // Outlined region bodies return their in-place accumulators.
  pm.addPass(bufferization::createDropEquivalentBufferResultsPass());
  // Before the results become out-parameters: a gradient returned from its
  // bucket is copied out once instead of living outside the bucket.
  pm.addPass(createPlaceBucketsPass());
  bufferization::BufferResultsToOutParamsPassOptions outParams;
  outParams.hoistStaticAllocs = true;
  outParams.modifyPublicFunctions = true;
  pm.addPass(bufferization::createBufferResultsToOutParamsPass(outParams));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createEraseGridsPass());
  // Bucket all-reduces marked gacc.overlap start as soon as their bucket is
  // final and are waited for where the bucket is read.
  if (overlapAllReduce)
    pm.addPass(createOverlapAllReducePass());
}

LowerToCPUConfig LowerToCPUOptions::getConfig() const {
  LowerToCPUConfig config;
#define GACC_LOWER_TO_CPU_OPTION(NAME, ...) config.NAME = NAME;
#include "gacc/Pipelines/LoweringOptions.def"
  return config;
}

void mlir::gacc::buildLowerToCPUPipeline(OpPassManager &pm,
                                         const LowerToCPUConfig &options) {
  buildBufferizedStepPipeline(pm, options.traceRegions,
                              /*reportIndexErrors=*/true,
                              options.outlineMicroBatches,
                              /*overlapAllReduce=*/true);
  if (options.blas) {
    pm.addPass(createMatmulToBlasPass());
    // Two micro-batches' weight gradients per pass over the accumulator.
    if (options.pairGemms) {
      PairAccumulatingGemmsPassOptions pair;
      pair.concurrentCopies = options.concurrentCopies;
      pair.anySize = options.pairAnySize;
      pair.lockstepCopies = options.lockstepCopies;
      pair.pairedCopies = options.pairedCopies;
      pm.addPass(createPairAccumulatingGemmsPass(pair));
    }
  }
  if (options.bufferizeOnly)
    return;
  // A GEMM's bias and activation on its final tiles (lowered by
  // gacc-parallel-loops-to-runtime).
  if (options.blas && options.parallelLoops && options.gemmEpilogues)
    pm.addPass(createFuseGemmEpiloguesPass());
  // Free buffers after their last use (not at the end of the step, as the
  // upstream ownership-based deallocation would).
  pm.addPass(createDeallocateBuffersPass());
  // The buffers freed in their own block share one arena planned from their
  // lifetimes: no malloc, free or page fault per step.
  pm.addPass(createPlanArenaPass());
  // The copies' forms that are one body at other buffers: one function.
  if (options.outlineCopies)
    pm.addPass(createOutlineCopiesPass());

  pm.addPass(createStridedCopiesToLinalgPass());
  if (options.parallelLoops) {
    // The outermost parallel loops run on the GEMM threads.
    pm.addPass(createConvertLinalgToParallelLoopsPass());
    pm.addPass(createParallelLoopsToRuntimePass());
  } else {
    pm.addPass(createConvertLinalgToLoopsPass());
  }
  // Functions of bounded size for LLVM (its loop passes are quadratic in
  // the size of the function around a loop).
  if (options.outlineChunks)
    pm.addPass(createOutlineChunksPass());
  // Each repeated loop body and chunk once, for every later pass and LLVM.
  if (options.mergeFunctions)
    pm.addPass(createMergeFunctionsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // math.ipowi (and fpowi) as loops in functions of their own: no LLVM
  // lowering exists.
  pm.addPass(createConvertMathToFuncs());
  // bf16/f16 arithmetic in f32 and the casts as integer code: no call of a
  // compiler-runtime conversion routine the host may lack.
  arith::ArithEmulateUnsupportedFloatsOptions emulate;
  emulate.sourceTypeStrs = {"bf16", "f16"};
  emulate.targetTypeStr = "f32";
  pm.addPass(arith::createArithEmulateUnsupportedFloats(emulate));
  pm.addPass(math::createMathExtendToSupportedTypes());
  pm.addPass(createExpandNarrowFloatsPass());
  // arith-expand-ops but its maximumf/minimumf as compare and select
  // (maximumf(+0, -0) must be +0).
  pm.addPass(createExpandMathOpsPass());
  // scf-to-cf splits a block at every loop: short blocks keep it linear.
  pm.addPass(createSplitBlocksAtLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  // arith, memref (generic allocation functions), func, cf and index in one
  // conversion, then the casts reconciled.
  pm.addPass(createConvertStepToLLVMPass());
}

void mlir::gacc::registerLowerToCPUPipeline() {
  PassPipelineRegistration<LowerToCPUOptions>(
      "gacc-lower-to-cpu",
      "Lower a gradient-accumulated step to the LLVM dialect for the host "
      "(bufferized, BLAS GEMMs, runtime collectives)",
      [](OpPassManager &pm, const LowerToCPUOptions &options) {
        buildLowerToCPUPipeline(pm, options.getConfig());
      });
}

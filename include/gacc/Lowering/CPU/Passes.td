//===- Passes.td - lowering passes of the CPU target -------*- tablegen -*-===//
//
// The lowering passes that only gacc-lower-to-cpu runs, in the order it runs
// them. Defined in lib/Lowering/CPU (library GaccLoweringCPU), registered by
// registerGaccLoweringCPUPasses().
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_CPU_PASSES_TD
#define GACC_LOWERING_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def PairAccumulatingGemmsPass
    : Pass<"gacc-pair-accumulating-gemms", "ModuleOp"> {
  let summary = "Accumulate two micro-batches' weight gradients in one pass "
                "over the accumulator";
  let description = [{
    Runs after gacc-matmul-to-blas on the host, before the deallocation and
    arena passes (which then see the longer lifetimes). In an `scf.for` with
    constant bounds, at least two iterations and no loop-carried values (the
    loop over equal micro-batches), a `gaccrt_sgemm` call qualifies when its
    C is a static view defined outside the loop (an accumulator) and:

    - no other op of the body touches C's bytes after the call or before it
      (other members of the same bucket, at disjoint constant byte offsets,
      may be touched; an `scf.if` without results or else branch whose
      condition is provably false for the iterations of that copy does not
      count: the overlapped all-reduce's start after the final region);
    - its beta is provably 1 in the odd iterations (a constant, or the
      `select(iv == lb, 0, 1)` of gacc-matmul-to-blas);
    - B is not transposed, alpha is a constant, and A and B take at most a
      quarter of C's bytes (a weight gradient of a small micro-batch, where
      the GEMM is bound by C's traffic and keeping A and B alive longer is
      cheap), and C takes at least `min-accumulator-bytes` (64 KiB: a
      smaller accumulator stays in a core's L1 between the two GEMMs, and
      the loop body unrolled by two doubles the code lowered after this
      pass, which at width 64 raised the compile time's growth in m from
      0.12 to 0.23);
    - no op between the call and its next iteration's copy writes or frees
      A or B.

    If any call qualifies, the loop is unrolled by two (iv and iv + step per
    iteration, the last iteration of an odd trip count after the loop), the
    first copy's `scf.if`s that provably never run are erased, and each
    qualifying call's two copies become one `gaccrt_sgemm_pair` at the
    second copy: C = alpha * (op(A1) * B1 + op(A2) * B2) + beta * C, which
    gaccrt's AVX-512 kernels compute as one GEMM over both inner ranges (one
    pass over C, each tile summing both micro-batches' products in
    registers; runtime/README.md). The result then rounds like one GEMM of
    the two micro-batches together, not like two calls: it differs from
    the unpaired step (`pair-gemms=0`) in the last bits, as results do
    between GEMM libraries.

    With `concurrent-copies` (the default), the two copies then run side by
    side: the first copy, and the ops of the second that provably neither
    read nor write what the first writes, nor read what it writes (by
    buffer: allocation, public function argument or global; any op whose
    effects on memory are not named keeps its copy in order), nor conflict
    with or use an op of the second copy that stays, go into one
    `scf.parallel` (%copy) = (0) to (2), marked `gacc.concurrent_copies`,
    whose body is an `scf.index_switch` on %copy with one case per copy.
    The second copy's other ops (its accumulations into the gradients both
    copies write, the pairs, the overlapped all-reduce's start) follow in
    order. Allocations and effect-free ops whose values leave a case are
    hoisted before it. Only when the first copy's effects are all named,
    both copies have a `gaccrt_sgemm` of their own, and the second copy's
    buffers that are live at once while it runs (which would otherwise
    reuse the first copy's) take at most half the paired accumulators'
    bytes, which the step holds anyway. `any-size` drops both
    size rules (the transformation is exact at any size; the rules only
    decide where it pays), so that tests (the random differential ones of
    scripts/difftest/run.py --pairs) reach it on small graphs.
    gacc-plan-arena gives the two cases disjoint memory;
    gacc-parallel-loops-to-runtime lowers the loop to
    `gaccrt_parallel_copies`, which runs the copies on two threads when the
    runtime has two GEMM threads and every GEMM on its kernels, and in turn
    otherwise (runtime/README.md).

    With `lockstep-copies` (the default), where two GEMMs of the copies
    read one weight of 256 KiB or more (any weight with `any-size`), the
    `scf.parallel` goes into the then-branch of an `scf.if` on
    `gaccrt_copies_concurrent(2)`, and the else-branch, for when the copies
    would run in turn, holds both cases' ops interleaved up to each GEMM
    (segments whose GEMMs read the same weight together; any interleaving
    keeps the cases' meaning, as every op of the second case is independent
    of every op of the first), each such pair of GEMMs one
    `gaccrt_sgemm_rows_pair` (one pass over the weight for both
    micro-batches, with the bits of the two calls), the first copy's trace
    region ending after the second's. The loop body is then lowered twice
    more (code size and compile time), hence the weight-size rule: a
    smaller weight stays in the core's caches between the two GEMMs.

    With `paired-copies` (the default), where that lockstep form exists and
    the loop of pairs runs twice or more (four micro-batches or more), the
    copies become copies of two micro-batches each: a clone of the loop
    takes the lockstep form (the else-branch) as its body, whatever the
    thread count, with the trace regions made to nest (the first
    micro-batch's around the second's); the clone is unrolled by two again;
    each two `gaccrt_sgemm_pair` calls of one accumulator in the two halves
    (by the rules of the pairs above, applied to the pair's four operands)
    become one `gaccrt_sgemm_quad` at the second (one pass over C for four
    micro-batches); and the halves go side by side as above (the same
    proof and memory rule, no second lockstep form). When at least one quad
    forms and the halves may run side by side, the clone (with its last
    iteration of an odd trip count) replaces the loop, whether the copies
    will run side by side or in turn (one GEMM thread: gacc-plan-arena
    places the quads' operands one after the other, so that each quad is
    one GEMM over four micro-batches on any library); otherwise the clone
    is erased.
  }];
  let options = [
    Option<"concurrentCopies", "concurrent-copies", "bool",
           /*default=*/"true",
           "Run the two copies' independent work side by side "
           "(gaccrt_parallel_copies)">,
    Option<"minAccumulatorBytes", "min-accumulator-bytes", "int64_t",
           /*default=*/"65536",
           "Pair only GEMMs whose accumulator C takes at least this many "
           "bytes (one that stays in L1 gains little, and the unrolled "
           "loop body costs compile time)">,
    Option<"lockstepCopies", "lockstep-copies", "bool", /*default=*/"true",
           "With concurrent-copies: a second form of the copies for when "
           "they run in turn, in lockstep, their GEMMs of one weight as "
           "gaccrt_sgemm_rows_pair">,
    Option<"pairedCopies", "paired-copies", "bool", /*default=*/"true",
           "With lockstep-copies, where the loop of pairs runs twice or "
           "more: two copies of two micro-batches each, each in lockstep, "
           "their weight gradients one gaccrt_sgemm_quad per four "
           "micro-batches">,
    Option<"anySize", "any-size", "bool", /*default=*/"false",
           "Ignore the two size rules (operands against C, the second "
           "copy's buffers against the accumulators): pair and run side by "
           "side whatever the sizes, as tests on small graphs need">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def FuseGemmEpiloguesPass : Pass<"gacc-fuse-gemm-epilogues", "ModuleOp"> {
  let summary = "Run the elementwise loop after a GEMM on its final tiles";
  let description = [{
    Runs after gacc-pair-accumulating-gemms on the host, before the
    deallocation and arena passes (which then see the GEMM and the loop as
    one op, so that the loop's outputs never share bytes with the GEMM's
    operands). A `gaccrt_sgemm` call (transA, transB, alpha, beta, A, B, C)
    and the `linalg.generic` right after it (only allocations and ops
    without memory effects in between, which move before the call) become
    one `scf.execute_region` marked `gacc.gemm_epilogue` when the generic:

    - has two loops, both parallel, buffer operands and a body that only
      computes (no op with memory effects or regions);
    - reads C (the call's C without its `memref.cast`) through the identity
      map, and no other view of C's buffer;
    - writes only buffers of their own (a `memref.alloc` each, through the
      identity map) that are none of the GEMM's A, B and C and none of the
      generic's inputs.

    So each element the generic writes depends on C only through the same
    element, and what it reads besides C (a bias) is written by neither the
    GEMM nor the generic. When C (a `memref.alloc` without dynamic sizes in
    the generic's block) is read by nothing after the generic, one output
    of the same type allocated in that block and touched by nothing before
    the generic becomes C itself: the generic writes it over the element of
    C it has just read (the layer's activation, or its pre-activation where
    the backward pass reads that, over the GEMM's result), a buffer less.
    gacc-parallel-loops-to-runtime then outlines the generic's loop for a
    rectangle of C and calls `gaccrt_sgemm_epilogue`,
    which runs it on each tile of C once the tile is final (gaccrt's AVX-512
    kernels: right after its last store, on the thread that computed it;
    other libraries: after the GEMM, in bands of rows on the GEMM threads).
    Every element is computed by the same operations on the same values as
    before: the results are bit for bit those of the unfused step. The
    forward GEMM of a layer with its bias and activation (the activation
    and, where the backward pass reads it, the pre-activation as the
    generic's outputs) is the case this is for: the elementwise pass then
    reads C from cache instead of memory. Where the unit is not lowered
    (no `parallel-loops`), it stays the call and the loop in turn.
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect"
  ];
}

def PlanArenaPass : Pass<"gacc-plan-arena", "ModuleOp"> {
  let summary = "Place the step's buffers in one arena planned at compile time";
  let description = [{
    Runs after gacc-deallocate-buffers on the host. Every `memref.alloc` of a
    static, identity-layout buffer of 1-, 2-, 4-, 8- or 16-byte elements (at
    most 2^48 bytes) whose only deallocation is a `memref.dealloc` in its
    own block gets a byte offset in one arena per function, planned from the
    buffers' lifetimes (first fit, 64-byte aligned): buffers whose lifetimes
    do not overlap share bytes. An op whose regions run one at a time
    (`scf.if`, `scf.for`, `scf.while`, `scf.index_switch`,
    `scf.execute_region`) takes one slot in its parent block, sized for the
    plan of its bodies, which every iteration reuses; the two cases of
    concurrent copies (an `scf.parallel` of two iterations marked
    `gacc.concurrent_copies` whose body is only its marked
    `scf.index_switch`) get one slot each. The buffers in any other region
    (other parallel loops, async or OpenMP regions) keep their allocations,
    as do those of a function that may run twice at once (recursive, or
    called in such a region or other than by `func.call`). The arena is a
    private `memref.global` (zero-initialized, so it costs nothing until
    touched and is reused by every step, with no malloc, free or page fault
    after the first step); each buffer becomes a `memref.view` of it and its
    `memref.dealloc` goes away. The buffers that are whole operands (through
    `memref.cast`) of one GEMM pair of gacc-pair-accumulating-gemms in the
    same block lie one after the other, without padding, in the pair's
    order: `gaccrt_sgemm_pair`'s and `gaccrt_sgemm_quad`'s A's (transposed)
    and B's, `gaccrt_sgemm_rows_pair`'s A's and C's. Such a chain is one
    interval of the plan, from its first allocation to its last
    deallocation; the runtime runs a pair whose operands are so stacked as
    one GEMM over the stacked matrices. The arena's bytes are counted by the
    runtime's memory accounting while the function runs
    (`gaccrt_account_arena`). A compiled step is therefore not reentrant: two
    threads must not run the same compiled step at once.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

def OutlineCopiesPass : Pass<"gacc-outline-copies", "ModuleOp"> {
  let summary = "One function for the like forms of concurrent copies";
  let description = [{
    Runs after gacc-plan-arena on the host. gacc-pair-accumulating-gemms
    leaves a loop body unrolled by two in several forms that are one body at
    different buffers, offsets and trace ids: the cases of the
    `gacc.concurrent_copies` `scf.index_switch` (the first with its
    accumulations, the second without: they follow both) and the lockstep
    form (the else-branch of the `scf.if` whose then-branch runs the copies
    side by side), and with paired copies the same for two micro-batches a
    copy. Among these blocks of a function (without arguments or yielded
    values), the one with the most ops that have effects is a base, and
    each block whose effectful ops match a subsequence of the base's in
    order becomes a call of one private function (internal linkage), as the
    base does: two ops match when they are the same operation (name,
    attributes, types, regions compared op by op) and their operands match:
    results of matching ops; results of matching effect-free, speculatable
    ops without regions, wherever they are (such ops are matched through
    the values they compute, not in order, and the function computes them
    itself: the views of the arena hoisted before the cases); values from
    outside the blocks at the same place; constants, whatever their value.
    The function is the base's body. Each value from outside that differs,
    or that a block computes where another has it from outside, is an
    argument (a block's own value computed by a chain of such ops, cloned
    before its call); each integer constant whose value differs is the
    base's value plus an argument, the difference (the offsets of a case's
    buffers move by the same bytes: few arguments, which matters, as calls
    with thousands of scalar arguments make LLVM's code generation
    superlinear); other differing constants are arguments. Each effectful
    op that some block lacks (it must define no values) runs under an i1
    argument that the block's call sets to whether it has the op; an
    argument that only such ops use gets a zero or `ub.poison` from a block
    that cannot see the others' value. Blocks that match nothing stay as
    they are. This only shrinks the code that LLVM compiles (on a wide deep
    model, several times the code of one micro-batch): each block still
    runs exactly its own ops in its own order.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect",
    "::mlir::ub::UBDialect"
  ];
}

def ParallelLoopsToRuntimePass
    : Pass<"gacc-parallel-loops-to-runtime", "ModuleOp"> {
  let summary = "Run the outermost scf.parallel loops on the runtime's threads";
  let description = [{
    On the host, after `convert-linalg-to-parallel-loops`: each outermost
    `scf.parallel` (one not nested in another `scf.parallel`) whose body only
    computes (arith, math, index, affine.apply/min/max, scf, ub, and memref
    loads, stores and views: no call, allocation or copy), whose stores are
    each indexed by the first dimension's induction variable itself (so the
    slices write disjoint elements), and whose work, estimated from
    its static trip counts, is at least `min-work` scalar operations, becomes
    a call of the runtime's `gaccrt_parallel_for`. Its body is outlined to a
    private function `(ctx, lo, hi)` that runs iterations [lo, hi) of the
    loop's first dimension and every iteration of the others; the values it
    uses from above travel in a struct `ctx` (memrefs as their LLVM
    descriptors) in one stack slot per function, allocated in its entry
    block and sized for its largest struct. The runtime splits the first dimension into contiguous
    slices, one per GEMM thread (`OPENBLAS_NUM_THREADS`), or runs the body
    on the caller alone when the slices would be too small.

    Each element is computed by the same operations in the same order as by
    a sequential loop: the results are the same bits on any number of
    threads. Loops inside an `scf.for` (a reduction's inner parallel
    dimension) qualify too, with the work of one execution.
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", /*default=*/"16384",
           "Outline a loop only if its estimated scalar operations (dynamic "
           "trip counts count as 64) reach this">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::func::FuncDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

def ExpandNarrowFloatsPass : Pass<"gacc-expand-narrow-floats"> {
  let summary = "Expand bf16/f16 casts into integer arithmetic";
  let description = [{
    Runs on the CPU path after arithmetic on bf16 and f16 has been emulated
    in f32 (`arith-emulate-unsupported-floats`,
    `math-extend-to-supported-types`): every remaining `arith.extf` and
    `arith.truncf` between f32 (or f64, through f32) and bf16/f16 becomes
    integer arithmetic on the bits, rounding to nearest even, and
    `math.fma` on a narrow type computes in f32. The lowered code then calls
    no compiler-runtime routine (`__truncsfbf2`, `__extendhfsf2`,
    `__truncsfhf2`) that the host's libgcc may lack.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def SplitBlocksAtLoopsPass : Pass<"gacc-split-blocks-at-loops", "ModuleOp"> {
  let summary = "Start a new block at each structured loop of a function";
  let description = [{
    Runs right before convert-scf-to-cf. Each op of the SCF dialect with
    regions (a loop nest) in a function's block starts a block of its own,
    reached by a `cf.br`. The split is done from the end of the block, so each
    op moves once; scf-to-cf, which splits the block at every loop it
    lowers, then moves only the ops up to the next loop instead of the rest
    of a long straight-line block (quadratic in the block's length).

    A function's entry block becomes a single `cf.br` to the rest of the
    body (after its leading constant-size `llvm.alloca` slots, which stay
    static allocas): convert-func-to-llvm inserts the materialization of
    each converted argument there and compares positions in that block for
    every one of them (quadratic in a long entry block).
  }];
  let dependentDialects = ["::mlir::cf::ControlFlowDialect"];
}

def OutlineChunksPass : Pass<"gacc-outline-chunks", "ModuleOp"> {
  let summary = "Cut functions with many loops into chunks of bounded size";
  let description = [{
    On the host, after the loops are formed (and the outermost parallel
    ones outlined to the runtime), before the lowering to the LLVM dialect.
    A block with more than `max-loops` loops or `max-ops` operations (a
    function's body, the body of the loop over a step's micro-batch regions)
    is cut into chunks of consecutive operations with at most that many
    each, and each chunk becomes a private `noinline` function
    `@<f>_chunk` (internal linkage) called in its place; an operation with
    regions that is larger than that alone has its own blocks cut instead. LLVM's loop passes cost time
    proportional to the size of the function around each loop, so one
    function for a deep step compiles in time quadratic in its depth;
    chunks make it linear.

    Cheap pure operations (constants, views and casts of buffers, pointer
    offsets, scalar arithmetic) and invariant loads (a parallel loop's
    context fields) stay in place and are cloned into each chunk that uses
    them, so that a chunk addresses buffers from the same base pointers
    with the same constant offsets, and no chunk returns hundreds of values
    for the next; other values the chunk uses are arguments, and its values
    used later are results. Stack allocations
    stay in the caller; a chunk that would return one is not outlined.
  }];
  let options = [
    Option<"maxLoops", "max-loops", "int64_t", /*default=*/"16",
           "Most loops (structured loops, nested ones counted) per chunk">,
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"400",
           "Most operations (nested ones counted) per chunk">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def MergeFunctionsPass : Pass<"gacc-merge-functions", "ModuleOp"> {
  let summary = "Merge private functions with the same body, up to where "
                "they place buffers in the arena";
  let description = [{
    On the host, after gacc-outline-chunks. A deep step repeats its loop
    bodies (outlined for the runtime's threads, one per layer, region and
    copy form at the same shapes) and its chunks (the same updates of other
    layers): private functions with the same type, attributes and body
    (operation by operation: names, attributes, result types, operands in
    the same places) become one, and the references to the others refer to
    it. Merging callees can make their callers the same; the pass repeats
    until nothing merges. Every later pass, the translation to LLVM IR and
    LLVM see each body once.

    With `parametrize` (the default), a function that is only called
    directly may also differ from another in the values of integer
    constants used only in the byte shift of `memref.view` (where a buffer
    lies in the arena; directly or added to another offset): the merged
    function takes those as trailing arguments, and each call passes its
    own. A constant with any other use
    (a loop bound, an index) must be equal.
  }];
  let options = [
    Option<"parametrize", "parametrize", "bool", /*default=*/"true",
           "Merge directly called functions that differ in view shifts, "
           "the shifts passed as arguments">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def ConvertStepToLLVMPass : Pass<"gacc-convert-step-to-llvm", "ModuleOp"> {
  let summary = "Convert a lowered step's arith, memref, func, cf and index "
                "ops to the LLVM dialect in one conversion";
  let description = [{
    The last conversion of gacc-lower-to-cpu, after convert-math-to-llvm and
    convert-math-to-libm: the patterns of convert-arith-to-llvm,
    finalize-memref-to-llvm (with MLIR's generic allocation functions, which
    the gacc runtime implements), convert-func-to-llvm, convert-cf-to-llvm
    (with the default `cf.assert` lowering) and convert-index-to-llvm applied
    in one dialect conversion, followed by reconcile-unrealized-casts. Each op
    is converted once instead of being visited by five conversions (they
    were about a third of the compile time of a deep model). The index
    bitwidth comes from the module's data layout, as in the separate passes.

    Before the conversion, `arith.maxnumf` and `arith.minnumf` without the
    `nnan` flag become compares and selects with the same semantics (a NaN
    operand yields the other): LLVM 22's loop vectorizer skips the scalar
    remainder of a `llvm.maxnum`/`llvm.minnum` reduction without fast-math
    flags when its vector part saw no NaN (llvm/llvm-project#209159).
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

#endif // GACC_LOWERING_CPU_PASSES_TD

//===- Passes.td - gacc lowering passes -------------------*- tablegen -*-===//
//
// Passes that lower a gradient-accumulated step towards the CPU or CUDA. One
// file for all of them; each is defined under lib/Lowering/ in the folder of
// the target it serves: Common (both pipelines), CPU or CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_PASSES_TD
#define GACC_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def MatmulToBlasPass : Pass<"gacc-matmul-to-blas", "ModuleOp"> {
  let summary = "Turn f32 linalg.matmul on buffers into gaccrt_sgemm calls";
  let description = [{
    Runs after bufferization. Each `linalg.matmul` on f32 memrefs becomes a
    call to the runtime's `gaccrt_sgemm` (OpenBLAS `cblas_sgemm`): with
    beta = 0 when the op directly follows a zero `linalg.fill` of its output
    (the first region initializing an accumulator; the fill is dropped) or a
    `memref.copy` of a zero-filled buffer into its output (a zero tensor
    shared by several matmuls; the copy is dropped, and the shared buffer's
    fill too once only dropped copies read it), with beta = 1 otherwise
    (accumulating in place). In an `scf.for` with constant bounds and at
    least one iteration (one compiled body for equal micro-batches), a
    matmul whose output was zero-filled before the loop, with no op touching
    its bytes in between or earlier in the body (other members of the same
    bucket, at disjoint constant byte offsets, may be touched), gets
    beta = 0 in the first iteration and 1 in the others, and the fill is
    dropped. An operand that is the
    private result of a 2-D `linalg.transpose` is read through the transpose
    flag instead of the copy. With `split-batches` (the CPU default), an f32
    `linalg.batch_matmul` on statically shaped buffers first becomes an
    `scf.for` over its batches of `linalg.matmul`s on rank-reduced subviews
    (attention's and token mixing's GEMMs), so they reach BLAS too.
  }];
  let options = [
    Option<"callee", "callee", "std::string", /*default=*/"\"gaccrt_sgemm\"",
           "Runtime function to call (gaccrt_cuda_sgemm for cuBLAS)">,
    Option<"splitBatches", "split-batches", "bool", /*default=*/"true",
           "Turn linalg.batch_matmul into a loop of GEMM calls">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def ContractionToMatmulPass : Pass<"gacc-contraction-to-matmul", "ModuleOp"> {
  let summary = "Rewrite linalg.generic contractions as linalg.matmul";
  let description = [{
    A `linalg.generic` computing `C[m, n] += sum over K of A * B` with
    projected-permutation maps, where the reduction dims K appear as one
    contiguous block in the same order in A and B (a weight gradient written
    as a generic, e.g. over samples and tokens), becomes a `linalg.matmul`
    on operands whose K block is collapsed into one dimension (transposed
    when m or n comes after it). The GEMM then goes to BLAS or cuBLAS with
    the accumulation into C unchanged.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FuseElementwisePass : Pass<"gacc-fuse-elementwise", "ModuleOp"> {
  let summary = "Fuse elementwise linalg producers into their consumers";
  let description = [{
    Upstream's elementwise fusion without its reshape propagation, which
    would fold the reshapes around a GEMM into a generic contraction and so
    take it away from BLAS / cuBLAS. A producer with one use is fused by
    upstream's pattern. A producer with several uses is fused when the
    consumer reads it through one operand and every other use comes after
    the consumer in its block: the fused op also yields the producer's
    results and takes over those uses, so the producer is computed once.
    (Upstream's pattern would keep the producer for the other uses and so
    compute it twice.)
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::affine::AffineDialect"];
}

def PlaceBucketsPass : Pass<"gacc-place-buckets", "ModuleOp"> {
  let summary = "Allocate accumulators inside their bucket buffers";
  let description = [{
    Runs after bufferization. Where an accumulator buffer is copied into a
    slice of a 1-D bucket buffer (the packing before the bucket's
    all-reduce), the accumulator is allocated in the bucket instead, as a
    `memref.view` of the bucket's bytes with the accumulator's own identity
    type, and the copy goes away; copies of a slice onto itself are dropped.
    After this pass every gradient accumulator is one buffer for the whole
    step, inside its bucket.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def OverlapAllReducePass : Pass<"gacc-overlap-all-reduce", "ModuleOp"> {
  let summary = "Start bucket all-reduces early and wait only where read";
  let description = [{
    Runs after bufferization and gacc-place-buckets. Each runtime all-reduce
    of a bucket marked `gacc.overlap` (`gaccrt_all_reduce` on the bucket's
    address) becomes a `gaccrt_all_reduce_start` placed right after the last
    op of its block before it that accesses the bucket's memory (in a step,
    the final region's last write of an accumulator in the bucket) and a
    `gaccrt_all_reduce_wait` on the returned handle placed right before the
    first op after it that accesses the bucket (or the block's terminator).
    When that last accessing op is an `scf.for` with a constant, non-zero
    trip count and no memref iteration arguments (the loop of
    gacc-outline-micro-batches, the final region among its iterations), the
    start goes into the loop body instead, right after the body's last
    access, under `scf.if` on `iv + step >= ub`, and the handle reaches the
    wait through a `memref.alloca` slot.
    Any op that uses the bucket or a view of it, other than the views
    themselves, counts as an access, so the bucket is never touched while
    the runtime reduces it.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
}

def SplitBucketsPass : Pass<"gacc-split-buckets", "ModuleOp"> {
  let summary = "One all-reduce per accumulator before bufferization";
  let description = [{
    Runs before bufferization. A bucket all-reduce (`gacc.bucket`) of a
    chain of `tensor.insert_slice`s into an empty bucket tensor becomes one
    `shard.all_reduce` per packed accumulator, marked with its bucket and its
    offset (`gacc.bucket_offset`); the first-region views of the bucket
    become empty tensors of their own. One-shot bufferization then sees one
    small alias set per accumulator instead of one for the whole bucket (its
    analysis is superlinear in the size of an alias set), and
    gacc-place-buckets puts the accumulators back into one bucket buffer and
    merges the collectives after bufferization.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect",
                           "::mlir::shard::ShardDialect"];
}

def OutlineMicroBatchesPass : Pass<"gacc-outline-micro-batches", "ModuleOp"> {
  let summary = "Lower micro-batch regions of equal form to one body";
  let description = [{
    Runs before the regions are inlined. `gacc.micro_batch` regions of the
    same size whose bodies differ only in the region's sample offset (slice
    offsets, offset constants of `linalg.index`) share one body. When they
    follow each other and carry only accumulators from one to the next (the
    usual case), they become one `scf.for` over the regions: the body is the
    first region's, the offset is computed from the induction variable, the
    accumulators are iteration arguments (in place after bufferization).
    Otherwise they share one private function with the offset as an `index`
    argument: each such region's body becomes one call of it, with the
    values the region uses from outside as arguments; a value that differs
    between the regions but is not affine in the offset is an argument too.
    The first region starts the accumulators from identity fills where the
    later regions continue the previous region's: when at least
    `min-regions` regions share its size, those fills move before it, so
    that it has their form and joins their loop (its GEMMs then accumulate
    into the zero-filled buffers). A region without a twin (a tail of
    another size) stays as it is. The final region joins its size's loop
    too, also when a bucket all-reduce overlaps with it
    (gacc-overlap-all-reduce starts it in the loop's last iteration); with
    such an all-reduce it does not become a call of a shared function (the
    all-reduce could only start after the call), it stays inline.
    Compile time and code size of the lowering then no longer grow with the
    number of micro-batches.
  }];
  let options = [
    Option<"minRegions", "min-regions", "int64_t", /*default=*/"2",
           "Outline a form only when at least this many regions share it">,
    Option<"traceRegions", "trace-regions", "bool", /*default=*/"false",
           "Mark each iteration of a region loop with runtime trace calls">,
    Option<"functions", "functions", "bool", /*default=*/"true",
           "Regions of one form that do not follow each other share a "
           "private function (else they stay inline)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
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
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
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

    Cheap pure operations (constants, views and casts of buffers, integer
    and index arithmetic) stay in place and are cloned into each chunk that
    uses them, so that a chunk addresses buffers from the same base
    pointers with the same constant offsets; other values the chunk uses
    are arguments, and its values used later are results. Stack allocations
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

def DeallocateBuffersPass : Pass<"gacc-deallocate-buffers", "ModuleOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Runs after bufferization on the straight-line steps gacc produces. Each
    `memref.alloc` whose uses (through views, casts and its address) all lie
    in its own block and that does not escape (returned, yielded, stored,
    or given to an op that hands out a memref, like `arith.select` or a call
    that returns one) gets a `memref.dealloc`
    after the last op in the block that uses it. This frees a micro-batch's
    activations when its region ends, so peak memory follows b, not B (the
    upstream ownership-based deallocation frees at the end of the block). A
    buffer that escapes its block is an error, never a silent leak.

    First, a statically shaped memref result of an `scf.if` that a branch
    yields from a buffer allocated inside it gets a buffer allocated before
    the `scf.if` (each branch copies what it yields into it), and such an
    iter_arg of an `scf.for` (bufferized with allow-return-allocs-from-loops)
    one buffer before the loop, holding a copy of the init value, which the
    body reads for the iter_arg and overwrites with what it yields at its
    end; the loop then no longer carries it. The branches' and the body's
    own buffers are then freed inside them.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
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

def StridedCopiesToLinalgPass
    : Pass<"gacc-strided-copies-to-linalg", "ModuleOp"> {
  let summary = "Turn memref.copy between strided views into linalg.copy";
  let description = [{
    Bufferized `tensor.insert_slice`, `tensor.concat` and `tensor.pad` copy
    into strided subviews. `memref.copy` with a non-identity layout lowers to
    a call of `memrefCopy` from MLIR's C runner utilities, which neither the
    JIT nor a compiled step links, and on the GPU it has no `gpu.memcpy`
    lowering. As `linalg.copy` such a copy becomes loops on the host and a
    kernel on the device. Copies between identity layouts stay (they lower
    to memcpy).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
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

def EraseGridsPass : Pass<"gacc-erase-grids", "ModuleOp"> {
  let summary = "Erase shard.grid symbols no collective refers to any more";
  let description = [{
    After bufferization the collectives are runtime calls; the device grids
    they named have no lowering and go away (a grid still referenced is an
    error).
  }];
}

def GpuPreparePass : Pass<"gacc-gpu-prepare", "ModuleOp"> {
  let summary = "Prepare a bufferized step for the GPU";
  let description = [{
    Runs after bufferization, BLAS calls and deallocation, before linalg is
    lowered to parallel loops and GPU kernels: buffers become device
    allocations (`gpu.alloc`/`gpu.dealloc`), copies become `gpu.memcpy`,
    and collectives call the CUDA runtime (`gaccrt_cuda_all_reduce`, NCCL;
    `gaccrt_all_reduce_start`/`_wait` of gacc-overlap-all-reduce become
    `gaccrt_cuda_all_reduce_start`/`_wait`).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def GpuSplitReductionsPass : Pass<"gacc-gpu-split-reductions", "ModuleOp"> {
  let summary = "Split reductions that would run in too few GPU threads";
  let description = [{
    After linalg is lowered to loops, before gacc-gpu-serial-kernels: a
    reduction loop (`store(combine(load(A[I]), x), A[I])`, I fixed for the
    loop) that would run serially in fewer than 8192 threads — a full
    reduction (one thread), or inside an `scf.parallel` of few iterations
    (a bias gradient over few columns) — with constant trip counts becomes
    one `scf.parallel` over the parallel iterations and C chunks of the
    reduced dimension. Chunk c reduces elements c, c + C, ... serially in a
    register (at least 8 each, consecutive chunks reading consecutive
    elements) and combines the partial result into A[I] with the
    `memref.atomic_rmw` of its combiner (add, max/min in all variants,
    and/or/xor), which keeps max/min/bitwise reductions exact; sums change
    their rounding order. Other combiners (mulf, muli) are left alone.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GpuSerialKernelsPass : Pass<"gacc-gpu-serial-kernels", "ModuleOp"> {
  let summary = "Run host loops and scalar code on device memory as kernels";
  let description = [{
    After linalg is lowered to loops: every run of host code that reads or
    writes memory (the serial loops of full reductions, rank-0 updates) is
    moved into a one-iteration `scf.parallel`, which becomes a one-thread
    GPU kernel, so that no host code touches device memory. A scalar such a
    run computes and later code uses (a count that divides a loss) is
    stored to a device scalar and loaded where it is used, inside later
    kernels; a value the host itself needs is an error.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect"];
}

def GpuInOrderStreamPass : Pass<"gacc-gpu-in-order-stream", "ModuleOp"> {
  let summary = "Put a function's device work on one stream, waited once";
  let description = [{
    Runs right before gpu-to-llvm, on synchronous gpu ops: every
    `gpu.alloc`, `gpu.dealloc`, `gpu.memcpy`, `gpu.memset` and
    `gpu.launch_func` of a function becomes async on one token created at
    its entry (`gpu.wait async`, one stream), and each return is preceded by
    `gpu.wait` on that token (one stream synchronization). The runtime's
    cuBLAS and NCCL calls use the same in-order stream, so the host does not
    wait between device operations. Unlike gpu-async-region this creates no
    stream per operation and the final wait lowers to a stream (not event)
    synchronization.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def GpuLoopOrderPass : Pass<"gacc-gpu-loop-order", "ModuleOp"> {
  let summary = "Order linalg loops for GPU kernels: parallel, innermost first";
  let description = [{
    Runs on buffers before linalg becomes parallel loops. Every linalg op
    (named ops generalized) gets its parallel dimensions first, innermost
    first, then its reductions: the reduction loops become serial loops
    inside the parallel ones (one thread per output element, not a serial
    loop around a parallel one, which ran as a one-thread kernel), and the
    innermost, contiguous dimension is the first of the parallel loop, the
    one tiled by the largest tile size and mapped to threadIdx.x.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def GpuMergeModulesPass : Pass<"gacc-gpu-merge-modules", "ModuleOp"> {
  let summary = "Merge the outlined kernels into one GPU module";
  let description = [{
    Runs after gpu-kernel-outlining, which makes one `gpu.module` per
    kernel: every kernel moves into the first module, named after its old
    module, and the `gpu.launch_func` ops follow. A step then loads one
    module (one PTX image) instead of one per kernel.
  }];
}

def UnshareEmptyTensorsPass
    : Pass<"gacc-unshare-empty-tensors", "ModuleOp"> {
  let summary = "Give every use of a tensor.empty its own tensor.empty";
  let description = [{
    Runs right before one-shot bufferization. A `tensor.empty` with several
    uses is replaced by one clone per use, placed right before the user.
    Canonicalization and CSE merge identical empties, so that in a deep step
    one empty is the destination of hundreds of ops; bufferization's analysis
    would check every pair of those in-place writes for conflicts (quadratic
    in the depth). An empty has no contents: the IR means the same.
  }];
  let dependentDialects = ["::mlir::tensor::TensorDialect"];
}

def CopyRepeatedResultsPass
    : Pass<"gacc-copy-repeated-results", "ModuleOp"> {
  let summary = "Give every returned tensor its own buffer";
  let description = [{
    Runs before bufferization. A value returned more than once (the loss also
    returned as a `gacc.metric`; a generic that yields its own `outs` and
    folds to it) is returned as a `linalg.copy` of itself at every repeat, so
    that each result bufferizes to its own buffer and becomes its own
    out-parameter.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def RequireLibdevicePass : Pass<"gacc-require-libdevice", "ModuleOp"> {
  let summary = "Fail when kernels call libdevice and it is not linked";
  let description = [{
    Runs in the CUDA lowering after the kernels are in the NVVM/LLVM
    dialects. A kernel module that declares a libdevice function (`__nv_*`,
    from math ops) while no libdevice bitcode is linked would become PTX with
    unresolved calls; this is an error at the kernel module naming the
    function and where libdevice was searched.
  }];
  let options = [
    Option<"libdevice", "libdevice", "std::string", /*default=*/"\"\"",
           "The libdevice bitcode that is linked (empty: none)">,
    Option<"searched", "searched", "std::string", /*default=*/"\"\"",
           "Where libdevice was looked for (for the message)">,
  ];
}

def GuardGathersPass : Pass<"gacc-guard-gathers", "ModuleOp"> {
  let summary = "Bounds-check and clamp data-dependent gather indices";
  let description = [{
    Runs before bufferization. A `tensor.extract` inside a linalg body whose
    index depends on tensor data (an embedding id, a class label) gets its
    index checked against the dimension and clamped into it, so no read is
    out of bounds. With `report` (the CPU path) an out-of-range index also
    calls `gaccrt_index_error(index, bound, site)`; the module attribute
    `gacc.gather_sites` describes each site (location, table and index
    arguments) for the tools' error message. Without `report` (the CUDA
    path) the index is only clamped. With `report`, each `gacc.scatter_add`
    gets a site too (`gacc.index_site`), which gacc-lower-scatter-add
    reports an out-of-range index to (the row is skipped).
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"true",
           "Call gaccrt_index_error for an out-of-range index">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def LowerScatterAddPass : Pass<"gacc-lower-scatter-add", "ModuleOp"> {
  let summary = "Lower gacc.scatter_add on buffers to loops";
  let description = [{
    Runs right after bufferization. Each `gacc.scatter_add` on buffers
    becomes loops that add the rows of `updates` into the rows of the
    accumulator `init` in place. An index outside `[0, rows)` skips its row
    (nothing is read or written out of bounds); where gacc-guard-gathers
    gave the op a site (`gacc.index_site`, the CPU path), it also calls
    `gaccrt_index_error(index, rows, site)`.

    Without `atomic` (the CPU path): a serial loop nest over the positions
    with an inner loop over the contiguous row (positions that name one row
    must not race). With `atomic` (the CUDA path): one `scf.parallel` over
    the row elements and the positions (the row innermost, so it maps to
    threadIdx.x) whose adds are `memref.atomic_rmw addf`.
  }];
  let options = [
    Option<"atomic", "atomic", "bool", /*default=*/"false",
           "One parallel loop with atomic adds (for GPU kernels)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
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

def ExpandDivisionsPass : Pass<"gacc-expand-divisions"> {
  let summary = "Expand arith's ceil/floor divisions (and the math ops LLVM "
                "lacks) for the LLVM lowering";
  let description = [{
    Both lowerings' `arith-expand-ops` without its expansion of
    `arith.maximumf`/`minimumf` into a compare and a select, which returns
    either zero for `maximumf(+0, -0)` (IEEE maximum is +0): `ceildivsi`,
    `ceildivui` and `floordivsi` become arithmetic, and the float
    maximum/minimum ops lower to LLVM's `llvm.maximum`/`minimum` (and
    `maxnum`/`minnum`), which keep signed zeros and NaNs. The math ops that
    no upstream conversion lowers to LLVM become arith: `math.clampf`
    (`minimumf(maximumf(x, min), max)`, torch's clamp; upstream's expansion
    in LLVM 22 returns `max` for every x below it), `math.isinf`
    (`|x| == inf`) and `math.isnormal` (`smallest normal <= |x| < inf`).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

#endif // GACC_LOWERING_PASSES_TD

//===- Passes.td - gacc lowering passes -------------------*- tablegen -*-===//
//
// Passes that lower a gradient-accumulated step towards the CPU.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_CONVERSION_PASSES_TD
#define GACC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def MatmulToBlasPass : Pass<"gacc-matmul-to-blas", "ModuleOp"> {
  let summary = "Turn f32 linalg.matmul on buffers into gaccrt_sgemm calls";
  let description = [{
    Runs after bufferization. Each `linalg.matmul` on f32 memrefs becomes a
    call to the runtime's `gaccrt_sgemm` (OpenBLAS `cblas_sgemm`): with
    beta = 0 when the op directly follows a zero `linalg.fill` of its output
    (the first region initializing an accumulator; the fill is dropped), with
    beta = 1 otherwise (accumulating in place). An operand that is the
    private result of a 2-D `linalg.transpose` is read through the transpose
    flag instead of the copy.
  }];
  let options = [
    Option<"callee", "callee", "std::string", /*default=*/"\"gaccrt_sgemm\"",
           "Runtime function to call (gaccrt_cuda_sgemm for cuBLAS)">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::arith::ArithDialect"];
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
    take it away from BLAS / cuBLAS.
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
    between the regions but is not affine in the offset is an argument too. Regions without a twin (the first
    region, which initializes the accumulators; a tail of another size) stay
    as they are. Compile time and code size of the lowering then no longer
    grow with the number of micro-batches.
  }];
  let options = [
    Option<"minRegions", "min-regions", "int64_t", /*default=*/"2",
           "Outline a form only when at least this many regions share it">,
    Option<"traceRegions", "trace-regions", "bool", /*default=*/"false",
           "Mark each iteration of a region loop with runtime trace calls">,
  ];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
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
  }];
  let dependentDialects = ["::mlir::cf::ControlFlowDialect"];
}

def DeallocateBuffersPass : Pass<"gacc-deallocate-buffers", "ModuleOp"> {
  let summary = "Free each buffer right after its last use";
  let description = [{
    Runs after bufferization on the straight-line steps gacc produces. Each
    `memref.alloc` whose uses (through views) all lie in its own block and
    that does not escape (returned, yielded, stored) gets a `memref.dealloc`
    after the last op in the block that uses it. This frees a micro-batch's
    activations when its region ends, so peak memory follows b, not B (the
    upstream ownership-based deallocation frees at the end of the block). A
    buffer that escapes its block is an error, never a silent leak.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
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
    and collectives call the CUDA runtime (`gaccrt_cuda_all_reduce`, NCCL).
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def GpuSerialKernelsPass : Pass<"gacc-gpu-serial-kernels", "ModuleOp"> {
  let summary = "Run host loops and scalar code on device memory as kernels";
  let description = [{
    After linalg is lowered to loops: every run of host code that reads or
    writes memory (the serial loops of full reductions, rank-0 updates) is
    moved into a one-iteration `scf.parallel`, which becomes a one-thread
    GPU kernel, so that no host code touches device memory.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

#endif // GACC_CONVERSION_PASSES_TD

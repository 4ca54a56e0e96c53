//===- Passes.td - lowering passes of the CUDA target ------*- tablegen -*-===//
//
// The lowering passes that only gacc-lower-to-cuda runs, in the order it
// runs them. Defined in lib/Lowering/CUDA (library GaccLoweringCUDA),
// registered by registerGaccLoweringCUDAPasses().
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_CUDA_PASSES_TD
#define GACC_LOWERING_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def GpuPreparePass : Pass<"gacc-gpu-prepare", "ModuleOp"> {
  let summary = "Prepare a bufferized step for the GPU";
  let description = [{
    Runs after bufferization, BLAS calls and deallocation, before linalg is
    lowered to parallel loops and GPU kernels: buffers become device
    allocations (`gpu.alloc`/`gpu.dealloc`), copies become `gpu.memcpy`,
    and collectives call the CUDA runtime (`gaccrt_cuda_all_reduce`, NCCL;
    `gaccrt_all_reduce_start`/`_wait` of gacc-overlap-all-reduce become
    `gaccrt_cuda_all_reduce_start`/`_wait`; shard-optimizer-state's
    `gaccrt_reduce_scatter`/`gaccrt_all_gather` become
    `gaccrt_cuda_reduce_scatter`/`_all_gather`, ncclReduceScatter and
    ncclAllGather).
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

def GpuMergeModulesPass : Pass<"gacc-gpu-merge-modules", "ModuleOp"> {
  let summary = "Merge the outlined kernels into one GPU module";
  let description = [{
    Runs after gpu-kernel-outlining, which makes one `gpu.module` per
    kernel: every kernel moves into the first module, named after its old
    module, and the `gpu.launch_func` ops follow. A step then loads one
    module (one PTX image) instead of one per kernel.
  }];
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

#endif // GACC_LOWERING_CUDA_PASSES_TD

// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2" --gacc-lower-to-cuda="kernels-only" | FileCheck %s
// The same as a textual pass pipeline (gpu-map-parallel-loops nests on
// func.func):
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2" | gacc-opt --pass-pipeline='builtin.module(gacc-lower-to-cuda{kernels-only})' | FileCheck %s
// Every region inline (outline-micro-batches=false):
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2" --gacc-lower-to-cuda="kernels-only outline-micro-batches=false" | FileCheck %s --check-prefix=INLINE
// Without overlap: one blocking all-reduce after the final region.
// RUN: gacc-opt %S/../../Transforms/Inputs/linear-step.mlir --gacc-pipeline="micro-batches=2 overlap-all-reduce=false" --gacc-lower-to-cuda="kernels-only" | FileCheck %s --check-prefix=BLOCKING
// The PTX, LLVMIR and STREAM checks run from lower-to-cuda-serialized.test
// (they need the CUDA toolkit).

// The CUDA lowering of linear-step.mlir (B = 8, m = 2): the bucket and every
// buffer in device memory; the bias accumulator zero-filled by a kernel
// before one loop over both regions (outline-micro-batches: one body and one
// set of kernels for every m), whose offset is the induction variable times
// b = 4; the weight-gradient GEMM as cuBLAS with beta = 0 in the first
// iteration (no fill of its accumulator) and 1 in the second; the rest as
// kernels with
// real launch configurations (32 x 8 threads for 2-D loops); exactly one
// NCCL all-reduce of the bucket, started in the loop's last iteration after
// its last write into the bucket (the bias-gradient kernel) with the handle
// kept in a host stack slot, and waited for (by the compute stream, on the
// device) right before the epilogue's first read of it (the copy of the
// weight gradient out of the bucket), not before the loss kernel, which
// does not read it; no host code touching device memory.

// CHECK-LABEL: func.func @linear
// CHECK:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK:         %[[SLOT:.*]] = memref.alloca() : memref<i64>
// CHECK:         %[[BUCKET:.*]] = gpu.alloc () : memref<32xi8>
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.load
// CHECK:         memref.expand_shape
// CHECK-NEXT:    gpu.launch_func @linear_kernel::@linear_kernel_0 {{.*}} args({{.*}} : memref<2xf32>)
// CHECK-NEXT:    scf.for %[[IV:.*]] = %c0 to %c2 step %c1 {
// CHECK-NEXT:      %[[OFFSET:.*]] = arith.muli %[[IV]], %c4 : index
// CHECK:           call @gaccrt_trace_region_begin
// CHECK-NEXT:      memref.subview %{{.*}}[%[[OFFSET]], 0] [4, 3] [1, 1]
// CHECK:           call @gaccrt_cuda_sgemm(%{{.*}}, %{{.*}}, %[[ONE]], %{{.*}},
// CHECK:           gpu.launch_func @linear_kernel{{.*}} blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c32, %c8, %c1)
// CHECK:           %[[FIRST:.*]] = arith.cmpi eq, %[[IV]], %c0
// CHECK-NEXT:      %[[BETA:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[ONE]] : f32
// CHECK:           call @gaccrt_cuda_sgemm(%{{.*}}, %{{.*}}, %[[ONE]], %[[BETA]],
// CHECK-NOT:       call @gaccrt_cuda_all_reduce
// CHECK:           gpu.launch_func {{.*}}%[[BIAS:view[_0-9]*]] : memref<2xf32>
// CHECK-NEXT:      gpu.dealloc
// CHECK-NEXT:      %[[NEXT:.*]] = arith.addi %[[IV]], %c1
// CHECK-NEXT:      %[[LAST:.*]] = arith.cmpi sge, %[[NEXT]], %c2
// CHECK-NEXT:      scf.if %[[LAST]] {
// CHECK-NEXT:        %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[ALL:view[_0-9]*]] : memref<8xf32>
// CHECK-NEXT:        %[[ADDR64:.*]] = arith.index_cast %[[ADDR]]
// CHECK-NEXT:        %[[HANDLE:.*]] = func.call @gaccrt_cuda_all_reduce_start(%[[ADDR64]], %c8_i64, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i32, i32, i64) -> i64
// CHECK-NEXT:        memref.store %[[HANDLE]], %[[SLOT]][] : memref<i64>
// CHECK-NEXT:      }
// CHECK-NEXT:      call @gaccrt_trace_region_end
// CHECK-NEXT:    }
// CHECK-NEXT:    gpu.launch_func
// CHECK-NOT:     gpu.memcpy
// CHECK:         %[[LOADED:.*]] = memref.load %[[SLOT]][] : memref<i64>
// CHECK-NEXT:    %[[ADDR2:.*]] = memref.extract_aligned_pointer_as_index %[[ALL]] : memref<8xf32>
// CHECK-NEXT:    %[[ADDR2_64:.*]] = arith.index_cast %[[ADDR2]]
// CHECK-NEXT:    call @gaccrt_cuda_all_reduce_wait(%[[LOADED]], %[[ADDR2_64]]) : (i64, i64) -> ()
// CHECK-NEXT:    gpu.memcpy
// CHECK-NOT:     call @gaccrt_cuda_all_reduce
// CHECK-NOT:     memref.load
// CHECK:         return
// CHECK:       gpu.module @linear_kernel
// CHECK:         gpu.func @linear_kernel({{.*}}) kernel

// With outline-micro-batches=false, every region inline: the bucket and
// every buffer in device memory; the weight-gradient GEMM as cuBLAS with
// beta = 0 in region 0 and beta = 1 in region 1; the rest as kernels with real launch
// configurations (32 x 8 threads for 2-D loops); exactly one NCCL all-reduce
// of the bucket, started inside the final region right after its last write
// into the bucket (the bias-gradient kernel) and waited for (by the compute
// stream, on the device) right before the epilogue's first read of it (the
// copy of the weight gradient out of the bucket), not before the loss
// kernel, which does not read it; no host code touching device memory.

// INLINE-LABEL: func.func @linear
// INLINE:         %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// INLINE:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// INLINE:         %[[BUCKET:.*]] = gpu.alloc () : memref<32xi8>
// INLINE-NOT:     memref.alloc
// INLINE-NOT:     memref.load
// INLINE:         call @gaccrt_trace_region_begin
// INLINE:         call @gaccrt_cuda_sgemm(%{{.*}}, %{{.*}}, %[[ONE]], %[[ZERO]],
// INLINE:         gpu.launch_func @linear_kernel{{.*}} blocks in (%{{.*}}, %{{.*}}, %{{.*}}) threads in (%c32, %c8, %c1)
// INLINE:         call @gaccrt_cuda_sgemm(%{{.*}}, %{{.*}}, %[[ONE]], %[[ZERO]],
// INLINE:         call @gaccrt_trace_region_end
// INLINE:         call @gaccrt_trace_region_begin
// INLINE:         call @gaccrt_cuda_sgemm(%{{.*}}, %{{.*}}, %[[ONE]], %[[ZERO]],
// INLINE:         call @gaccrt_cuda_sgemm(%{{.*}}, %{{.*}}, %[[ONE]], %[[ONE]],
// INLINE-NOT:     call @gaccrt_cuda_all_reduce
// INLINE:         gpu.launch_func {{.*}}%[[BIAS:view[_0-9]*]] : memref<2xf32>
// INLINE-NEXT:    gpu.dealloc
// INLINE-NEXT:    %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[ALL:view[_0-9]*]] : memref<8xf32>
// INLINE-NEXT:    %[[ADDR64:.*]] = arith.index_cast %[[ADDR]]
// INLINE-NEXT:    %[[HANDLE:.*]] = call @gaccrt_cuda_all_reduce_start(%[[ADDR64]], %c8_i64, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i32, i32, i64) -> i64
// INLINE-NEXT:    call @gaccrt_trace_region_end
// INLINE-NEXT:    gpu.launch_func
// INLINE-NOT:     gpu.memcpy
// INLINE:         %[[ADDR2:.*]] = memref.extract_aligned_pointer_as_index %[[ALL]] : memref<8xf32>
// INLINE-NEXT:    %[[ADDR2_64:.*]] = arith.index_cast %[[ADDR2]]
// INLINE-NEXT:    call @gaccrt_cuda_all_reduce_wait(%[[HANDLE]], %[[ADDR2_64]]) : (i64, i64) -> ()
// INLINE-NEXT:    gpu.memcpy
// INLINE-NOT:     call @gaccrt_cuda_all_reduce
// INLINE-NOT:     memref.load
// INLINE:         return
// INLINE:       gpu.module @linear_kernel
// INLINE:         gpu.func @linear_kernel({{.*}}) kernel

// BLOCKING-LABEL: func.func @linear
// BLOCKING:         scf.for
// BLOCKING:           call @gaccrt_cuda_sgemm(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}},
// BLOCKING-NOT:       scf.if
// BLOCKING:           call @gaccrt_trace_region_end
// BLOCKING-NEXT:    }
// BLOCKING-NOT:     call @gaccrt_cuda_all_reduce
// BLOCKING:         call @gaccrt_cuda_all_reduce(%{{.*}}, %c8_i64, %{{.*}}, %{{.*}}, %{{.*}}) : (i64, i64, i32, i32, i64) -> ()
// BLOCKING-NOT:     call @gaccrt_cuda_all_reduce
// BLOCKING:         gpu.memcpy
// BLOCKING:         return

// Fully lowered: host code in LLVM, kernels as PTX for sm_90.
// PTX:     llvm.func @linear
// PTX:     llvm.call @gaccrt_cuda_sgemm
// PTX:     gpu.launch_func
// PTX:     llvm.call @gaccrt_cuda_all_reduce_start
// PTX:     llvm.call @gaccrt_trace_region_end
// PTX:     llvm.call @gaccrt_cuda_all_reduce_wait
// PTX-NOT: llvm.call @gaccrt_cuda_all_reduce
// PTX:     gpu.binary @linear_kernel {{.*}}#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80"{{.*}}assembly = "{{.*}}.target sm_90

// RUN: gacc-opt %examples/lm_head_masked.mlir --gacc-pipeline="micro-batches=2" --gacc-lower-to-cuda="kernels-only" | FileCheck %s --check-prefix=LM
// The LM head's weight gradient, written as a generic contraction over
// samples and tokens, is a cuBLAS GEMM too, next to the forward GEMM of each
// region, in the one loop body of both regions.
// LM-LABEL: func.func @train_step
// LM:         scf.for
// LM-COUNT-2:   call @gaccrt_cuda_sgemm
// LM:           call @gaccrt_trace_region_end
// LM-NEXT:    }
// LM-NOT:     call @gaccrt_cuda_sgemm

// The lowered step translates to LLVM IR (what the ExecutionEngine JITs):
// kernels loaded once from PTX by a global constructor, device memory and
// launches through the MLIR GPU runtime ABI that libgaccrt_cuda implements.
// LLVMIR: @llvm.global_ctors
// LLVMIR: define void @train_step(
// LLVMIR: call ptr @mgpuMemAlloc(
// LLVMIR: call void @gaccrt_cuda_sgemm(
// LLVMIR: call void @mgpuLaunchKernel(
// LLVMIR: call i64 @gaccrt_cuda_all_reduce_start(
// LLVMIR: call void @gaccrt_cuda_all_reduce_wait(
// LLVMIR: call ptr @mgpuModuleLoadJIT(

// One in-order stream per step: created once at entry, synchronized and
// destroyed once before the return; no event waits, and no host wait
// between the GEMMs, kernels and allocations of the regions (cuBLAS runs on
// the same stream). All kernels are in one GPU module.
// STREAM-LABEL: llvm.func @train_step(
// STREAM:         %[[STREAM:.*]] = llvm.call @mgpuStreamCreate()
// STREAM-NOT:     {{mgpuStream|mgpuEvent}}
// STREAM:         llvm.call @gaccrt_cuda_sgemm
// STREAM-NOT:     {{mgpuStream|mgpuEvent}}
// STREAM:         llvm.call @mgpuStreamSynchronize(%[[STREAM]])
// STREAM-NEXT:    llvm.call @mgpuStreamDestroy(%[[STREAM]])
// STREAM-NEXT:    llvm.return
// STREAM-NOT:     {{mgpuStream|mgpuEvent}}
// STREAM-COUNT-1: gpu.binary
// STREAM-NOT:     gpu.binary

// RUN: %PYTHON %gacc_src_root/bench/gen_mlp.py --batch 256 --dims 512,512,512,512,10 > %t.bench.mlir
// RUN: gacc-opt %t.bench.mlir --gacc-pipeline="micro-batches=4" --gacc-lower-to-cuda="kernels-only" | FileCheck %s --check-prefix=BENCH
// The bench MLP (bench/gen_mlp.py's defaults, m = 4): no launch is one
// thread (the bias gradients and the loss sum are split into chunks that
// add atomically; test/Lowering/CUDA/bench-mlp-kernels.test checks the threads that
// work); the GEMMs follow each other with no host wait.
// BENCH-LABEL: func.func @train_step
// BENCH-NOT:     threads in (%c1, %c1, %c1)
// BENCH-NOT:     gpu.wait
// BENCH:         memref.atomic_rmw addf
// BENCH-NOT:     threads in (%c1, %c1, %c1)

// RUN: gacc-opt %S/../../Robustness/Inputs/divide-by-batch.mlir --gacc-pipeline="micro-batches=2" --gacc-lower-to-cuda="kernels-only" | FileCheck %s --check-prefix=DIV
// RUN: gacc-opt %S/../../Robustness/Inputs/divide-by-batch.mlir --gacc-pipeline="micro-batches=2" --gacc-lower-to-cuda | FileCheck %s --check-prefix=DIV-PTX
// An integer division by a batch value (gacc-guard-divisions without
// `report`): the kernel divides by 1 where the divisor is 0 (or INT_MIN /
// -1) instead, and reports nothing (kernels cannot call the host runtime).
// DIV-NOT:     gacc.gather_sites
// DIV-NOT:     gaccrt_index_error
// DIV:         gpu.func @train_step_kernel
// DIV:           %[[BAD:.*]] = arith.ori
// DIV:           %[[DIVISOR:.*]] = arith.select %[[BAD]], %{{.*}}, %{{.*}} : i32
// DIV-NEXT:      arith.divsi %{{.*}}, %[[DIVISOR]] : i32
// DIV-PTX:     gpu.binary @train_step_kernel

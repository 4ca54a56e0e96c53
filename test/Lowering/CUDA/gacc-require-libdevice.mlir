// RUN: gacc-opt %s --split-input-file --gacc-require-libdevice="searched=/opt/cuda/nvvm/libdevice" --verify-diagnostics | FileCheck %s
// RUN: gacc-opt %s --split-input-file --gacc-require-libdevice="libdevice=/opt/cuda/nvvm/libdevice/libdevice.10.bc" | FileCheck %s --check-prefix=LINKED

// A kernel module without libdevice calls passes.
// CHECK-LABEL: gpu.module @plain
// LINKED-LABEL: gpu.module @plain
gpu.module @plain {
  llvm.func @sinf(f32) -> f32
}

// -----

// With libdevice linked, declared __nv_ functions are fine.
// LINKED-LABEL: gpu.module @kernels
// LINKED:         llvm.func @__nv_expf
// expected-error @below {{kernels call the libdevice function '__nv_expf' but libdevice was not found at '/opt/cuda/nvvm/libdevice'; set the cuda-path option (or CUDA_HOME) to a CUDA toolkit}}
gpu.module @kernels {
  llvm.func @__nv_expf(f32) -> f32
}

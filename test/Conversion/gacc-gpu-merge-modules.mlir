// RUN: gacc-opt %s --gacc-gpu-merge-modules | FileCheck %s

// The kernels of three outlined modules end up in the first one, named after
// their modules, and the launches follow.

// CHECK-LABEL: func.func @step
// CHECK:         gpu.launch_func  @step_kernel::@step_kernel
// CHECK:         gpu.launch_func  @step_kernel::@step_kernel_0
// CHECK:         gpu.launch_func  @step_kernel::@step_kernel_1
// CHECK:       gpu.module @step_kernel {
// CHECK:         gpu.func @step_kernel(
// CHECK:         gpu.func @step_kernel_0(
// CHECK:         gpu.func @step_kernel_1(
// CHECK:       }
// CHECK-NOT:   gpu.module
module attributes {gpu.container_module} {
  func.func @step(%a: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @step_kernel::@step_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @step_kernel_0::@step_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @step_kernel_1::@step_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    return
  }
  gpu.module @step_kernel {
    gpu.func @step_kernel(%a: memref<8xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @step_kernel_0 {
    gpu.func @step_kernel(%a: memref<8xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @step_kernel_1 {
    gpu.func @step_kernel(%a: memref<8xf32>) kernel {
      gpu.return
    }
  }
}

// RUN: gacc-opt %s --split-input-file --gacc-gpu-merge-modules | FileCheck %s

// The kernels of three outlined modules (each storing its own constant) end
// up in the first one, named after their modules, and the launches follow.

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
      %c0 = arith.constant 0 : index
      %v = arith.constant 1.0 : f32
      memref.store %v, %a[%c0] : memref<8xf32>
      gpu.return
    }
  }
  gpu.module @step_kernel_0 {
    gpu.func @step_kernel(%a: memref<8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = arith.constant 2.0 : f32
      memref.store %v, %a[%c0] : memref<8xf32>
      gpu.return
    }
  }
  gpu.module @step_kernel_1 {
    gpu.func @step_kernel(%a: memref<8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %v = arith.constant 3.0 : f32
      memref.store %v, %a[%c0] : memref<8xf32>
      gpu.return
    }
  }
}

// -----

// A kernel equal to one already merged (the same signature, attributes and
// body; here the second and third module's) is not copied: its launches use
// the merged one. A kernel that differs in a constant stays its own.

// CHECK-LABEL: func.func @repeated
// CHECK:         gpu.launch_func  @repeated_kernel::@repeated_kernel
// CHECK:         gpu.launch_func  @repeated_kernel::@repeated_kernel_0
// CHECK:         gpu.launch_func  @repeated_kernel::@repeated_kernel_0
// CHECK:         gpu.launch_func  @repeated_kernel::@repeated_kernel_2
// CHECK:       gpu.module @repeated_kernel {
// CHECK:         gpu.func @repeated_kernel(
// CHECK:           arith.constant 1.000000e+00
// CHECK:         gpu.func @repeated_kernel_0(
// CHECK:           arith.constant 2.000000e+00
// CHECK:         gpu.func @repeated_kernel_2(
// CHECK:           arith.constant 3.000000e+00
// CHECK:       }
// CHECK-NOT:   gpu.func
module attributes {gpu.container_module} {
  func.func @repeated(%a: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @repeated_kernel::@repeated_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @repeated_kernel_0::@repeated_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @repeated_kernel_1::@repeated_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    gpu.launch_func @repeated_kernel_2::@repeated_kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<8xf32>)
    return
  }
  gpu.module @repeated_kernel {
    gpu.func @repeated_kernel(%a: memref<8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %one = arith.constant 1.0 : f32
      memref.store %one, %a[%c0] : memref<8xf32>
      gpu.return
    }
  }
  gpu.module @repeated_kernel_0 {
    gpu.func @repeated_kernel(%a: memref<8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %two = arith.constant 2.0 : f32
      memref.store %two, %a[%c0] : memref<8xf32>
      gpu.return
    }
  }
  gpu.module @repeated_kernel_1 {
    gpu.func @repeated_kernel(%a: memref<8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %two = arith.constant 2.0 : f32
      memref.store %two, %a[%c0] : memref<8xf32>
      gpu.return
    }
  }
  gpu.module @repeated_kernel_2 {
    gpu.func @repeated_kernel(%a: memref<8xf32>) kernel {
      %c0 = arith.constant 0 : index
      %three = arith.constant 3.0 : f32
      memref.store %three, %a[%c0] : memref<8xf32>
      gpu.return
    }
  }
}

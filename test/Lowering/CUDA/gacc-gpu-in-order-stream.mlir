// RUN: gacc-opt %s --split-input-file --gacc-gpu-in-order-stream --verify-diagnostics | FileCheck %s

// Every device op goes on the one stream created at entry; the host waits
// for it once, before the return. Host calls in between (cuBLAS) do not wait.

// CHECK-LABEL: func.func @step
// CHECK:         %[[STREAM:.*]] = gpu.wait async
// CHECK:         %[[BUF:.*]], %{{.*}} = gpu.alloc async [%[[STREAM]]] () : memref<8xf32>
// CHECK:         gpu.memcpy async [%[[STREAM]]] %[[BUF]]
// CHECK:         gpu.launch_func async [%[[STREAM]]] @step_kernel::@k
// CHECK-NEXT:    call @gemm
// CHECK-NEXT:    gpu.launch_func async [%[[STREAM]]] @step_kernel::@k
// CHECK:         gpu.dealloc async [%[[STREAM]]] %[[BUF]]
// CHECK-NEXT:    gpu.wait [%[[STREAM]]]
// CHECK-NEXT:    return
// CHECK-NOT:     gpu.wait

module attributes {gpu.container_module} {
  func.func private @gemm(memref<8xf32>)
  func.func @step(%host: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    %buf = gpu.alloc () : memref<8xf32>
    gpu.memcpy %buf, %host : memref<8xf32>, memref<8xf32>
    gpu.launch_func @step_kernel::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<8xf32>)
    call @gemm(%buf) : (memref<8xf32>) -> ()
    gpu.launch_func @step_kernel::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<8xf32>)
    gpu.dealloc %buf : memref<8xf32>
    return
  }
  gpu.module @step_kernel {
    gpu.func @k(%a: memref<8xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// A private function (the shared body of micro-batch regions, called by the
// step) runs on the stream it gets at entry, which is the runtime's one
// compute stream, and does not wait for it; the public step does.

// CHECK-LABEL: func.func private @body
// CHECK:         %[[STREAM:.*]] = gpu.wait async
// CHECK:         gpu.launch_func async [%[[STREAM]]] @step_kernel::@k
// CHECK-NEXT:    return
// CHECK-LABEL: func.func @caller
// CHECK:         %[[STREAM2:.*]] = gpu.wait async
// CHECK:         call @body
// CHECK-NEXT:    gpu.dealloc async [%[[STREAM2]]]
// CHECK-NEXT:    gpu.wait [%[[STREAM2]]]
// CHECK-NEXT:    return

module attributes {gpu.container_module} {
  func.func private @body(%buf: memref<8xf32>) {
    %c1 = arith.constant 1 : index
    gpu.launch_func @step_kernel::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<8xf32>)
    return
  }
  func.func @caller(%host: memref<8xf32>) {
    %buf = gpu.alloc () : memref<8xf32>
    call @body(%buf) : (memref<8xf32>) -> ()
    gpu.dealloc %buf : memref<8xf32>
    return
  }
  gpu.module @step_kernel {
    gpu.func @k(%a: memref<8xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// A function that orders its device work already is an error.

module attributes {gpu.container_module} {
  // expected-error @below {{already has gpu.wait ops; gacc-gpu-in-order-stream orders a function that has none}}
  func.func @ordered() {
    %t = gpu.wait async
    gpu.wait [%t]
    return
  }
}

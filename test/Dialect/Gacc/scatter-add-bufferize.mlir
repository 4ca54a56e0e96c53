// RUN: gacc-opt %s --split-input-file --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s

// gacc.scatter_add bufferizes in destination-passing style: in place on its
// init's buffer when nothing reads the init afterwards...
// CHECK-LABEL: func.func @in_place
// CHECK-SAME:    (%[[U:.*]]: memref<4x5xf32>, %[[IDS:.*]]: memref<4xi64>, %[[ACC:.*]]: memref<7x5xf32>)
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK:         gacc.scatter_add ins(%[[U]], %[[IDS]] : memref<4x5xf32>, memref<4xi64>) outs(%[[ACC]] : memref<7x5xf32>) {gacc.partial}
// CHECK:         return %[[ACC]]
func.func @in_place(%u: tensor<4x5xf32>, %ids: tensor<4xi64>, %acc: tensor<7x5xf32>) -> tensor<7x5xf32> {
  %r = gacc.scatter_add ins(%u, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%acc : tensor<7x5xf32>) -> tensor<7x5xf32> {gacc.partial}
  return %r : tensor<7x5xf32>
}

// -----

// ... and into a copy when the init is read after it.
// CHECK-LABEL: func.func @init_read_after
// CHECK-SAME:    (%{{.*}}: memref<4x5xf32>, %{{.*}}: memref<4xi64>, %[[ACC:.*]]: memref<7x5xf32>)
// CHECK:         %[[COPY:.*]] = memref.alloc() {{.*}} : memref<7x5xf32>
// CHECK:         memref.copy %[[ACC]], %[[COPY]]
// CHECK:         gacc.scatter_add ins(%{{.*}}, %{{.*}} : memref<4x5xf32>, memref<4xi64>) outs(%[[COPY]] : memref<7x5xf32>)
// CHECK:         return %[[COPY]], %[[ACC]]
func.func @init_read_after(%u: tensor<4x5xf32>, %ids: tensor<4xi64>, %acc: tensor<7x5xf32>) -> (tensor<7x5xf32>, tensor<7x5xf32>) {
  %r = gacc.scatter_add ins(%u, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%acc : tensor<7x5xf32>) -> tensor<7x5xf32>
  return %r, %acc : tensor<7x5xf32>, tensor<7x5xf32>
}

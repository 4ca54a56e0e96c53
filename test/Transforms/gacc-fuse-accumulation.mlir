// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-micro-batch="micro-batches=2" --gacc-fuse-accumulation | FileCheck %s --check-prefix=M2
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-micro-batch="micro-batches=4" --gacc-fuse-accumulation | FileCheck %s --check-prefix=M4
// RUN: gacc-opt %S/Inputs/linear-step.mlir --gacc-micro-batch="micro-batches=1" --gacc-fuse-accumulation | FileCheck %s --check-prefix=M1
// RUN: gacc-opt %s --gacc-micro-batch="micro-batches=2" --gacc-fuse-accumulation="accumulate-type=f32" | FileCheck %s --check-prefix=F32
// RUN: gacc-opt %s --gacc-micro-batch="micro-batches=2" --gacc-fuse-accumulation | FileCheck %s --check-prefix=BF16

// The gradient reductions of region k > 0 write into the accumulator that
// region k-1 produced; the first region starts from the zero fill; no
// partials are combined after the regions.

// M2-LABEL: func.func @linear
// M2:         %[[ZW:.*]] = linalg.fill ins(%{{.*}}) outs(%{{.*}} : tensor<3x2xf32>)
// M2:         %[[ZB:.*]] = linalg.fill ins(%{{.*}}) outs(%{{.*}} : tensor<2xf32>)
// M2:         %[[R0:.*]]:3 = gacc.micro_batch 0
// M2:           %[[GW0:.*]] = linalg.matmul {gacc.partial} ins({{.*}}) outs(%[[ZW]] : tensor<3x2xf32>)
// M2:           %[[GB0:.*]] = linalg.generic {{.*}} outs(%[[ZB]] : tensor<2xf32>)
// M2:           gacc.yield %{{.*}}, %[[GW0]], %[[GB0]]
// M2:         %[[R1:.*]]:3 = gacc.micro_batch 1
// M2:           linalg.reduce {{.*}} outs(%[[R0]]#0 : tensor<f32>)
// M2:           linalg.matmul {gacc.partial} ins({{.*}}) outs(%[[R0]]#1 : tensor<3x2xf32>)
// M2:           linalg.generic {{.*}} outs(%[[R0]]#2 : tensor<2xf32>)
// M2-NOT:     gacc.combine
// M2:         shard.all_reduce %[[R1]]#1
// M2:         shard.all_reduce %[[R1]]#2

// M4-LABEL: func.func @linear
// M4:         %[[R0:.*]]:3 = gacc.micro_batch 0
// M4:         %[[R1:.*]]:3 = gacc.micro_batch 1
// M4:           linalg.matmul {gacc.partial} ins({{.*}}) outs(%[[R0]]#1 : tensor<3x2xf32>)
// M4:         %[[R2:.*]]:3 = gacc.micro_batch 2
// M4:           linalg.matmul {gacc.partial} ins({{.*}}) outs(%[[R1]]#1 : tensor<3x2xf32>)
// M4:         %[[R3:.*]]:3 = gacc.micro_batch 3
// M4:           linalg.matmul {gacc.partial} ins({{.*}}) outs(%[[R2]]#1 : tensor<3x2xf32>)
// M4-NOT:     gacc.combine
// M4:         shard.all_reduce %[[R3]]#1

// M1-LABEL: func.func @linear
// M1:         %[[R0:.*]]:3 = gacc.micro_batch 0 offset 0 size 8
// M1-NOT:     gacc.combine
// M1:         shard.all_reduce %[[R0]]#1

// A bf16 step with accumulate-type=f32: the accumulators are f32 in every
// region (the reduction body widens its operand), and the result is truncated
// once after the final region. Without the option they stay bf16.

// F32-LABEL: func.func @bf16
// F32:         %[[R0:.*]] = gacc.micro_batch 0 offset 0 size 2 -> (tensor<3xf32>)
// F32:           %[[Z:.*]] = arith.extf %{{.*}} : bf16 to f32
// F32:           %[[F:.*]] = linalg.fill ins(%[[Z]] : f32) outs(%{{.*}} : tensor<3xf32>)
// F32:           linalg.generic {{.*}} outs(%[[F]] : tensor<3xf32>)
// F32:           ^bb0(%{{.*}}: bf16, %{{.*}}: bf16, %[[ACC:.*]]: f32):
// F32:             %[[WIDE:.*]] = arith.extf %{{.*}} : bf16 to f32
// F32:             arith.addf %[[ACC]], %[[WIDE]] : f32
// F32:         %[[R1:.*]] = gacc.micro_batch 1 offset 2 size 2 -> (tensor<3xf32>)
// F32:           linalg.generic {{.*}} outs(%[[R0]] : tensor<3xf32>)
// F32:         %[[T:.*]] = arith.truncf %[[R1]] : tensor<3xf32> to tensor<3xbf16>
// F32:         return %{{.*}}, %[[T]]

// BF16-LABEL: func.func @bf16
// BF16:         gacc.micro_batch 0 offset 0 size 2 -> (tensor<3xbf16>)
// BF16-NOT:     arith.truncf
// BF16-NOT:     arith.extf
// BF16:         return
func.func @bf16(%w: tensor<3xbf16> {gacc.param}, %x: tensor<4x3xbf16> {gacc.batch = 0 : i64},
                %d: tensor<4xbf16> {gacc.batch = 0 : i64})
    -> (tensor<bf16> {gacc.loss}, tensor<3xbf16> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<3xbf16>
  %f = linalg.fill ins(%zero : bf16) outs(%e : tensor<3xbf16>) -> tensor<3xbf16>
  %g = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>,
                                        affine_map<(d0, d1) -> (d1)>],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x, %d : tensor<4x3xbf16>, tensor<4xbf16>) outs(%f : tensor<3xbf16>) {
    ^bb0(%a: bf16, %b: bf16, %acc: bf16):
      %0 = arith.mulf %a, %b : bf16
      %1 = arith.addf %acc, %0 : bf16
      linalg.yield %1 : bf16
  } -> tensor<3xbf16>
  %loss = arith.constant dense<0.0> : tensor<bf16>
  return %loss, %g : tensor<bf16>, tensor<3xbf16>
}

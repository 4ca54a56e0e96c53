// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=2" | FileCheck %s --check-prefix=M2
// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batch-sizes=3,1" | FileCheck %s --check-prefix=S31
// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=2" --gacc-fuse-accumulation | FileCheck %s --check-prefix=FUSE
// RUN: gacc-opt %s --split-input-file --gacc-micro-batch="micro-batches=2" --gacc-fuse-accumulation="accumulate-type=f32" | FileCheck %s --check-prefix=F32
// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batches=2" | FileCheck %s --check-prefix=PIPE
// RUN: gacc-opt %s --split-input-file --gacc-pipeline="micro-batches=2 loss-scale=static=1024" | FileCheck %s --check-prefix=SCALE

// An embedding's gradient as gacc.scatter_add through gacc-micro-batch,
// gacc-fuse-accumulation, gacc-sink-all-reduce and gacc-loss-scale: each
// region scatters its own samples' rows (ids and updates sliced like every
// per-sample value) and, fused, adds them into the running accumulator:
// region 0 starts from the step's zero fill, region 1 continues region 0's
// result in place (no second fill, no add after the regions). The
// accumulator is a member of the gradient bucket; loss scaling scales the
// scattered rows. (gacc-runtime-batch-size refuses it:
// gacc-runtime-batch-size.mlir.)

shard.grid @dp(shape = ?) {sym_visibility = "private"}

// M2-LABEL: func.func @embed
// M2:         %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<7x5xf32>)
// M2:         %[[R0:.*]]:2 = gacc.micro_batch 0 offset 0 size 2
// M2:           %[[IDS0:.*]] = tensor.extract_slice %arg1[0] [2] [1] : tensor<4xi64> to tensor<2xi64>
// M2:           %[[G0:.*]] = tensor.extract_slice %arg2[0, 0] [2, 5] [1, 1] : tensor<4x5xf32> to tensor<2x5xf32>
// M2:           %[[U0:.*]] = arith.mulf %[[G0]]
// M2:           %[[S0:.*]] = gacc.scatter_add ins(%[[U0]], %[[IDS0]] : tensor<2x5xf32>, tensor<2xi64>) outs(%[[ZERO]] : tensor<7x5xf32>) -> tensor<7x5xf32> {gacc.partial}
// M2:           gacc.yield %{{.*}}, %[[S0]]
// M2:         %[[R1:.*]]:2 = gacc.micro_batch 1 offset 2 size 2
// M2:           %[[IDS1:.*]] = tensor.extract_slice %arg1[2] [2] [1] : tensor<4xi64> to tensor<2xi64>
// M2:           %[[G1:.*]] = tensor.extract_slice %arg2[2, 0] [2, 5] [1, 1]
// M2:           %[[U1:.*]] = arith.mulf %[[G1]]
// M2:           %[[S1:.*]] = gacc.scatter_add ins(%[[U1]], %[[IDS1]] : tensor<2x5xf32>, tensor<2xi64>) outs(%[[ZERO]] : tensor<7x5xf32>) -> tensor<7x5xf32> {gacc.partial}
// M2:         %[[SUM:.*]] = arith.addf %[[R0]]#1, %[[R1]]#1 {gacc.combine} : tensor<7x5xf32>
// M2:         shard.all_reduce %[[SUM]]

// S31-LABEL: func.func @embed
// S31:         gacc.micro_batch 0 offset 0 size 3
// S31:           gacc.scatter_add ins(%{{.*}}, %{{.*}} : tensor<3x5xf32>, tensor<3xi64>) outs(%{{.*}} : tensor<7x5xf32>)
// S31:         gacc.micro_batch 1 offset 3 size 1
// S31:           tensor.extract_slice %arg1[3] [1] [1] : tensor<4xi64> to tensor<1xi64>
// S31:           gacc.scatter_add ins(%{{.*}}, %{{.*}} : tensor<1x5xf32>, tensor<1xi64>) outs(%{{.*}} : tensor<7x5xf32>)

// FUSE-LABEL: func.func @embed
// FUSE:         %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<7x5xf32>)
// FUSE:         %[[R0:.*]]:2 = gacc.micro_batch 0
// FUSE:           gacc.scatter_add ins(%{{.*}}, %{{.*}} : tensor<2x5xf32>, tensor<2xi64>) outs(%[[ZERO]] : tensor<7x5xf32>)
// FUSE:         %[[R1:.*]]:2 = gacc.micro_batch 1
// FUSE-NOT:       linalg.fill
// FUSE:           gacc.scatter_add ins(%{{.*}}, %{{.*}} : tensor<2x5xf32>, tensor<2xi64>) outs(%[[R0]]#1 : tensor<7x5xf32>)
// FUSE-NOT:     gacc.combine
// FUSE:         shard.all_reduce %[[R1]]#1

// PIPE-LABEL: func.func @embed
// PIPE:         %[[BUCKET:.*]] = tensor.empty() {gacc.bucket = 0 : i64} : tensor<35xf32>
// PIPE:         gacc.micro_batch 0
// PIPE:           gacc.scatter_add
// PIPE:         %[[R1:.*]]:2 = gacc.micro_batch 1
// PIPE:           gacc.scatter_add
// PIPE:         %[[FLAT:.*]] = tensor.collapse_shape %[[R1]]#1
// PIPE:         %[[IN:.*]] = tensor.insert_slice %[[FLAT]] into %[[BUCKET]][0] [35] [1]
// PIPE:         shard.all_reduce %[[IN]] on @dp grid_axes = [0] reduction = average {gacc.bucket = 0 : i64

// SCALE-LABEL: func.func @embed
// SCALE:         gacc.micro_batch 0
// SCALE:           %[[SCALED0:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x5xf32>, tensor<f32>)
// SCALE:           gacc.scatter_add ins(%[[SCALED0]], %{{.*}} : tensor<2x5xf32>, tensor<2xi64>)
// SCALE:         gacc.micro_batch 1
// SCALE:           %[[SCALED1:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x5xf32>, tensor<f32>)
// SCALE:           gacc.scatter_add ins(%[[SCALED1]], %{{.*}} : tensor<2x5xf32>, tensor<2xi64>)
func.func @embed(%table: tensor<7x5xf32> {gacc.param},
                 %ids: tensor<4xi64> {gacc.batch = 0 : i64},
                 %g: tensor<4x5xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<7x5xf32> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x5xf32>
  %emb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4xi64>) outs(%e : tensor<4x5xf32>) {
  ^bb0(%id: i64, %o: f32):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<7x5xf32>
    linalg.yield %v : f32
  } -> tensor<4x5xf32>
  %e0 = tensor.empty() : tensor<f32>
  %z0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%emb, %g : tensor<4x5xf32>, tensor<4x5xf32>) outs(%z0 : tensor<f32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %q = arith.constant dense<0.25> : tensor<f32>
  %loss = arith.mulf %s, %q : tensor<f32>
  %q2 = arith.constant dense<0.25> : tensor<4x5xf32>
  %dg = arith.mulf %g, %q2 : tensor<4x5xf32>
  %ge = tensor.empty() : tensor<7x5xf32>
  %gz = linalg.fill ins(%zero : f32) outs(%ge : tensor<7x5xf32>) -> tensor<7x5xf32>
  %grad = gacc.scatter_add ins(%dg, %ids : tensor<4x5xf32>, tensor<4xi64>) outs(%gz : tensor<7x5xf32>) -> tensor<7x5xf32>
  %gr = shard.all_reduce %grad on @dp grid_axes = [0] reduction = average : tensor<7x5xf32> -> tensor<7x5xf32>
  return %loss, %gr : tensor<f32>, tensor<7x5xf32>
}

// -----

// A bf16 embedding gradient with accumulate-type=f32: the rows are extended
// and added into an f32 accumulator, truncated once after the regions.

// F32-LABEL: func.func @embed_bf16
// F32:         %[[R0:.*]]:2 = gacc.micro_batch 0
// F32:           %[[ZERO:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<7x5xf32>)
// F32:           %[[W0:.*]] = arith.extf %{{.*}} : tensor<2x5xbf16> to tensor<2x5xf32>
// F32:           gacc.scatter_add ins(%[[W0]], %{{.*}} : tensor<2x5xf32>, tensor<2xi64>) outs(%[[ZERO]] : tensor<7x5xf32>) -> tensor<7x5xf32> {gacc.partial}
// F32:         %[[R1:.*]]:2 = gacc.micro_batch 1
// F32:           %[[W1:.*]] = arith.extf %{{.*}} : tensor<2x5xbf16> to tensor<2x5xf32>
// F32:           gacc.scatter_add ins(%[[W1]], %{{.*}} : tensor<2x5xf32>, tensor<2xi64>) outs(%[[R0]]#1 : tensor<7x5xf32>)
// F32:         %[[T:.*]] = arith.truncf %[[R1]]#1 : tensor<7x5xf32> to tensor<7x5xbf16>
// F32:         return %{{.*}}, %[[T]]

func.func @embed_bf16(%table: tensor<7x5xbf16> {gacc.param},
                      %ids: tensor<4xi64> {gacc.batch = 0 : i64},
                      %g: tensor<4x5xbf16> {gacc.batch = 0 : i64})
    -> (tensor<bf16> {gacc.loss}, tensor<7x5xbf16> {gacc.grad = 0 : i64}) {
  %zero = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<4x5xbf16>
  %emb = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ids : tensor<4xi64>) outs(%e : tensor<4x5xbf16>) {
  ^bb0(%id: i64, %o: bf16):
    %row = arith.index_cast %id : i64 to index
    %col = linalg.index 1 : index
    %v = tensor.extract %table[%row, %col] : tensor<7x5xbf16>
    linalg.yield %v : bf16
  } -> tensor<4x5xbf16>
  %e0 = tensor.empty() : tensor<bf16>
  %z0 = linalg.fill ins(%zero : bf16) outs(%e0 : tensor<bf16>) -> tensor<bf16>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>], iterator_types = ["reduction", "reduction"]} ins(%emb, %g : tensor<4x5xbf16>, tensor<4x5xbf16>) outs(%z0 : tensor<bf16>) {
  ^bb0(%a: bf16, %b: bf16, %acc: bf16):
    %m = arith.mulf %a, %b : bf16
    %r = arith.addf %acc, %m : bf16
    linalg.yield %r : bf16
  } -> tensor<bf16>
  %q = arith.constant dense<0.25> : tensor<bf16>
  %loss = arith.mulf %s, %q : tensor<bf16>
  %q2 = arith.constant dense<0.25> : tensor<4x5xbf16>
  %dg = arith.mulf %g, %q2 : tensor<4x5xbf16>
  %ge = tensor.empty() : tensor<7x5xbf16>
  %gz = linalg.fill ins(%zero : bf16) outs(%ge : tensor<7x5xbf16>) -> tensor<7x5xbf16>
  %grad = gacc.scatter_add ins(%dg, %ids : tensor<4x5xbf16>, tensor<4xi64>) outs(%gz : tensor<7x5xbf16>) -> tensor<7x5xbf16>
  return %loss, %grad : tensor<bf16>, tensor<7x5xbf16>
}

// RUN: gacc-opt %examples/adamw_clip.mlir --gacc-pipeline="micro-batches=2" | gacc-opt --gacc-shard-optimizer-state="data-parallel-size=2" | FileCheck %s --check-prefix=ADAMW
// RUN: gacc-opt %examples/adamw_clip.mlir --gacc-pipeline="micro-batches=4 shard-optimizer-state data-parallel-size=3" | FileCheck %s --check-prefix=PAD
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2 bucket-bytes=128" | FileCheck %s --check-prefix=SGD
// RUN: gacc-opt %examples/tied_weights.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2" | FileCheck %s --check-prefix=TIED
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2 loss-scale=dynamic" | FileCheck %s --check-prefix=LOSS
// RUN: gacc-opt %S/Inputs/two-param-clip.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=4" | FileCheck %s --check-prefix=CLIP2
// RUN: gacc-opt %s --split-input-file --verify-diagnostics --gacc-pipeline="micro-batches=2 shard-optimizer-state data-parallel-size=2"
// RUN: not gacc-opt %examples/adamw_clip.mlir --gacc-pipeline="micro-batches=2 shard-optimizer-state" 2>&1 | FileCheck %s --check-prefix=NOSIZE

// AdamW with a global-norm clip on 2 ranks: the bucket of W's gradient (4
// floats) is reduce-scattered (2 floats per rank), the clip's sum of
// squares is the rank's sum plus an all-reduce of one scalar, the moments
// stay sharded (their arguments and results are the rank's shards), W is
// sliced, updated on the shard and all-gathered.
// ADAMW-LABEL: func.func @train_step
// ADAMW-SAME:    %[[W:[a-z0-9]+]]: tensor<4xf32> {gacc.param}
// ADAMW-SAME:    %[[M:[a-z0-9]+]]: tensor<2xf32> {gacc.shard_of = array<i64: 4>, gacc.state}
// ADAMW-SAME:    %[[V:[a-z0-9]+]]: tensor<2xf32> {gacc.shard_of = array<i64: 4>, gacc.state}
// ADAMW-SAME:    %{{.*}}: tensor<f32> {gacc.state}
// ADAMW-SAME:    tensor<4xf32> {gacc.param_out = 0 : i64}
// ADAMW-SAME:    tensor<2xf32> {gacc.shard_of = array<i64: 4>, gacc.state_out = 3 : i64}
// ADAMW-SAME:    tensor<2xf32> {gacc.shard_of = array<i64: 4>, gacc.state_out = 4 : i64}
// ADAMW:         %[[RANK:.*]] = shard.process_linear_index on @dp : index
// ADAMW:         gacc.micro_batch 1
// ADAMW-NOT:     shard.all_reduce
// ADAMW:         %[[LAYOUT:.*]] = tensor.empty() {gacc.bucket = 0 : i64} : tensor<2x2xf32>
// ADAMW:         %[[RS:.*]] = shard.reduce_scatter %{{.*}} on @dp grid_axes = [0] reduction = average scatter_axis = 0 {gacc.bucket = 0 : i64, gacc.overlap} : tensor<4xf32> -> tensor<2xf32>
// ADAMW:         %[[G:.*]] = tensor.extract_slice %[[RS]][0] [2] [1]
// ADAMW:         %[[SQ:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[G]] : tensor<2xf32>)
// ADAMW:         %[[NORM2:.*]] = shard.all_reduce %[[SQ]] on @dp grid_axes = [0] : tensor<f32> -> tensor<f32>
// ADAMW:         math.sqrt %[[NORM2]]
// ADAMW:         %[[GC:.*]] = linalg.generic {{.*}} ins(%[[G]], %{{.*}} : tensor<2xf32>, tensor<f32>)
// ADAMW:         %[[MOUT:.*]] = linalg.generic {{.*}} ins(%[[M]], %[[GC]] : tensor<2xf32>, tensor<2xf32>)
// ADAMW:         %[[VOUT:.*]] = linalg.generic {{.*}} ins(%[[V]], %[[GC]] : tensor<2xf32>, tensor<2xf32>)
// ADAMW:         %[[OFF:.*]] = arith.muli %[[RANK]], %c2
// ADAMW:         %[[WS:.*]] = tensor.extract_slice %[[W]][%[[OFF]]] [2] [1] : tensor<4xf32> to tensor<2xf32>
// ADAMW:         %[[WOUT:.*]] = linalg.generic {{.*}} ins(%[[WS]], %[[MOUT]], %[[VOUT]], %{{.*}}, %{{.*}} : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>, tensor<f32>)
// ADAMW:         %[[PACK:.*]] = tensor.insert_slice %[[WOUT]]
// ADAMW:         %[[ALL:.*]] = shard.all_gather %[[PACK]] on @dp grid_axes = [0] gather_axis = 0 {gacc.bucket = 0 : i64, gacc.overlap} : tensor<2xf32> -> tensor<4xf32>
// ADAMW-NOT:     shard.all_reduce
// ADAMW:         return %{{.*}}, %{{.*}}, %[[MOUT]], %[[VOUT]], %{{.*}} : tensor<f32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<f32>

// 3 ranks, 4 floats: each member is padded to 6 (2 per rank) with zeros,
// and the rank's sum of squares skips its padding (valid = clamp(4 - 2 r,
// 0, 2)).
// PAD-LABEL: func.func @train_step
// PAD-SAME:    tensor<2xf32> {gacc.shard_of = array<i64: 4>, gacc.state}
// PAD:         %[[RANK:.*]] = shard.process_linear_index on @dp : index
// PAD:         %[[PADDED:.*]] = tensor.pad %{{.*}} low[0] high[2]
// PAD:           tensor.yield %{{.*}} : f32
// PAD:         tensor.expand_shape %[[PADDED]] {{\[\[}}0, 1]] output_shape [3, 2] : tensor<6xf32> into tensor<3x2xf32>
// PAD:         shard.reduce_scatter %{{.*}} : tensor<6xf32> -> tensor<2xf32>
// PAD:         %[[BEGIN:.*]] = arith.muli %[[RANK]], %{{.*}} : index
// PAD:         %[[REST:.*]] = arith.subi %{{.*}}, %[[BEGIN]] : index
// PAD:         %[[MIN:.*]] = arith.minsi %[[REST]], %{{.*}} : index
// PAD:         %[[VALID:.*]] = arith.maxsi %[[MIN]], %{{.*}} : index
// PAD:         linalg.generic {{.*}}iterator_types = ["reduction"]}
// PAD:           %[[I:.*]] = linalg.index 0 : index
// PAD:           %[[IN:.*]] = arith.cmpi ult, %[[I]], %[[VALID]] : index
// PAD:           arith.select %[[IN]]
// PAD:         shard.all_reduce %{{.*}} : tensor<f32> -> tensor<f32>
// PAD:         shard.all_gather %{{.*}} : tensor<2xf32> -> tensor<6xf32>
// PAD:         tensor.extract_slice %{{.*}}[0] [4] [1] : tensor<6xf32> to tensor<4xf32>

// SGD on the MLP, 3 buckets: one reduce-scatter and one all-gather per
// bucket, no all-reduce left; bucket 0 holds W2 (24 floats) and b2 (3,
// padded to 4): a rank's chunk is 12 + 2 floats.
// SGD-LABEL: func.func @train_step
// SGD-NOT:     shard.all_reduce
// SGD-COUNT-3: shard.reduce_scatter
// SGD-NOT:     shard.all_reduce
// SGD-COUNT-3: shard.all_gather
// SGD-NOT:     shard.all_reduce
// SGD:         return
// SGD:       }

// Tied weights (a gradient result, no optimizer): the 9-float gradient is
// padded to 10, reduce-scattered and all-gathered back.
// TIED-LABEL: func.func @train_step
// TIED:         shard.reduce_scatter %{{.*}} : tensor<10xf32> -> tensor<5xf32>
// TIED:         shard.all_gather %{{.*}} : tensor<5xf32> -> tensor<10xf32>
// TIED:         tensor.extract_slice %{{.*}}[0] [9] [1] : tensor<10xf32> to tensor<9xf32>
// TIED:         return

// Loss scaling's found-inf flag (`out = nonfinite ? 1 : out`, chained over
// the gradients) on shards: each link is the rank's flag from -inf, a max
// all-reduce, and 1 where any rank set it, else the previous flag.
// LOSS-LABEL: func.func @train_step
// LOSS:         shard.reduce_scatter
// LOSS:         %[[LOCAL:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]}
// LOSS:         %[[ANY:.*]] = shard.all_reduce %[[LOCAL]] on @dp grid_axes = [0] reduction = max : tensor<f32> -> tensor<f32>
// LOSS:         %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
// LOSS:         %[[HIT:.*]] = arith.cmpf oeq, %[[ANY]], %[[ONE]] : tensor<f32>
// LOSS:         arith.select %[[HIT]], %[[ONE]], %{{.*}} : tensor<i1>, tensor<f32>
// LOSS:         shard.all_gather

// A global norm over two gradients (6 and 3 floats on 4 ranks: shards of
// 2 and 1, both padded): the ranks' masked sums of squares are added before
// one all-reduce of one scalar.
// CLIP2-LABEL: func.func @clip2
// CLIP2:         shard.reduce_scatter %{{.*}} : tensor<12xf32> -> tensor<3xf32>
// CLIP2:         %[[SW:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]}
// CLIP2:           linalg.index 0
// CLIP2:         %[[SB:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]}
// CLIP2:           linalg.index 0
// CLIP2:         %[[LOCAL:.*]] = arith.addf %[[SW]], %[[SB]] : tensor<f32>
// CLIP2:         %[[NORM2:.*]] = shard.all_reduce %[[LOCAL]] on @dp grid_axes = [0] : tensor<f32> -> tensor<f32>
// CLIP2-NOT:     shard.all_reduce
// CLIP2:         math.sqrt %[[NORM2]]
// CLIP2-NOT:     shard.all_reduce
// CLIP2:         shard.all_gather %{{.*}} : tensor<3xf32> -> tensor<12xf32>
// CLIP2-NOT:     shard.all_reduce

// NOSIZE: error: 'shard.all_reduce' op expected a static size of grid @dp to shard the optimizer state; set data-parallel-size (gacc-run and gacc-check set it to the number of ranks)
// NOSIZE: note: the grid

// A transpose of the reduced gradient reads other ranks' elements.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @transpose(%w: tensor<2x2xf32> {gacc.param}, %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<2x2xf32> {gacc.param_out = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.reduce ins(%x : tensor<4x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %e22 = tensor.empty() : tensor<2x2xf32>
  %f22 = linalg.fill ins(%zero : f32) outs(%e22 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (i, j)>],
                       iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%f22 : tensor<2x2xf32>) {
    ^bb0(%xv: f32, %wv: f32, %acc: f32):
      %p = arith.mulf %xv, %wv : f32
      %0 = arith.addf %acc, %p : f32
      linalg.yield %0 : f32
  } -> tensor<2x2xf32>
  // expected-note @+1 {{the gradient is sharded by the reduce-scatter of bucket 0 here}}
  %ga = shard.all_reduce %g on @dp grid_axes = [0] reduction = average : tensor<2x2xf32> -> tensor<2x2xf32>
  // expected-error @below {{'linalg.transpose' op reads a sharded gradient other than element by element or by a reduction over all its elements; with shard-optimizer-state each rank holds only a slice of it (run the step without the option)}}
  %t = linalg.transpose ins(%ga : tensor<2x2xf32>) outs(%e22 : tensor<2x2xf32>) permutation = [1, 0]
  %new = arith.subf %w, %t : tensor<2x2xf32>
  return %loss, %new : tensor<f32>, tensor<2x2xf32>
}

// -----

// A norm per row (a reduction over part of the dimensions) is refused.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @row_norm(%w: tensor<2x2xf32> {gacc.param}, %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<2xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.reduce ins(%x : tensor<4x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %e22 = tensor.empty() : tensor<2x2xf32>
  %f22 = linalg.fill ins(%zero : f32) outs(%e22 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (i, j)>],
                       iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%f22 : tensor<2x2xf32>) {
    ^bb0(%xv: f32, %wv: f32, %acc: f32):
      %p = arith.mulf %xv, %wv : f32
      %0 = arith.addf %acc, %p : f32
      linalg.yield %0 : f32
  } -> tensor<2x2xf32>
  // expected-note @+1 {{the gradient is sharded by the reduce-scatter of bucket 0 here}}
  %ga = shard.all_reduce %g on @dp grid_axes = [0] reduction = average : tensor<2x2xf32> -> tensor<2x2xf32>
  %e2 = tensor.empty() : tensor<2xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2xf32>) -> tensor<2xf32>
  // expected-error @below {{'linalg.generic' op reads a sharded gradient other than element by element or by a reduction over all its elements}}
  %rows = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                          iterator_types = ["parallel", "reduction"]}
      ins(%ga : tensor<2x2xf32>) outs(%f2 : tensor<2xf32>) {
    ^bb0(%gv: f32, %acc: f32):
      %q = arith.mulf %gv, %gv : f32
      %0 = arith.addf %acc, %q : f32
      linalg.yield %0 : f32
  } -> tensor<2xf32>
  return %loss, %rows : tensor<f32>, tensor<2xf32>
}

// -----

// An update that depends on the element's position is refused.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @position(%w: tensor<2x2xf32> {gacc.param}, %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<2x2xf32> {gacc.param_out = 0 : i64}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.reduce ins(%x : tensor<4x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %e22 = tensor.empty() : tensor<2x2xf32>
  %f22 = linalg.fill ins(%zero : f32) outs(%e22 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (i, j)>],
                       iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%f22 : tensor<2x2xf32>) {
    ^bb0(%xv: f32, %wv: f32, %acc: f32):
      %p = arith.mulf %xv, %wv : f32
      %0 = arith.addf %acc, %p : f32
      linalg.yield %0 : f32
  } -> tensor<2x2xf32>
  // expected-note @+1 {{the gradient is sharded by the reduce-scatter of bucket 0 here}}
  %ga = shard.all_reduce %g on @dp grid_axes = [0] reduction = average : tensor<2x2xf32> -> tensor<2x2xf32>
  // expected-error @below {{'linalg.generic' op reads the positions of a sharded gradient (linalg.index); with shard-optimizer-state each rank sees only its slice}}
  %new = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                         iterator_types = ["parallel", "parallel"]}
      ins(%w, %ga : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e22 : tensor<2x2xf32>) {
    ^bb0(%wv: f32, %gv: f32, %o: f32):
      %i = linalg.index 0 : index
      %ii = arith.index_cast %i : index to i32
      %fi = arith.sitofp %ii : i32 to f32
      %s = arith.mulf %gv, %fi : f32
      %0 = arith.subf %wv, %s : f32
      linalg.yield %0 : f32
  } -> tensor<2x2xf32>
  return %loss, %new : tensor<f32>, tensor<2x2xf32>
}

// -----

// A slice of the reduced gradient is refused.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @slice(%w: tensor<2x2xf32> {gacc.param}, %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<2xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.reduce ins(%x : tensor<4x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %e22 = tensor.empty() : tensor<2x2xf32>
  %f22 = linalg.fill ins(%zero : f32) outs(%e22 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (i, j)>],
                       iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%f22 : tensor<2x2xf32>) {
    ^bb0(%xv: f32, %wv: f32, %acc: f32):
      %p = arith.mulf %xv, %wv : f32
      %0 = arith.addf %acc, %p : f32
      linalg.yield %0 : f32
  } -> tensor<2x2xf32>
  // expected-note @+1 {{the gradient is sharded by the reduce-scatter of bucket 0 here}}
  %ga = shard.all_reduce %g on @dp grid_axes = [0] reduction = average : tensor<2x2xf32> -> tensor<2x2xf32>
  // expected-error @below {{'tensor.extract_slice' op reads a sharded gradient; with shard-optimizer-state only elementwise ops, reshapes and reductions over all elements may (run the step without the option)}}
  %row = tensor.extract_slice %ga[0, 0] [1, 2] [1, 1] : tensor<2x2xf32> to tensor<2xf32>
  return %loss, %row : tensor<f32>, tensor<2xf32>
}

// -----

// A product over the gradient's elements has no combiner the pass knows.
shard.grid @dp(shape = ?) {sym_visibility = "private"}
func.func @product(%w: tensor<2x2xf32> {gacc.param}, %x: tensor<4x2xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %e = tensor.empty() : tensor<f32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %loss = linalg.reduce ins(%x : tensor<4x2xf32>) outs(%f : tensor<f32>) dimensions = [0, 1]
    (%in: f32, %acc: f32) {
      %0 = arith.addf %acc, %in : f32
      linalg.yield %0 : f32
    }
  %e22 = tensor.empty() : tensor<2x2xf32>
  %f22 = linalg.fill ins(%zero : f32) outs(%e22 : tensor<2x2xf32>) -> tensor<2x2xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(b, i, j) -> (b, i)>, affine_map<(b, i, j) -> (i, j)>, affine_map<(b, i, j) -> (i, j)>],
                       iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%x, %w : tensor<4x2xf32>, tensor<2x2xf32>) outs(%f22 : tensor<2x2xf32>) {
    ^bb0(%xv: f32, %wv: f32, %acc: f32):
      %p = arith.mulf %xv, %wv : f32
      %0 = arith.addf %acc, %p : f32
      linalg.yield %0 : f32
  } -> tensor<2x2xf32>
  // expected-note @+1 {{the gradient is sharded by the reduce-scatter of bucket 0 here}}
  %ga = shard.all_reduce %g on @dp grid_axes = [0] reduction = average : tensor<2x2xf32> -> tensor<2x2xf32>
  %f1 = linalg.fill ins(%one : f32) outs(%e : tensor<f32>) -> tensor<f32>
  // expected-error @below {{'linalg.generic' op reduces a sharded gradient with a combiner other than a sum, max, min or a flag set to a constant; with shard-optimizer-state the ranks' partial results could not be combined}}
  %prod = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>],
                          iterator_types = ["reduction", "reduction"]}
      ins(%ga : tensor<2x2xf32>) outs(%f1 : tensor<f32>) {
    ^bb0(%gv: f32, %acc: f32):
      %0 = arith.mulf %acc, %gv : f32
      linalg.yield %0 : f32
  } -> tensor<f32>
  return %loss, %prod : tensor<f32>, tensor<f32>
}

// The whole pipeline on the bundled fixtures (examples/).
//
// RUN: gacc-opt %examples/linear_regression.mlir --gacc-pipeline="micro-batch-sizes=3,1" | FileCheck %s --check-prefix=REF
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=1" | FileCheck %s --check-prefixes=MLP,MLP1
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=4" | FileCheck %s --check-prefixes=MLP,MLP4
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=8" | FileCheck %s --check-prefixes=MLP,MLP8
// RUN: gacc-opt %examples/mlp.mlir --gacc-pipeline="micro-batches=4 bucket-bytes=128" | FileCheck %s --check-prefix=MLPB
// RUN: gacc-opt %examples/lm_head_masked.mlir --gacc-pipeline="micro-batches=2" | FileCheck %s --check-prefix=LM
// RUN: gacc-opt %examples/tied_weights.mlir --gacc-pipeline="micro-batches=2" | FileCheck %s --check-prefix=TIED
// RUN: gacc-opt %examples/adamw_clip.mlir --gacc-pipeline="micro-batches=4" | FileCheck %s --check-prefix=ADAMW
// RUN: gacc-opt %examples/bf16_linear.mlir --gacc-pipeline="micro-batches=2 accumulate-type=f32" | FileCheck %s --check-prefix=BF16
// RUN: not gacc-opt %examples/batchnorm.mlir --gacc-pipeline="micro-batches=2" 2>&1 | FileCheck %s --check-prefix=BN
// RUN: gacc-opt %examples/batchnorm.mlir --gacc-pipeline="micro-batches=2 allow-micro-batch-statistics" 2>&1 | FileCheck %s --check-prefix=BNOK

// The reference example with a 3 + 1 split: two regions of 3 and 1 samples,
// both scaling by the global 1/B = 0.25, one all-reduce after the regions.
// REF-LABEL: func.func @train_step
// REF:         %[[INV:.*]] = arith.constant dense<2.500000e-01> : tensor<f32>
// REF:         gacc.micro_batch 0 offset 0 size 3
// REF:           linalg.generic {{.*}} ins(%{{.*}}, %[[INV]] : tensor<3xf32>, tensor<f32>)
// REF:         %[[R1:.*]]:2 = gacc.micro_batch 1 offset 3 size 1
// REF:           linalg.generic {{.*}} ins(%{{.*}}, %[[INV]] : tensor<1xf32>, tensor<f32>)
// REF-NOT:     gacc.micro_batch
// REF:         %[[LOSS:.*]] = arith.mulf %[[R1]]#0, %[[INV]] : tensor<f32>
// REF:         shard.all_reduce {{.*}} {gacc.bucket = 0 : i64, gacc.overlap} : tensor<1xf32> -> tensor<1xf32>
// REF:         return %[[LOSS]]

// The two-layer perceptron (mlp.mlir): W2's transpose (for the backward through the second layer) is
// computed once before the regions; the four gradients share one bucket with
// one all-reduce after the final region for m = 1, 4 and 8; SGD runs once.
// MLP-LABEL: func.func @train_step
// MLP:         %[[W2T:.*]] = linalg.transpose ins(%arg2 : tensor<8x3xf32>)
// MLP1:        gacc.micro_batch 0 offset 0 size 8
// MLP4:        gacc.micro_batch 0 offset 0 size 2
// MLP8:        gacc.micro_batch 0 offset 0 size 1
// MLP:           linalg.matmul ins(%{{.*}}, %[[W2T]] :
// MLP4-COUNT-3: gacc.micro_batch {{[1-3]}} offset {{[2-6]}} size 2
// MLP8-COUNT-7: gacc.micro_batch {{[1-7]}} offset {{[1-7]}} size 1
// MLP-NOT:     gacc.micro_batch
// MLP-NOT:     linalg.transpose ins(%arg2
// MLP:         shard.all_reduce {{.*}} reduction = average {gacc.bucket = 0 : i64, gacc.overlap} : tensor<67xf32> -> tensor<67xf32>
// MLP-NOT:     shard.all_reduce
// MLP-COUNT-4: arith.subf %in, %{{.*}} : f32
// MLP:         return

// Small buckets: W1 (128 bytes) fills one, b1 + W2 + b2 do not fit in 128
// bytes together, so four gradients make three buckets.
// MLPB-LABEL: func.func @train_step
// MLPB-COUNT-3: shard.all_reduce
// MLPB-NOT:     shard.all_reduce
// MLPB:         return

// The token count sum(mask) is a prologue statistic: reduced over the whole
// batch before the regions, its reciprocal used inside them.
// LM-LABEL: func.func @train_step
// LM:         %[[COUNT:.*]] = linalg.reduce {{.*}}ins(%arg3 : tensor<4x3xf32>)
// LM:         %[[INV:.*]] = arith.divf %{{.*}}, %[[COUNT]] : tensor<f32>
// LM:         gacc.micro_batch 0
// LM:           linalg.generic {{.*}}%[[INV]]
// LM:         gacc.micro_batch 1
// LM:           linalg.generic {{.*}}%[[INV]]
// LM-NOT:     gacc.micro_batch
// LM:         arith.divf %{{.*}}, %[[COUNT]]
// LM:         return %{{.*}}, %{{.*}}, %[[COUNT]]

// Tied weights: both uses contribute to one accumulated gradient.
// TIED-LABEL: func.func @train_step
// TIED:         gacc.micro_batch 1
// TIED-COUNT-2: linalg.matmul {gacc.partial}
// TIED:         gacc.yield
// TIED:         shard.all_reduce {{.*}} {gacc.bucket = 0 : i64, gacc.overlap} : tensor<9xf32>

// AdamW with global-norm clipping: the norm is taken of the accumulated,
// all-reduced gradient, and the optimizer runs once after the regions; the
// bias corrections depend on state only and are computed before.
// ADAMW-LABEL: func.func @train_step
// ADAMW:         math.powf
// ADAMW-COUNT-4: gacc.micro_batch
// ADAMW-NOT:     gacc.micro_batch
// ADAMW:         %[[G:.*]] = shard.all_reduce
// ADAMW:         %[[GV:.*]] = tensor.extract_slice %[[G]]
// ADAMW:         linalg.generic {{.*}}iterator_types = ["reduction"]} ins(%[[GV]]
// ADAMW:         math.sqrt
// ADAMW-NOT:     gacc.micro_batch
// ADAMW:         return

// bf16: accumulators, bucket and all-reduce in f32, one truncation after.
// BF16-LABEL: func.func @train_step
// BF16:         tensor.empty() {gacc.bucket = 0 : i64} : tensor<3xf32>
// BF16:         gacc.micro_batch 0 offset 0 size 2 -> (tensor<f32>, tensor<3xf32>)
// BF16:         gacc.micro_batch 1 offset 2 size 2 -> (tensor<f32>, tensor<3xf32>)
// BF16:         %[[R:.*]] = shard.all_reduce {{.*}} : tensor<3xf32> -> tensor<3xf32>
// BF16:         %[[S:.*]] = tensor.extract_slice %[[R]]
// BF16:         %[[T:.*]] = arith.truncf %[[S]] : tensor<3xf32> to tensor<3xbf16>
// BF16:         return %{{.*}}, %[[T]]

// BatchNorm-style statistic: rejected, naming the reduction and the
// per-sample op it flows into; accepted with a warning on request.
// BN: batchnorm.mlir:{{[0-9]+}}:{{[0-9]+}}: error: 'linalg.reduce' op computes a batch statistic that depends on parameters and flows back into per-sample work
// BN: note: the statistic flows into this per-sample op
// BNOK: warning: batch statistic depends on parameters; it is computed per micro-batch
// BNOK: gacc.micro_batch 0 offset 0 size 2
// BNOK: gacc.micro_batch 1 offset 2 size 2

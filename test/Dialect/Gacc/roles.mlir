// RUN: gacc-opt %s --split-input-file --verify-diagnostics | FileCheck %s

// The role attributes of a valid step round-trip.
// CHECK-LABEL: func.func @step
// CHECK-SAME: gacc.param
// CHECK-SAME: gacc.batch = 0 : i64
// CHECK-SAME: gacc.state
// CHECK-SAME: gacc.loss
// CHECK-SAME: gacc.grad = 0 : i64
// CHECK-SAME: gacc.param_out = 0 : i64
// CHECK-SAME: gacc.state_out = 2 : i64
// CHECK-SAME: gacc.metric
func.func @step(%w: tensor<f32> {gacc.param}, %x: tensor<4xf32> {gacc.batch = 0 : i64},
                %s: tensor<f32> {gacc.state})
    -> (tensor<f32> {gacc.loss}, tensor<f32> {gacc.grad = 0 : i64},
        tensor<f32> {gacc.param_out = 0 : i64}, tensor<f32> {gacc.state_out = 2 : i64},
        tensor<f32> {gacc.metric}) {
  return %w, %w, %w, %s, %w : tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// expected-error @below {{'func.func' op batch dimension 1 of argument #0 is out of range for 'tensor<4xf32>'}}
func.func @batch_out_of_range(%x: tensor<4xf32> {gacc.batch = 1 : i64}) {
  return
}

// -----

// A dynamic sample dimension is a valid role (gacc-prepare-step specializes
// it with batch-size).
// CHECK-LABEL: func.func @batch_dynamic
// CHECK-SAME: tensor<?xf32> {gacc.batch = 0 : i64}
func.func @batch_dynamic(%x: tensor<?xf32> {gacc.batch = 0 : i64}) {
  return
}

// -----

// expected-error @below {{expected batch argument #0 to be a ranked tensor, got 'f32'}}
func.func @batch_scalar(%x: f32 {gacc.batch = 0 : i64}) {
  return
}

// -----

// expected-error @below {{expected 'gacc.batch' on argument #0 to be an i64 integer attribute}}
func.func @batch_not_int(%x: tensor<4xf32> {gacc.batch = "zero"}) {
  return
}

// -----

// expected-error @below {{'gacc.grad = 1' on result #0 expects argument #1 to carry 'gacc.param'}}
func.func @grad_of_batch(%w: tensor<f32> {gacc.param}, %x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.grad = 1 : i64}) {
  return %w : tensor<f32>
}

// -----

// expected-error @below {{'gacc.grad = 5' on result #0 names no argument (the function has 1)}}
func.func @grad_out_of_range(%w: tensor<f32> {gacc.param}) -> (tensor<f32> {gacc.grad = 5 : i64}) {
  return %w : tensor<f32>
}

// -----

// expected-error @below {{result #0 ('gacc.grad = 0') has type 'tensor<2xf32>' but argument #0 has type 'tensor<f32>'}}
func.func @grad_type(%w: tensor<f32> {gacc.param}, %g: tensor<2xf32>) -> (tensor<2xf32> {gacc.grad = 0 : i64}) {
  return %g : tensor<2xf32>
}

// -----

// expected-error @below {{'gacc.state_out = 0' on result #0 expects argument #0 to carry 'gacc.state'}}
func.func @state_out_of_param(%w: tensor<f32> {gacc.param}) -> (tensor<f32> {gacc.state_out = 0 : i64}) {
  return %w : tensor<f32>
}

// -----

// expected-error @below {{expected 'gacc.param' on argument #0 to be a unit attribute}}
func.func @param_with_value(%w: tensor<f32> {gacc.param = 1 : i64}) {
  return
}

// -----

// expected-error @below {{unknown gacc role 'gacc.weight' on argument #0}}
func.func @unknown_role(%w: tensor<f32> {gacc.weight}) {
  return
}

// -----

// expected-error @below {{unknown gacc role 'gacc.gradient' on result #0}}
func.func @unknown_result_role(%w: tensor<f32>) -> (tensor<f32> {gacc.gradient}) {
  return %w : tensor<f32>
}

// -----

func.func @micro_batch_types(%w: tensor<f32>) {
  // expected-error @below {{expected 'gacc.yield' operand types to match the region result types}}
  %0 = gacc.micro_batch 0 offset 0 size 2 -> (tensor<2xf32>) {
    gacc.yield %w : tensor<f32>
  }
  return
}

// -----

func.func @micro_batch_size(%w: tensor<f32>) {
  // expected-error @below {{expected a positive micro-batch size, got 0}}
  gacc.micro_batch 0 offset 0 size 0 {
    gacc.yield
  }
  return
}

// -----

func.func @micro_batch_offset(%w: tensor<f32>) {
  // expected-error @below {{expected a non-negative offset, got -1}}
  gacc.micro_batch 0 offset -1 size 2 {
    gacc.yield
  }
  return
}

// -----

// expected-error @below {{expected the sample count argument #1 to be an i64, an index or a rank-0 tensor of i64, got 'tensor<i32>'}}
func.func @bad_sample_count(%x: tensor<4xf32> {gacc.batch = 0 : i64},
                            %n: tensor<i32> {gacc.sample_count})
    -> (tensor<f32> {gacc.loss}) {
  %e = tensor.empty() : tensor<f32>
  return %e : tensor<f32>
}

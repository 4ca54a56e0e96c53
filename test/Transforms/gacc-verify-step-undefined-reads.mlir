// RUN: gacc-opt %s --split-input-file --gacc-verify-step --verify-diagnostics

// A read of a tensor.empty's contents (issue 49) is an error at the reading
// op: the compiled step would read whatever its buffer held, gacc-check's
// reference zeros. Writing one, or reading only its shape, is fine.

func.func @reduce_into_empty(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  // expected-note @below {{the tensor.empty, whose contents are undefined until written}}
  %e = tensor.empty() : tensor<f32>
  // expected-error @below {{'linalg.generic' op reads undefined contents: its init #0 is a tensor.empty and its body reads the value; write the tensor first (linalg.fill)}}
  %s = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>],
      iterator_types = ["reduction"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A body that yields its init unchanged reads it too.

func.func @yield_init(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric}) {
  %l = arith.constant dense<0.0> : tensor<f32>
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{'linalg.generic' op reads undefined contents: its init #0 is a tensor.empty}}
  %m = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    linalg.yield %o : f32
  } -> tensor<4xf32>
  return %l, %m : tensor<f32>, tensor<4xf32>
}

// -----

// A named op accumulates into its init; a view of the empty is as empty.

func.func @matmul_into_cast(%w: tensor<3x2xf32> {gacc.param},
                            %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4x2xf32> {gacc.metric}) {
  %l = arith.constant dense<0.0> : tensor<f32>
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<4x4xf32>
  %s = tensor.extract_slice %e[0, 0] [4, 2] [1, 1] : tensor<4x4xf32> to tensor<4x2xf32>
  %c = tensor.cast %s : tensor<4x2xf32> to tensor<?x2xf32>
  %d = tensor.cast %c : tensor<?x2xf32> to tensor<4x2xf32>
  // expected-error @below {{'linalg.matmul' op reads undefined contents: its init #0 is a tensor.empty}}
  %y = linalg.matmul ins(%x, %w : tensor<4x3xf32>, tensor<3x2xf32>)
                     outs(%d : tensor<4x2xf32>) -> tensor<4x2xf32>
  return %l, %y : tensor<f32>, tensor<4x2xf32>
}

// -----

func.func @empty_input(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric}) {
  %l = arith.constant dense<0.0> : tensor<f32>
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{'linalg.generic' op reads undefined contents: its input #1 is a tensor.empty and its body reads the value}}
  %m = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%x, %e : tensor<4xf32>, tensor<4xf32>) outs(%x : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.addf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<4xf32>
  return %l, %m : tensor<f32>, tensor<4xf32>
}

// -----

func.func @extract(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}) {
  %c0 = arith.constant 0 : index
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<3xf32>
  // expected-error @below {{'tensor.extract' op reads undefined contents: its tensor is a tensor.empty; write the tensor first (linalg.fill)}}
  %v = tensor.extract %e[%c0] : tensor<3xf32>
  %t = tensor.from_elements %v : tensor<f32>
  return %t : tensor<f32>
}

// -----

func.func @returned(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric}) {
  %l = arith.constant dense<0.0> : tensor<f32>
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{'func.return' op returns undefined contents: its result #1 is a tensor.empty}}
  return %l, %e : tensor<f32>, tensor<4xf32>
}

// -----

// In a function the step calls.

func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-note @below {{the tensor.empty}}
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @below {{'arith.addf' op reads undefined contents: its operand #1 is a tensor.empty}}
  %s = arith.addf %x, %e : tensor<4xf32>
  return %s : tensor<4xf32>
}

func.func @calls(%x: tensor<4xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4xf32> {gacc.metric}) {
  %l = arith.constant dense<0.0> : tensor<f32>
  %m = func.call @helper(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %l, %m : tensor<f32>, tensor<4xf32>
}

// -----

// The forms frontends emit are accepted: an init the body does not read,
// an init filled first, insert_slice chains into an empty (torch-mlir's
// concat), the shape of an empty, and an empty without elements.

func.func @frontend_forms(%w: tensor<3xf32> {gacc.param},
                          %x: tensor<4x3xf32> {gacc.batch = 0 : i64})
    -> (tensor<f32> {gacc.loss}, tensor<4x6xf32> {gacc.metric},
        tensor<0xf32> {gacc.metric}, tensor<4xf32> {gacc.metric}) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %y = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%x, %w : tensor<4x3xf32>, tensor<3xf32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %t = arith.mulf %a, %b : f32
    linalg.yield %t : f32
  } -> tensor<4x3xf32>
  %e0 = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %loss = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> ()>],
      iterator_types = ["reduction", "reduction"]}
      ins(%y : tensor<4x3xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %t = arith.addf %a, %acc : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %e2 = tensor.empty() : tensor<4x6xf32>
  %c1 = tensor.insert_slice %x into %e2[0, 0] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x6xf32>
  %c2 = tensor.insert_slice %y into %c1[0, 3] [4, 3] [1, 1] : tensor<4x3xf32> into tensor<4x6xf32>
  %none = tensor.empty() : tensor<0xf32>
  %c0 = arith.constant 0 : index
  %n = tensor.dim %e, %c0 : tensor<4x3xf32>
  %i = arith.index_cast %n : index to i64
  %f = arith.sitofp %i : i64 to f32
  %e4 = tensor.empty() : tensor<4xf32>
  %z4 = linalg.fill ins(%f : f32) outs(%e4 : tensor<4xf32>) -> tensor<4xf32>
  return %loss, %c2, %none, %z4 : tensor<f32>, tensor<4x6xf32>, tensor<0xf32>, tensor<4xf32>
}

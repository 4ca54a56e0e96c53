// tosa.resize (2x, NEAREST_NEIGHBOR; tosa.test also runs it as BILINEAR by
// sed) of a batch of images, weighted by a parameter: the loss's gradient
// is the sum over the samples of the resized images.

func.func @train_step(%w: tensor<1x4x4x3xf32> {gacc.param}, %x: tensor<4x2x2x3xf32> {gacc.batch = 0 : i64}) -> (tensor<f32> {gacc.loss}, tensor<1x4x4x3xf32> {gacc.grad = 0 : i64}) {
  %shift = "tosa.const"() {values = dense<0> : tensor<1xi8>} : () -> tensor<1xi8>
  %scale = tosa.const_shape {values = dense<[2, 1, 2, 1]> : tensor<4xindex>} : () -> !tosa.shape<4>
  %offset = tosa.const_shape {values = dense<[0, 0]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %border = tosa.const_shape {values = dense<[1, 1]> : tensor<2xindex>} : () -> !tosa.shape<2>
  %r = tosa.resize %x, %scale, %offset, %border {mode = NEAREST_NEIGHBOR} : (tensor<4x2x2x3xf32>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<4x4x4x3xf32>
  %m = tosa.mul %r, %w, %shift : (tensor<4x4x4x3xf32>, tensor<1x4x4x3xf32>, tensor<1xi8>) -> tensor<4x4x4x3xf32>
  %s0 = tosa.reduce_sum %m {axis = 0 : i32} : (tensor<4x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  %s1 = tosa.reduce_sum %s0 {axis = 1 : i32} : (tensor<1x4x4x3xf32>) -> tensor<1x1x4x3xf32>
  %s2 = tosa.reduce_sum %s1 {axis = 2 : i32} : (tensor<1x1x4x3xf32>) -> tensor<1x1x1x3xf32>
  %s3 = tosa.reduce_sum %s2 {axis = 3 : i32} : (tensor<1x1x1x3xf32>) -> tensor<1x1x1x1xf32>
  %shape0 = tosa.const_shape {values = dense<> : tensor<0xindex>} : () -> !tosa.shape<0>
  %loss = tosa.reshape %s3, %shape0 : (tensor<1x1x1x1xf32>, !tosa.shape<0>) -> tensor<f32>
  %g = tosa.reduce_sum %r {axis = 0 : i32} : (tensor<4x4x4x3xf32>) -> tensor<1x4x4x3xf32>
  return %loss, %g : tensor<f32>, tensor<1x4x4x3xf32>
}

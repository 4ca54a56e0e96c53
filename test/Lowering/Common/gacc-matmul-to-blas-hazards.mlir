// RUN: gacc-opt %s --split-input-file --gacc-matmul-to-blas | FileCheck %s

// What gacc-matmul-to-blas must not fold (found by a review).

// A pointer to the transpose's source made before it and written through
// after it: the matmul must read the transposed copy, not the source.
// CHECK-LABEL: func.func @escape_chain
// CHECK:         linalg.transpose
func.func @escape_chain(%b: memref<4x2xf32>, %c: memref<3x2xf32>) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %src = memref.alloc() : memref<4x3xf32>
  linalg.fill ins(%one : f32) outs(%src : memref<4x3xf32>)
  %p = memref.extract_aligned_pointer_as_index %src : memref<4x3xf32> -> index
  %p64 = arith.index_cast %p : index to i64
  %ptr = llvm.inttoptr %p64 : i64 to !llvm.ptr
  %a = memref.alloc() : memref<3x4xf32>
  linalg.transpose ins(%src : memref<4x3xf32>) outs(%a : memref<3x4xf32>) permutation = [1, 0]
  llvm.store %two, %ptr : f32, !llvm.ptr
  linalg.matmul ins(%a, %b : memref<3x4xf32>, memref<4x2xf32>) outs(%c : memref<3x2xf32>)
  return
}

// -----

// Ops in the loop that reach the zero-filled weight member through its
// address (a call given the bias member and the address; a generic on the
// bias member loading through a pointer): the fill stays, no first-
// iteration beta = 0.
// CHECK-LABEL: func.func @loop_address
// CHECK:         linalg.fill
// CHECK-LABEL: func.func @loop_nested_address
// CHECK:         linalg.fill
func.func private @reduce_into(memref<2xf32>, i64)

func.func @loop_address(%a: memref<3x8xf32>, %dy: memref<8x2xf32>) -> memref<32xi8> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c24 = arith.constant 24 : index
  %bucket = memref.alloc() : memref<32xi8>
  %wflat = memref.view %bucket[%c0][] : memref<32xi8> to memref<6xf32>
  %w = memref.expand_shape %wflat [[0, 1]] output_shape [3, 2] : memref<6xf32> into memref<3x2xf32>
  %bias = memref.view %bucket[%c24][] : memref<32xi8> to memref<2xf32>
  %p = memref.extract_aligned_pointer_as_index %w : memref<3x2xf32> -> index
  %p64 = arith.index_cast %p : index to i64
  linalg.fill ins(%zero : f32) outs(%w : memref<3x2xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @reduce_into(%bias, %p64) : (memref<2xf32>, i64) -> ()
    linalg.matmul ins(%a, %dy : memref<3x8xf32>, memref<8x2xf32>) outs(%w : memref<3x2xf32>)
  }
  return %bucket : memref<32xi8>
}

func.func @loop_nested_address(%a: memref<3x8xf32>, %dy: memref<8x2xf32>) -> memref<32xi8> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c24 = arith.constant 24 : index
  %bucket = memref.alloc() : memref<32xi8>
  %wflat = memref.view %bucket[%c0][] : memref<32xi8> to memref<6xf32>
  %w = memref.expand_shape %wflat [[0, 1]] output_shape [3, 2] : memref<6xf32> into memref<3x2xf32>
  %bias = memref.view %bucket[%c24][] : memref<32xi8> to memref<2xf32>
  %p = memref.extract_aligned_pointer_as_index %w : memref<3x2xf32> -> index
  %p64 = arith.index_cast %p : index to i64
  %ptr = llvm.inttoptr %p64 : i64 to !llvm.ptr
  linalg.fill ins(%zero : f32) outs(%w : memref<3x2xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} outs(%bias : memref<2xf32>) {
    ^bb0(%o: f32):
      %v = llvm.load %ptr : !llvm.ptr -> f32
      %s = arith.addf %o, %v : f32
      linalg.yield %s : f32
    }
    linalg.matmul ins(%a, %dy : memref<3x8xf32>, memref<8x2xf32>) outs(%w : memref<3x2xf32>)
  }
  return %bucket : memref<32xi8>
}

// -----

// A reads C's buffer through extract_strided_metadata and reinterpret_cast:
// the zero fill of C stays.
// CHECK-LABEL: func.func @a_aliases_c
// CHECK:         linalg.fill
func.func @a_aliases_c(%b: memref<2x2xf32>) -> memref<2x2xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<2x2xf32>
  %base, %off, %s:2, %st:2 = memref.extract_strided_metadata %c : memref<2x2xf32> -> memref<f32>, index, index, index, index, index
  %a = memref.reinterpret_cast %base to offset: [0], sizes: [2, 2], strides: [2, 1] : memref<f32> to memref<2x2xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<2x2xf32>)
  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%c : memref<2x2xf32>)
  return %c : memref<2x2xf32>
}

// -----

// In the loop, a copy out of a reinterpret_cast of the bucket's base
// buffer that overlaps the weight member: the fill stays.
// CHECK-LABEL: func.func @loop_metadata_alias
// CHECK:         linalg.fill
func.func @loop_metadata_alias(%a: memref<3x8xf32>, %dy: memref<8x2xf32>) -> memref<8xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %bucket = memref.alloc() : memref<8xf32>
  %wflat = memref.subview %bucket[0] [6] [1] : memref<8xf32> to memref<6xf32, strided<[1]>>
  %w = memref.expand_shape %wflat [[0, 1]] output_shape [3, 2] : memref<6xf32, strided<[1]>> into memref<3x2xf32>
  %bias = memref.subview %bucket[6] [2] [1] : memref<8xf32> to memref<2xf32, strided<[1], offset: 6>>
  %base, %off, %s, %st = memref.extract_strided_metadata %bucket : memref<8xf32> -> memref<f32>, index, index, index
  %wrow = memref.reinterpret_cast %base to offset: [0], sizes: [2], strides: [1] : memref<f32> to memref<2xf32>
  linalg.fill ins(%zero : f32) outs(%w : memref<3x2xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    linalg.copy ins(%wrow : memref<2xf32>) outs(%bias : memref<2xf32, strided<[1], offset: 6>>)
    linalg.matmul ins(%a, %dy : memref<3x8xf32>, memref<8x2xf32>) outs(%w : memref<3x2xf32>)
  }
  return %bucket : memref<8xf32>
}

// -----

// A call given only the bias member may read the weight member's bytes
// of the same allocation: the fill stays.
// CHECK-LABEL: func.func @loop_call_view
// CHECK:         linalg.fill
func.func private @sum_bucket(%v: memref<2xf32, strided<[1], offset: 6>>) {
  %base, %off, %s, %st = memref.extract_strided_metadata %v : memref<2xf32, strided<[1], offset: 6>> -> memref<f32>, index, index, index
  %all = memref.reinterpret_cast %base to offset: [0], sizes: [8], strides: [1] : memref<f32> to memref<8xf32>
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %x = memref.load %all[%c0] : memref<8xf32>
  memref.store %x, %all[%c6] : memref<8xf32>
  return
}

func.func @loop_call_view(%a: memref<3x8xf32>, %dy: memref<8x2xf32>) -> memref<8xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %bucket = memref.alloc() : memref<8xf32>
  %wflat = memref.subview %bucket[0] [6] [1] : memref<8xf32> to memref<6xf32, strided<[1]>>
  %w = memref.expand_shape %wflat [[0, 1]] output_shape [3, 2] : memref<6xf32, strided<[1]>> into memref<3x2xf32>
  %bias = memref.subview %bucket[6] [2] [1] : memref<8xf32> to memref<2xf32, strided<[1], offset: 6>>
  linalg.fill ins(%zero : f32) outs(%w : memref<3x2xf32>)
  scf.for %i = %c0 to %c4 step %c1 {
    func.call @sum_bucket(%bias) : (memref<2xf32, strided<[1], offset: 6>>) -> ()
    linalg.matmul ins(%a, %dy : memref<3x8xf32>, memref<8x2xf32>) outs(%w : memref<3x2xf32>)
  }
  return %bucket : memref<8xf32>
}

// -----

// A fill of -0.0 is not beta = 0: an output of -0.0 products keeps its sign.
// CHECK-LABEL: func.func @negzero
// CHECK:         linalg.fill
func.func @negzero(%a: memref<4x3xf32>, %b: memref<3x2xf32>, %c: memref<4x2xf32>) {
  %zero = arith.constant -0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<4x2xf32>)
  linalg.matmul ins(%a, %b : memref<4x3xf32>, memref<3x2xf32>) outs(%c : memref<4x2xf32>)
  return
}

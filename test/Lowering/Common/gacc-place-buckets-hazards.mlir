// RUN: gacc-opt %s --split-input-file --gacc-place-buckets | FileCheck %s

// What gacc-place-buckets must not place or merge (found by a review):
// each would change what the step computes.

// The bucket is filled and read while the accumulator lives: the
// accumulator keeps its buffer and its copy (placing it in the bucket would
// let the fill overwrite it and the first @use see it).
// CHECK-LABEL: func.func @lifetime
// CHECK-NOT:     memref.view
// CHECK:         memref.copy
func.func private @use(memref<8xf32>)
func.func @lifetime() {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %bucket = memref.alloc() : memref<8xf32>
  %acc = memref.alloc() : memref<4xf32>
  linalg.fill ins(%two : f32) outs(%acc : memref<4xf32>)
  linalg.fill ins(%one : f32) outs(%bucket : memref<8xf32>)
  call @use(%bucket) : (memref<8xf32>) -> ()
  %s = memref.subview %bucket[0] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1]>>
  memref.copy %acc, %s : memref<4xf32> to memref<4xf32, strided<[1]>>
  call @use(%bucket) : (memref<8xf32>) -> ()
  return
}

// -----

// Slices that overlap: %a goes into the bucket (nothing touches [0, 4)
// while it lives); %b, whose slice %a's copy overlaps while %b lives, keeps
// its buffer and its copy, which overwrites [2, 4) as before.
// CHECK-LABEL: func.func @overlap
// CHECK:         memref.view %{{.*}}[%{{.*}}][] : memref<24xi8> to memref<4xf32>
// CHECK-NOT:     memref.view
// CHECK:         memref.copy %{{.*}}, %{{.*}} : memref<4xf32> to memref<4xf32, strided<[1], offset: 2>>
func.func private @use(memref<6xf32>)
func.func @overlap() {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %bucket = memref.alloc() : memref<6xf32>
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%two : f32) outs(%b : memref<4xf32>)
  linalg.fill ins(%one : f32) outs(%a : memref<4xf32>)
  %sa = memref.subview %bucket[0] [4] [1] : memref<6xf32> to memref<4xf32, strided<[1]>>
  memref.copy %a, %sa : memref<4xf32> to memref<4xf32, strided<[1]>>
  %sb = memref.subview %bucket[2] [4] [1] : memref<6xf32> to memref<4xf32, strided<[1], offset: 2>>
  memref.copy %b, %sb : memref<4xf32> to memref<4xf32, strided<[1], offset: 2>>
  call @use(%bucket) : (memref<6xf32>) -> ()
  return
}

// -----

// Slices of one buffer at different dynamic strides: not the same slice,
// the copy stays.
// CHECK-LABEL: func.func @strided
// CHECK:         memref.copy
func.func @strided(%buf: memref<16xf32>, %s1: index, %s2: index) {
  %a = memref.subview %buf[0] [4] [%s1] : memref<16xf32> to memref<4xf32, strided<[?]>>
  %b = memref.subview %buf[0] [4] [%s2] : memref<16xf32> to memref<4xf32, strided<[?]>>
  memref.copy %a, %b : memref<4xf32, strided<[?]>> to memref<4xf32, strided<[?]>>
  return
}

// -----

// A sum and an average in one bucket id: not one call.
// CHECK-LABEL: func.func @kinds
// CHECK-COUNT-2: call @gaccrt_all_reduce(
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func private @use(memref<4xf32>, memref<4xf32>)
func.func @kinds() {
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<4xf32>)
  linalg.fill ins(%one : f32) outs(%b : memref<4xf32>)
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %sum = arith.constant 0 : i32
  %avg = arith.constant 1 : i32
  %id = arith.constant 0 : i64
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
  %aa = arith.index_cast %pa : index to i64
  call @gaccrt_all_reduce(%aa, %n, %dtype, %sum, %id) {gacc.bucket_offset = 0 : i64} : (i64, i64, i32, i32, i64) -> ()
  %pb = memref.extract_aligned_pointer_as_index %b : memref<4xf32> -> index
  %ab = arith.index_cast %pb : index to i64
  call @gaccrt_all_reduce(%ab, %n, %dtype, %avg, %id) {gacc.bucket_offset = 4 : i64} : (i64, i64, i32, i32, i64) -> ()
  call @use(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  return
}

// -----

// A member read and refilled between its all-reduce and the next member's:
// not one call at the last.
// CHECK-LABEL: func.func @between
// CHECK-COUNT-2: call @gaccrt_all_reduce(
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func private @use(memref<4xf32>)
func.func @between() {
  %one = arith.constant 1.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<4xf32>)
  linalg.fill ins(%one : f32) outs(%b : memref<4xf32>)
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %sum = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
  %aa = arith.index_cast %pa : index to i64
  call @gaccrt_all_reduce(%aa, %n, %dtype, %sum, %id) {gacc.bucket_offset = 0 : i64} : (i64, i64, i32, i32, i64) -> ()
  call @use(%a) : (memref<4xf32>) -> ()
  linalg.fill ins(%one : f32) outs(%a : memref<4xf32>)
  %pb = memref.extract_aligned_pointer_as_index %b : memref<4xf32> -> index
  %ab = arith.index_cast %pb : index to i64
  call @gaccrt_all_reduce(%ab, %n, %dtype, %sum, %id) {gacc.bucket_offset = 4 : i64} : (i64, i64, i32, i32, i64) -> ()
  call @use(%b) : (memref<4xf32>) -> ()
  return
}

// -----

// Two members at the same offset: not one bucket.
// CHECK-LABEL: func.func @same
// CHECK-COUNT-2: call @gaccrt_all_reduce(
func.func private @gaccrt_all_reduce(i64, i64, i32, i32, i64)
func.func private @use(memref<4xf32>, memref<4xf32>)
func.func @same() {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %a = memref.alloc() : memref<4xf32>
  %b = memref.alloc() : memref<4xf32>
  linalg.fill ins(%one : f32) outs(%a : memref<4xf32>)
  linalg.fill ins(%two : f32) outs(%b : memref<4xf32>)
  %n = arith.constant 4 : i64
  %dtype = arith.constant 0 : i32
  %sum = arith.constant 0 : i32
  %id = arith.constant 0 : i64
  %pa = memref.extract_aligned_pointer_as_index %a : memref<4xf32> -> index
  %aa = arith.index_cast %pa : index to i64
  call @gaccrt_all_reduce(%aa, %n, %dtype, %sum, %id) {gacc.bucket_offset = 0 : i64} : (i64, i64, i32, i32, i64) -> ()
  %pb = memref.extract_aligned_pointer_as_index %b : memref<4xf32> -> index
  %ab = arith.index_cast %pb : index to i64
  call @gaccrt_all_reduce(%ab, %n, %dtype, %sum, %id) {gacc.bucket_offset = 0 : i64} : (i64, i64, i32, i32, i64) -> ()
  call @use(%a, %b) : (memref<4xf32>, memref<4xf32>) -> ()
  return
}

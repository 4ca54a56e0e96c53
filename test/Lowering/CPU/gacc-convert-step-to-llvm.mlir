// RUN: gacc-opt %s --split-input-file --gacc-convert-step-to-llvm --verify-diagnostics | FileCheck %s

// arith, memref (generic allocation functions), func, cf and index in one
// conversion; no unrealized cast is left.

// CHECK-DAG:   llvm.func @_mlir_memref_to_llvm_alloc(i64) -> !llvm.ptr
// CHECK-DAG:   llvm.func @_mlir_memref_to_llvm_free(!llvm.ptr)
// CHECK-LABEL: llvm.func @step
// CHECK-SAME:    (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: i64, %{{.*}}: i64, %{{.*}}: i64, %[[N:.*]]: i64)
// CHECK-NOT:     builtin.unrealized_conversion_cast
// CHECK:         llvm.call @_mlir_memref_to_llvm_alloc
// CHECK:         llvm.br ^[[HEAD:.*]](
// CHECK:       ^[[HEAD]](%[[I:.*]]: i64
// CHECK:         llvm.icmp "slt" %[[I]], %[[N]]
// CHECK:         llvm.cond_br
// CHECK:         llvm.fadd
// CHECK:         llvm.store
// CHECK:         llvm.add %[[I]]
// CHECK:         llvm.call @_mlir_memref_to_llvm_free
// CHECK:         llvm.return
// CHECK-NOT:   builtin.unrealized_conversion_cast
func.func @step(%x: memref<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %tmp = memref.alloc() : memref<4xf32>
  cf.br ^head(%c0 : index)
^head(%i: index):
  %more = index.cmp slt(%i, %n)
  cf.cond_br %more, ^body, ^exit
^body:
  %v = memref.load %x[%i] : memref<4xf32>
  %w = arith.addf %v, %v : f32
  memref.store %w, %tmp[%i] : memref<4xf32>
  %next = index.add %i, %c1
  cf.br ^head(%next : index)
^exit:
  memref.dealloc %tmp : memref<4xf32>
  return
}

// -----

// An op none of the conversions handles keeps its memref operand: the cast
// to its old type cannot be reconciled, and that is an error located at the
// value.

// expected-error @+1 {{a value of type '!llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>' is still used as 'memref<4xf32>' after the conversion to the LLVM dialect}}
func.func @unconverted(%x: memref<4xf32>, %v: f32) {
  linalg.fill ins(%v : f32) outs(%x : memref<4xf32>)
  return
}

// -----

// maxnumf / minnumf without nnan: compares and selects with their NaN
// semantics, not llvm.intr.maxnum / minnum (LLVM 22's vectorizer drops the
// remainder of such a reduction); with nnan the intrinsic stays.

// CHECK-LABEL: llvm.func @num_min_max
// CHECK-SAME:    (%[[A:.*]]: f32, %[[B:.*]]: f32)
// CHECK:         %[[ANAN:.*]] = llvm.fcmp "uno" %[[A]], %[[A]] : f32
// CHECK:         %[[GT:.*]] = llvm.fcmp "ugt" %[[A]], %[[B]] : f32
// CHECK:         %[[MAXAB:.*]] = llvm.select %[[GT]], %[[A]], %[[B]]
// CHECK:         %[[MAX:.*]] = llvm.select %[[ANAN]], %[[B]], %[[MAXAB]]
// CHECK:         %[[ANAN2:.*]] = llvm.fcmp "uno" %[[A]], %[[A]] : f32
// CHECK:         %[[LT:.*]] = llvm.fcmp "ult" %[[A]], %[[B]] : f32
// CHECK:         %[[MINAB:.*]] = llvm.select %[[LT]], %[[A]], %[[B]]
// CHECK:         %[[MIN:.*]] = llvm.select %[[ANAN2]], %[[B]], %[[MINAB]]
// CHECK:         %[[FAST:.*]] = llvm.intr.maxnum(%[[A]], %[[B]]) {fastmathFlags = #llvm.fastmath<nnan>}
// CHECK:         llvm.insertvalue %[[MAX]]
// CHECK:         llvm.insertvalue %[[MIN]]
// CHECK:         llvm.insertvalue %[[FAST]]
// CHECK-NOT:   llvm.intr.minnum
func.func @num_min_max(%a: f32, %b: f32) -> (f32, f32, f32) {
  %max = arith.maxnumf %a, %b : f32
  %min = arith.minnumf %a, %b : f32
  %fast = arith.maxnumf %a, %b fastmath<nnan> : f32
  return %max, %min, %fast : f32, f32, f32
}

//===- RegisterDialects.cpp - the dialects of a training step ---*- C++ -*-===//
//
// Implements RegisterDialects.h.
//
//===----------------------------------------------------------------------===//

#include "gacc/Dialect/Gacc/IR/RegisterDialects.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::gacc::registerGaccDialects(DialectRegistry &registry) {
  registry.insert<GaccDialect, func::FuncDialect, arith::ArithDialect,
                  math::MathDialect, linalg::LinalgDialect,
                  tensor::TensorDialect, shard::ShardDialect>();
}

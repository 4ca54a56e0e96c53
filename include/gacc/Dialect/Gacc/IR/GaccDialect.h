//===- GaccDialect.h - gacc dialect -----------------------------*- C++ -*-===//
//
// The gacc dialect: role attributes of training-step graphs, the
// micro-batch region op and the scatter-add of an embedding's gradient.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_DIALECT_GACC_IR_GACCDIALECT_H
#define GACC_DIALECT_GACC_IR_GACCDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "gacc/Dialect/Gacc/IR/GaccOpsDialect.h.inc"

#define GET_OP_CLASSES
#include "gacc/Dialect/Gacc/IR/GaccOps.h.inc"

#endif // GACC_DIALECT_GACC_IR_GACCDIALECT_H

//===- AllReduceBufferization.cpp - bufferize shard.all_reduce --*- C++ -*-===//
//
// An external BufferizableOpInterface model for shard.all_reduce: the
// collective reduces its operand's buffer in place (the result is equivalent
// to the operand), so a bucket is reduced where the accumulators live. It
// bufferizes to one call of the runtime:
//   gaccrt_all_reduce(address, count, dtype, kind, bucket)
// where kind is 0 (sum) or 1 (average) and bucket comes from `gacc.bucket`
// (-1 when the collective is not a bucket). The collectives of
// gacc-shard-optimizer-state read their operand and write a new buffer:
//   shard.reduce_scatter -> gaccrt_reduce_scatter(in, out, count, dtype,
//                                                 kind, bucket)
//   shard.all_gather     -> gaccrt_all_gather(in, out, count, dtype, bucket)
// with count the elements of one rank's block (the result, resp. the input).
//
//===----------------------------------------------------------------------===//

#include "RuntimeCalls.h"
#include "gacc/Dialect/Gacc/IR/GaccDialect.h"
#include "gacc/Dialect/Gacc/IR/StepRoles.h"
#include "gacc/Lowering/Common/ExternalModels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/DialectRegistry.h"

using namespace mlir;
using namespace mlir::bufferization;
using namespace mlir::gacc;

/// Returns the address of a contiguous buffer with the contents of
/// `buffer` as an i64 (a strided buffer is copied into a new one, which
/// `copied` receives).
static Value getContiguousAddress(RewriterBase &rewriter, Location loc,
                                  Value buffer, Value &copied) {
  auto type = cast<MemRefType>(buffer.getType());
  Value target = buffer;
  while (auto castOp = target.getDefiningOp<memref::CastOp>()) {
    auto sourceType = cast<MemRefType>(castOp.getSource().getType());
    if (!sourceType.getLayout().isIdentity() ||
        sourceType.getShape() != type.getShape())
      break;
    target = castOp.getSource();
    type = sourceType;
  }
  if (!type.getLayout().isIdentity()) {
    auto plain = MemRefType::get(type.getShape(), type.getElementType());
    target = memref::AllocOp::create(rewriter, loc, plain);
    memref::CopyOp::create(rewriter, loc, buffer, target);
    copied = target;
  }
  Value address =
      memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, target);
  return arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                    address);
}

namespace {
struct AllReduceOpInterface
    : public BufferizableOpInterface::ExternalModel<AllReduceOpInterface,
                                                    shard::AllReduceOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return true;
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &,
                                      const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto allReduce = cast<shard::AllReduceOp>(op);
    auto kind = allReduce.getReduction();
    std::optional<int32_t> runtimeKind = getRuntimeReductionKind(kind);
    if (!runtimeKind)
      return op->emitOpError()
             << "the reduction '" << shard::stringifyReductionKind(kind)
             << "' does not lower to the gacc runtime (sum, average, max, "
                "min and product do)";
    if (allReduce.getInput().getType() != allReduce.getResult().getType())
      return op->emitOpError(
          "expected the same input and result type to reduce in place");
    FailureOr<Value> buffer =
        getBuffer(rewriter, allReduce.getInput(), options, state);
    if (failed(buffer))
      return failure();
    auto type = cast<MemRefType>(buffer->getType());
    std::optional<int32_t> dtype = getRuntimeDType(type.getElementType());
    if (!dtype || !type.hasStaticShape())
      return op->emitOpError() << "cannot reduce a buffer of type " << type
                               << " with the gacc runtime";

    Location loc = op->getLoc();
    // The runtime reduces contiguous memory: reduce a contiguous copy of a
    // strided buffer and copy it back.
    Value copied;
    Value addressI64 = getContiguousAddress(rewriter, loc, *buffer, copied);
    Type i64 = rewriter.getI64Type(), i32 = rewriter.getI32Type();
    Value count =
        arith::ConstantIntOp::create(rewriter, loc, i64, type.getNumElements());
    Value dtypeValue = arith::ConstantIntOp::create(rewriter, loc, i32, *dtype);
    Value kindValue =
        arith::ConstantIntOp::create(rewriter, loc, i32, *runtimeKind);
    int64_t bucket = -1;
    if (auto attr =
            op->getAttrOfType<IntegerAttr>(GaccDialect::kBucketAttrName))
      bucket = attr.getInt();
    Value bucketValue =
        arith::ConstantIntOp::create(rewriter, loc, i64, bucket);
    func::FuncOp callee = getOrDeclareRuntimeFunction(
        op, "gaccrt_all_reduce",
        rewriter.getFunctionType({i64, i64, i32, i32, i64}, {}));
    auto call = func::CallOp::create(
        rewriter, loc, callee,
        ValueRange{addressI64, count, dtypeValue, kindValue, bucketValue});
    // A member of a split bucket: gacc-place-buckets merges the calls of a
    // bucket into one after bufferization.
    if (Attribute offset = op->getAttr(kBucketOffsetAttrName))
      call->setAttr(kBucketOffsetAttrName, offset);
    // gacc-overlap-all-reduce starts it early and waits where it is read.
    if (op->hasAttr(GaccDialect::kOverlapAttrName))
      call->setAttr(GaccDialect::kOverlapAttrName, rewriter.getUnitAttr());
    if (copied) {
      memref::CopyOp::create(rewriter, loc, copied, *buffer);
      memref::DeallocOp::create(rewriter, loc, copied);
    }
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};
/// Bufferizes a collective of gacc-shard-optimizer-state: reads its operand,
/// writes a new buffer through the runtime function `callee`.
template <typename OpTy>
struct ShardCollectiveOpInterface
    : public BufferizableOpInterface::ExternalModel<
          ShardCollectiveOpInterface<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &,
                              const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &,
                               const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &,
                                      const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter,
                          const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto collective = cast<OpTy>(op);
    FailureOr<Value> input =
        getBuffer(rewriter, collective.getInput(), options, state);
    if (failed(input))
      return failure();
    auto inputType = cast<MemRefType>(input->getType());
    auto resultType = cast<RankedTensorType>(collective.getResult().getType());
    std::optional<int32_t> dtype = getRuntimeDType(inputType.getElementType());
    if (!dtype || !inputType.hasStaticShape() || !resultType.hasStaticShape() ||
        resultType.getRank() != 1)
      return op->emitOpError() << "cannot lower a collective of " << inputType
                               << " to the gacc runtime";
    Location loc = op->getLoc();
    Value copied;
    Value in = getContiguousAddress(rewriter, loc, *input, copied);
    auto outType =
        MemRefType::get(resultType.getShape(), resultType.getElementType());
    Value out = memref::AllocOp::create(rewriter, loc, outType);
    Value outAddress = arith::IndexCastOp::create(
        rewriter, loc, rewriter.getI64Type(),
        memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, out));
    Type i64 = rewriter.getI64Type(), i32 = rewriter.getI32Type();
    int64_t bucket = -1;
    if (auto attr =
            op->getAttrOfType<IntegerAttr>(GaccDialect::kBucketAttrName))
      bucket = attr.getInt();
    Value dtypeValue = arith::ConstantIntOp::create(rewriter, loc, i32, *dtype);
    Value bucketValue =
        arith::ConstantIntOp::create(rewriter, loc, i64, bucket);
    func::CallOp call;
    if constexpr (std::is_same_v<OpTy, shard::ReduceScatterOp>) {
      auto kind = collective.getReduction();
      if (kind != shard::ReductionKind::Sum &&
          kind != shard::ReductionKind::Average)
        return op->emitOpError("expected a sum or average reduce-scatter");
      Value count = arith::ConstantIntOp::create(rewriter, loc, i64,
                                                 outType.getNumElements());
      Value kindValue = arith::ConstantIntOp::create(
          rewriter, loc, i32, *getRuntimeReductionKind(kind));
      func::FuncOp callee = getOrDeclareRuntimeFunction(
          op, "gaccrt_reduce_scatter",
          rewriter.getFunctionType({i64, i64, i64, i32, i32, i64}, {}));
      call = func::CallOp::create(rewriter, loc, callee,
                                  ValueRange{in, outAddress, count, dtypeValue,
                                             kindValue, bucketValue});
    } else {
      Value count = arith::ConstantIntOp::create(rewriter, loc, i64,
                                                 inputType.getNumElements());
      func::FuncOp callee = getOrDeclareRuntimeFunction(
          op, "gaccrt_all_gather",
          rewriter.getFunctionType({i64, i64, i64, i32, i64}, {}));
      call = func::CallOp::create(
          rewriter, loc, callee,
          ValueRange{in, outAddress, count, dtypeValue, bucketValue});
    }
    // gacc-overlap-all-reduce starts it early and waits where it is read.
    if (op->hasAttr(GaccDialect::kOverlapAttrName))
      call->setAttr(GaccDialect::kOverlapAttrName, rewriter.getUnitAttr());
    if (copied)
      memref::DeallocOp::create(rewriter, loc, copied);
    replaceOpWithBufferizedValues(rewriter, op, out);
    return success();
  }
};
} // namespace

void mlir::gacc::registerBufferizableOpInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, shard::ShardDialect *) {
    shard::AllReduceOp::attachInterface<AllReduceOpInterface>(*ctx);
    shard::ReduceScatterOp::attachInterface<
        ShardCollectiveOpInterface<shard::ReduceScatterOp>>(*ctx);
    shard::AllGatherOp::attachInterface<
        ShardCollectiveOpInterface<shard::AllGatherOp>>(*ctx);
  });
}

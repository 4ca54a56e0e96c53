//===- BufferAccess.h - which ops touch which buffer bytes ------*- C++ -*-===//
//
// What the buffer-level lowering passes (gacc-matmul-to-blas,
// gacc-pair-accumulating-gemms) ask of a bufferized step: the views of a
// buffer, the ops of a block that touch it, and the bytes a view covers.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_CONVERSION_BUFFERACCESS_H
#define GACC_LIB_CONVERSION_BUFFERACCESS_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace mlir::gacc {

/// Collects `root` and every view of it (transitively) into `aliases`, and
/// into `escapes` the ops that reach the buffer through its address
/// (`memref.extract_aligned_pointer_as_index`, followed through integer
/// arithmetic: e.g. the runtime's all-reduce calls, which may read and write
/// it, also asynchronously until the matching wait). Returns false when the
/// buffer may be reached another way: `root` is not an allocation or an
/// argument of a public function (whose arguments the runner allocates
/// separately), or a view-free op returns a memref derived from it.
bool collectAliases(Value root, SmallVectorImpl<Value> &aliases,
                    SmallVectorImpl<Operation *> &escapes);

/// Whether `user` may write or free `value` (an operand of `user`).
bool mayWriteOrFree(Operation *user, Value value);

/// The ops that touch one buffer (through any view, or through its address),
/// per block as their ancestors in that block in program order; collected
/// once per buffer instead of once per matmul (a bucket has a view per
/// accumulator, each read and written in every region).
class BufferTouchers {
public:
  /// Returns the ops of `block` (in order) that are or contain an op
  /// touching the buffer `root`, valid until the next call; nothing when the
  /// buffer may be reached in a way collectAliases does not follow.
  std::optional<ArrayRef<Operation *>> get(Value root, Block *block);

private:
  DenseMap<Value, std::optional<SmallVector<Operation *>>> users;
  DenseMap<std::pair<Value, Block *>, SmallVector<Operation *>> inBlock;
};

/// The ops of `block` before `op` (in order) that touch `buffer`'s memory,
/// when `touchers` can tell.
std::optional<ArrayRef<Operation *>>
getTouchersBefore(Operation *op, Value buffer, BufferTouchers &touchers);

/// The bytes [begin, end) of a buffer's root allocation that a view covers.
struct ByteRange {
  int64_t begin = 0;
  int64_t end = 0;
};

/// The bytes of its view root that `view` may touch, when its chain of views
/// (casts, reshapes and subviews, then at most one memref.view of the root)
/// has static offsets, sizes and strides throughout (leading casts are
/// looked through): the members of an accumulator bucket.
std::optional<ByteRange> getByteRange(Value view);

/// Whether `toucher`, an op that touches `output`'s buffer directly (not
/// through a nested op or an address), touches it only at bytes provably
/// disjoint from `range`, `output`'s (nothing when unknown): another member
/// of its bucket.
bool touchesOnlyElsewhere(Operation *toucher, Value output,
                          std::optional<ByteRange> range);

} // namespace mlir::gacc

#endif // GACC_LIB_CONVERSION_BUFFERACCESS_H

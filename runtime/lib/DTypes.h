//===- DTypes.h - element types of the collectives ------------------------===//
//
// Names and sizes of the gaccrt_all_reduce dtype codes, shared by the MPI
// (libgaccrt) and NCCL (libgaccrt_cuda) collectives. Header-only: the two
// libraries export only C symbols, so this is compiled into each.
//
//===----------------------------------------------------------------------===//

#ifndef GACCRT_LIB_DTYPES_H
#define GACCRT_LIB_DTYPES_H

#include "gaccrt/gaccrt.h"

#include <cstdint>

namespace gaccrt {

/// The name of a dtype code ("f32", ...), or null for an unknown code.
inline const char *dtypeName(int32_t dtype) {
  switch (dtype) {
  case GACCRT_F32:
    return "f32";
  case GACCRT_F64:
    return "f64";
  case GACCRT_BF16:
    return "bf16";
  case GACCRT_F16:
    return "f16";
  case GACCRT_I32:
    return "i32";
  case GACCRT_I64:
    return "i64";
  default:
    return nullptr;
  }
}

/// The size in bytes of one element of a valid dtype code.
inline int64_t dtypeBytes(int32_t dtype) {
  switch (dtype) {
  case GACCRT_F64:
  case GACCRT_I64:
    return 8;
  case GACCRT_BF16:
  case GACCRT_F16:
    return 2;
  default:
    return 4;
  }
}

} // namespace gaccrt

#endif // GACCRT_LIB_DTYPES_H

//===- Npy.h - NumPy .npy reader and writer ---------------------*- C++ -*-===//
//
// Reads and writes NumPy .npy files (format versions 1.0, 2.0 and 3.0,
// little-endian, C order), the exchange format of gacc-run and gacc-check
// inputs and outputs. Standard C++ and the runtime's C header (for its dtype
// codes) only; errors come back as a message that names the file. bf16 has
// no NumPy dtype: a BF16 array is written as a float32 file, and a float32
// file read for a bf16 input is converted with convertToDType.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_NPY_H
#define GACC_RUNNER_NPY_H

#include "gaccrt/gaccrt.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::gacc {

/// Element types of tensors that cross the tools' file boundary. The types
/// the runtime reduces have the runtime's dtype codes (gaccrt.h), so a DType
/// of those converts to the `dtype` argument of gaccrt_all_reduce; the
/// others exist only in files and inputs.
enum class DType : int32_t {
  F32 = GACCRT_F32,
  F64 = GACCRT_F64,
  BF16 = GACCRT_BF16,
  F16 = GACCRT_F16,
  I32 = GACCRT_I32,
  I64 = GACCRT_I64,
  I8,
  U8,
  Bool
};

/// A dense array in C (row-major) order; `data` holds numElements() *
/// dtypeSize(dtype) bytes, little-endian (BF16: the upper 16 bits of the
/// f32 pattern; Bool: one byte, 0 or 1).
struct NpyArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape; ///< empty for a 0-d (scalar) array
  std::vector<char> data;

  /// Product of the shape (1 for a 0-d array).
  int64_t numElements() const;
};

/// "float32", "float64", "bfloat16", "float16", "int32", "int64", "int8",
/// "uint8", "bool".
std::string dtypeName(DType dtype);

/// Bytes per element.
int64_t dtypeSize(DType dtype);

/// True for F32, F64, BF16, F16.
bool isFloatDType(DType dtype);

/// An array of the given type and shape with zeroed data.
NpyArray makeArray(DType dtype, std::vector<int64_t> shape);

/// Reads `path`. On failure returns false and sets `error` to a message that
/// starts with the path (bad magic, unsupported version, Fortran order, big
/// endian or unsupported dtype, malformed header, truncated data).
bool readNpy(const std::string &path, NpyArray &out, std::string &error);

/// The bytes of `array` as a .npy file (format 1.0, or 2.0 when the header
/// needs it). BF16 arrays are encoded as float32. Returns false with `error`
/// set when the data does not fit the shape.
bool encodeNpy(const NpyArray &array, std::string &bytes, std::string &error);

/// Writes encodeNpy's bytes to `path` with writeFileAtomically (a failure
/// leaves a previous file untouched). Returns false with `error` set to a
/// message that starts with the path.
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

/// Writes `arrays` as the files `<stem><j>.npy` of a result set in `dir`
/// (ResultSetWriter: created if missing, whole or not at all, committed by
/// a MANIFEST). Returns false with `error` naming the file and the cause.
bool writeNpySet(const std::string &dir, const std::string &stem,
                 const std::vector<NpyArray> &arrays, std::string &error);

/// Converts element by element to `dtype` (same shape). Floats round to
/// nearest even (to bf16/f16 through f32); floats to integers truncate toward
/// zero, saturating at the integer range (NaN becomes 0); any non-zero
/// value becomes true for Bool. Integer-to-integer conversions wrap as in
/// C++.
NpyArray convertToDType(const NpyArray &array, DType dtype);

/// Stores `value` as element `index` of `array`, converted as
/// convertToDType converts an F64 element to the array's dtype.
void storeFloatElement(NpyArray &array, int64_t index, double value);

} // namespace mlir::gacc

#endif // GACC_RUNNER_NPY_H

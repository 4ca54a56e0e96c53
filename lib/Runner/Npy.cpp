//===- Npy.cpp - NumPy .npy reader and writer -----------------------------===//
//
// The .npy format: the magic "\x93NUMPY", a version byte pair, a little-endian
// header length (2 bytes in 1.0, 4 bytes in 2.0 and 3.0), a Python dict
// literal {'descr': ..., 'fortran_order': ..., 'shape': (...), } padded with
// spaces and a newline so that the data starts 64-byte aligned, then the raw
// data. See numpy/lib/format.py.
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/Npy.h"

#include "gacc/Runner/AtomicFile.h"

#include "gaccrt/half.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <sys/stat.h>

using namespace mlir::gacc;

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr size_t kHeaderAlignment = 64;

bool isIntegerDType(DType dtype) { return !isFloatDType(dtype); }

/// The descr that writeNpy uses and readNpy accepts for `dtype`.
const char *descrOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::BF16: // written as float32
    return "<f4";
  case DType::F64:
    return "<f8";
  case DType::F16:
    return "<f2";
  case DType::I32:
    return "<i4";
  case DType::I64:
    return "<i8";
  case DType::I8:
    return "|i1";
  case DType::U8:
    return "|u1";
  case DType::Bool:
    return "|b1";
  }
  return "";
}

bool parseDescr(const std::string &descr, DType &dtype, std::string &error) {
  if (descr.size() >= 2 && descr[0] == '>' && descr.substr(1) != "i1" &&
      descr.substr(1) != "u1" && descr.substr(1) != "b1") {
    error = "big-endian data ('" + descr + "') is not supported";
    return false;
  }
  // '<' is little-endian, '=' native (little-endian here), '|' not
  // applicable (one-byte types); a one-byte type may carry any of them.
  std::string body = descr;
  if (!body.empty() &&
      (body[0] == '<' || body[0] == '=' || body[0] == '|' || body[0] == '>'))
    body = body.substr(1);
  bool oneByte = body == "i1" || body == "u1" || body == "b1";
  if (!oneByte && !descr.empty() && descr[0] == '|') {
    error = "invalid dtype '" + descr + "'";
    return false;
  }
  static const struct {
    const char *name;
    DType dtype;
  } kTypes[] = {{"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16},
                {"i4", DType::I32}, {"i8", DType::I64}, {"i1", DType::I8},
                {"u1", DType::U8},  {"b1", DType::Bool}};
  for (const auto &type : kTypes)
    if (body == type.name) {
      dtype = type.dtype;
      return true;
    }
  error = "unsupported dtype '" + descr +
          "' (supported: float32, float64, float16, int32, int64, int8, "
          "uint8, bool)";
  return false;
}

/// A minimal parser of the header's Python dict literal.
class HeaderParser {
public:
  explicit HeaderParser(const std::string &text) : text(text) {}

  bool parse(std::string &descr, bool &fortranOrder,
             std::vector<int64_t> &shape, std::string &error) {
    bool haveDescr = false, haveOrder = false, haveShape = false;
    if (!expect('{', error))
      return false;
    while (true) {
      skipSpace();
      if (peek() == '}') {
        ++pos;
        break;
      }
      std::string key;
      if (!parseString(key, error) || !expect(':', error))
        return false;
      skipSpace();
      if (key == "descr") {
        if (peek() == '[') {
          error = "structured dtypes are not supported";
          return false;
        }
        if (!parseString(descr, error))
          return false;
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (!parseBool(fortranOrder, error))
          return false;
        haveOrder = true;
      } else if (key == "shape") {
        if (!parseShape(shape, error))
          return false;
        haveShape = true;
      } else {
        error = "unexpected header key '" + key + "'";
        return false;
      }
      skipSpace();
      if (peek() == ',') {
        ++pos;
        continue;
      }
      if (!expect('}', error))
        return false;
      break;
    }
    if (!haveDescr || !haveOrder || !haveShape) {
      error = "header lacks '" +
              std::string(!haveDescr   ? "descr"
                          : !haveOrder ? "fortran_order"
                                       : "shape") +
              "'";
      return false;
    }
    return true;
  }

private:
  char peek() const { return pos < text.size() ? text[pos] : '\0'; }

  void skipSpace() {
    while (pos < text.size() &&
           std::isspace(static_cast<unsigned char>(text[pos])))
      ++pos;
  }

  bool expect(char c, std::string &error) {
    skipSpace();
    if (peek() != c) {
      error = std::string("malformed header: expected '") + c + "' at offset " +
              std::to_string(pos) + " in " + text;
      return false;
    }
    ++pos;
    return true;
  }

  bool parseString(std::string &out, std::string &error) {
    skipSpace();
    char quote = peek();
    if (quote != '\'' && quote != '"') {
      error = "malformed header: expected a string at offset " +
              std::to_string(pos) + " in " + text;
      return false;
    }
    size_t end = text.find(quote, pos + 1);
    if (end == std::string::npos) {
      error = "malformed header: unterminated string in " + text;
      return false;
    }
    out = text.substr(pos + 1, end - pos - 1);
    pos = end + 1;
    return true;
  }

  bool parseBool(bool &out, std::string &error) {
    if (text.compare(pos, 4, "True") == 0) {
      out = true;
      pos += 4;
      return true;
    }
    if (text.compare(pos, 5, "False") == 0) {
      out = false;
      pos += 5;
      return true;
    }
    error = "malformed header: expected True or False at offset " +
            std::to_string(pos) + " in " + text;
    return false;
  }

  bool parseShape(std::vector<int64_t> &shape, std::string &error) {
    if (!expect('(', error))
      return false;
    shape.clear();
    while (true) {
      skipSpace();
      if (peek() == ')') {
        ++pos;
        return true;
      }
      if (!std::isdigit(static_cast<unsigned char>(peek()))) {
        error = "malformed header: expected a dimension at offset " +
                std::to_string(pos) + " in " + text;
        return false;
      }
      int64_t value = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value > (std::numeric_limits<int64_t>::max() - 9) / 10) {
          error = "malformed header: dimension too large in " + text;
          return false;
        }
        value = value * 10 + (text[pos++] - '0');
      }
      if (peek() == 'L') // Python 2 long suffix
        ++pos;
      shape.push_back(value);
      skipSpace();
      if (peek() == ',')
        ++pos;
      else if (peek() != ')') {
        error = "malformed header: expected ',' or ')' at offset " +
                std::to_string(pos) + " in " + text;
        return false;
      }
    }
  }

  const std::string &text;
  size_t pos = 0;
};

/// numElements() with an overflow check; -1 when it overflows.
int64_t checkedElementCount(const std::vector<int64_t> &shape,
                            int64_t elementSize) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      return -1;
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim)
      return -1;
    count *= dim;
  }
  if (count > std::numeric_limits<int64_t>::max() / elementSize)
    return -1;
  return count;
}

template <typename T> T loadAs(const char *p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

template <typename T> void storeAs(char *p, T value) {
  std::memcpy(p, &value, sizeof(T));
}

double loadFloat(const char *p, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return loadAs<float>(p);
  case DType::F64:
    return loadAs<double>(p);
  case DType::BF16:
    return gaccrt_bf16_to_f32(loadAs<uint16_t>(p));
  case DType::F16:
    return gaccrt_f16_to_f32(loadAs<uint16_t>(p));
  case DType::I32:
    return loadAs<int32_t>(p);
  case DType::I64:
    return static_cast<double>(loadAs<int64_t>(p));
  case DType::I8:
    return loadAs<int8_t>(p);
  case DType::U8:
    return loadAs<uint8_t>(p);
  case DType::Bool:
    return loadAs<uint8_t>(p) != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

int64_t loadInteger(const char *p, DType dtype) {
  switch (dtype) {
  case DType::I32:
    return loadAs<int32_t>(p);
  case DType::I64:
    return loadAs<int64_t>(p);
  case DType::I8:
    return loadAs<int8_t>(p);
  case DType::U8:
    return loadAs<uint8_t>(p);
  case DType::Bool:
    return loadAs<uint8_t>(p) != 0 ? 1 : 0;
  default:
    return 0;
  }
}

void storeInteger(char *p, DType dtype, int64_t value) {
  switch (dtype) {
  case DType::I32:
    storeAs(p, static_cast<int32_t>(value));
    return;
  case DType::I64:
    storeAs(p, value);
    return;
  case DType::I8:
    storeAs(p, static_cast<int8_t>(value));
    return;
  case DType::U8:
    storeAs(p, static_cast<uint8_t>(value));
    return;
  case DType::Bool:
    storeAs(p, static_cast<uint8_t>(value != 0 ? 1 : 0));
    return;
  default:
    return;
  }
}

/// Truncates toward zero, saturating at T's range; NaN becomes 0.
template <typename T> T saturatingCast(double value) {
  if (std::isnan(value))
    return 0;
  // min (0 or -2^n) and max + 1 (2^n) are exact as doubles; max may not be.
  double lowest = static_cast<double>(std::numeric_limits<T>::min());
  double limit =
      2.0 * static_cast<double>(std::numeric_limits<T>::max() / 2 + 1);
  if (value <= lowest)
    return std::numeric_limits<T>::min();
  if (value >= limit)
    return std::numeric_limits<T>::max();
  return static_cast<T>(value);
}

void storeFloat(char *p, DType dtype, double value) {
  switch (dtype) {
  case DType::F32:
    storeAs(p, static_cast<float>(value));
    return;
  case DType::F64:
    storeAs(p, value);
    return;
  case DType::BF16:
    storeAs(p, gaccrt_f32_to_bf16(static_cast<float>(value)));
    return;
  case DType::F16:
    storeAs(p, gaccrt_f32_to_f16(static_cast<float>(value)));
    return;
  case DType::I32:
    storeAs(p, saturatingCast<int32_t>(value));
    return;
  case DType::I64:
    storeAs(p, saturatingCast<int64_t>(value));
    return;
  case DType::I8:
    storeAs(p, saturatingCast<int8_t>(value));
    return;
  case DType::U8:
    storeAs(p, saturatingCast<uint8_t>(value));
    return;
  case DType::Bool:
    storeAs(p, static_cast<uint8_t>(value != 0.0 ? 1 : 0));
    return;
  }
}

} // namespace

int64_t NpyArray::numElements() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::string mlir::gacc::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "float32";
  case DType::F64:
    return "float64";
  case DType::BF16:
    return "bfloat16";
  case DType::F16:
    return "float16";
  case DType::I32:
    return "int32";
  case DType::I64:
    return "int64";
  case DType::I8:
    return "int8";
  case DType::U8:
    return "uint8";
  case DType::Bool:
    return "bool";
  }
  return "unknown";
}

int64_t mlir::gacc::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F64:
  case DType::I64:
    return 8;
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::BF16:
  case DType::F16:
    return 2;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  }
  return 1;
}

bool mlir::gacc::isFloatDType(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 ||
         dtype == DType::F16;
}

NpyArray mlir::gacc::makeArray(DType dtype, std::vector<int64_t> shape) {
  NpyArray array;
  array.dtype = dtype;
  array.shape = std::move(shape);
  array.data.assign(static_cast<size_t>(array.numElements() * dtypeSize(dtype)),
                    0);
  return array;
}

bool mlir::gacc::readNpy(const std::string &path, NpyArray &out,
                         std::string &error) {
  auto fail = [&](const std::string &message) {
    error = path + ": " + message;
    return false;
  };
  // A directory opens as a stream but fails (throws) on the first read.
  struct stat info;
  if (::stat(path.c_str(), &info) != 0)
    return fail("cannot open the file: " + std::string(std::strerror(errno)));
  if (S_ISDIR(info.st_mode))
    return fail("is a directory, expected a .npy file");
  if (!S_ISREG(info.st_mode))
    return fail("not a regular file, expected a .npy file");
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return fail("cannot open the file: " + std::string(std::strerror(errno)));
  std::vector<char> bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(file),
                 std::istreambuf_iterator<char>());
  } catch (const std::exception &e) {
    return fail(std::string("cannot read the file: ") + e.what());
  }
  if (file.bad())
    return fail("cannot read the file");

  if (bytes.size() < kMagicSize + 2 ||
      std::memcmp(bytes.data(), kMagic, kMagicSize) != 0)
    return fail("not a .npy file (bad magic)");
  int major = static_cast<unsigned char>(bytes[kMagicSize]);
  int minor = static_cast<unsigned char>(bytes[kMagicSize + 1]);
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fail("unsupported .npy format version " + std::to_string(major) +
                "." + std::to_string(minor));
  size_t lengthBytes = major == 1 ? 2 : 4;
  size_t headerStart = kMagicSize + 2 + lengthBytes;
  if (bytes.size() < headerStart)
    return fail("truncated header");
  size_t headerLength = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerLength |= static_cast<size_t>(
                        static_cast<unsigned char>(bytes[kMagicSize + 2 + i]))
                    << (8 * i);
  if (bytes.size() - headerStart < headerLength)
    return fail("truncated header (" + std::to_string(headerLength) +
                " bytes announced, " +
                std::to_string(bytes.size() - headerStart) + " present)");
  std::string header(bytes.data() + headerStart, headerLength);

  std::string descr, headerError;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
  if (!HeaderParser(header).parse(descr, fortranOrder, shape, headerError))
    return fail(headerError);
  DType dtype;
  if (!parseDescr(descr, dtype, headerError))
    return fail(headerError);
  if (fortranOrder)
    return fail("Fortran-order arrays are not supported (save a C-order "
                "array, e.g. numpy.ascontiguousarray)");
  int64_t count = checkedElementCount(shape, dtypeSize(dtype));
  if (count < 0)
    return fail("the shape in the header is too large: " + header);
  size_t dataBytes = static_cast<size_t>(count * dtypeSize(dtype));
  size_t dataStart = headerStart + headerLength;
  if (bytes.size() - dataStart < dataBytes)
    return fail("truncated data: expected " + std::to_string(dataBytes) +
                " bytes for " + std::to_string(count) + " " + dtypeName(dtype) +
                " elements, found " + std::to_string(bytes.size() - dataStart));

  out.dtype = dtype;
  out.shape = std::move(shape);
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(dataStart),
                  bytes.begin() +
                      static_cast<std::ptrdiff_t>(dataStart + dataBytes));
  return true;
}

bool mlir::gacc::encodeNpy(const NpyArray &array, std::string &bytes,
                           std::string &error) {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  int64_t count = checkedElementCount(array.shape, dtypeSize(array.dtype));
  if (count < 0)
    return fail("invalid shape");
  if (static_cast<int64_t>(array.data.size()) != count * dtypeSize(array.dtype))
    return fail("the array holds " + std::to_string(array.data.size()) +
                " bytes, its shape and dtype need " +
                std::to_string(count * dtypeSize(array.dtype)));
  const NpyArray *source = &array;
  NpyArray converted;
  if (array.dtype == DType::BF16) {
    converted = convertToDType(array, DType::F32);
    source = &converted;
  }

  std::string shapeText;
  for (size_t i = 0; i < array.shape.size(); ++i)
    shapeText += (i ? ", " : "") + std::to_string(array.shape[i]);
  if (array.shape.size() == 1)
    shapeText += ",";
  std::string header = "{'descr': '" + std::string(descrOf(array.dtype)) +
                       "', 'fortran_order': False, 'shape': (" + shapeText +
                       "), }";
  // Pad with spaces and end with a newline so that the data is 64-byte
  // aligned; format 2.0 only when the header outgrows 1.0's 16-bit length.
  auto pad = [&](size_t lengthBytes) {
    size_t unpadded = kMagicSize + 2 + lengthBytes + header.size() + 1;
    return header.size() + 1 +
           (kHeaderAlignment - unpadded % kHeaderAlignment) % kHeaderAlignment;
  };
  size_t lengthBytes = pad(2) <= 65535 ? 2 : 4;
  int major = lengthBytes == 2 ? 1 : 2;
  header.append(pad(lengthBytes) - header.size() - 1, ' ');
  header += '\n';

  std::string prefix(kMagic, kMagicSize);
  prefix += static_cast<char>(major);
  prefix += '\0';
  for (size_t i = 0; i < lengthBytes; ++i)
    prefix += static_cast<char>((header.size() >> (8 * i)) & 0xff);

  bytes.clear();
  bytes.reserve(prefix.size() + header.size() + source->data.size());
  bytes += prefix;
  bytes += header;
  bytes.append(source->data.data(), source->data.size());
  return true;
}

bool mlir::gacc::writeNpy(const std::string &path, const NpyArray &array,
                          std::string &error) {
  std::string bytes;
  if (!encodeNpy(array, bytes, error)) {
    error = path + ": " + error;
    return false;
  }
  return writeFileAtomically(path, bytes, error);
}

bool mlir::gacc::writeNpySet(const std::string &dir, const std::string &stem,
                             const std::vector<NpyArray> &arrays,
                             std::string &error) {
  ResultSetWriter writer(dir);
  for (size_t j = 0; j < arrays.size(); ++j) {
    std::string name = stem + std::to_string(j) + ".npy", bytes;
    if (!encodeNpy(arrays[j], bytes, error)) {
      error = dir + "/" + name + ": " + error;
      return false;
    }
    if (!writer.add(name, bytes, error))
      return false;
  }
  return writer.commit(error);
}

void mlir::gacc::storeFloatElement(NpyArray &array, int64_t index,
                                   double value) {
  storeFloat(array.data.data() + index * dtypeSize(array.dtype), array.dtype,
             value);
}

NpyArray mlir::gacc::convertToDType(const NpyArray &array, DType dtype) {
  if (array.dtype == dtype)
    return array;
  NpyArray result = makeArray(dtype, array.shape);
  int64_t count = array.numElements();
  int64_t fromSize = dtypeSize(array.dtype), toSize = dtypeSize(dtype);
  const char *from = array.data.data();
  char *to = result.data.data();
  bool viaInteger = isIntegerDType(array.dtype) && isIntegerDType(dtype);
  for (int64_t i = 0; i < count; ++i) {
    if (viaInteger)
      storeInteger(to + i * toSize, dtype,
                   loadInteger(from + i * fromSize, array.dtype));
    else
      storeFloat(to + i * toSize, dtype,
                 loadFloat(from + i * fromSize, array.dtype));
  }
  return result;
}

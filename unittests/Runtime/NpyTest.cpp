//===- NpyTest.cpp - The .npy reader and writer of the tools --------------===//

#include "Npy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

using namespace mlir::gacc;

namespace {

std::string input(const std::string &name) {
  return std::string(GACCRT_TEST_INPUTS) + "/" + name;
}

std::string temporary(const std::string &name) {
  return testing::TempDir() + "gaccrt-npy-" + name;
}

template <typename T> std::vector<T> elements(const NpyArray &array) {
  std::vector<T> values(size_t(array.numElements()));
  EXPECT_EQ(array.data.size(), values.size() * sizeof(T));
  std::memcpy(values.data(), array.data.data(), array.data.size());
  return values;
}

template <typename T>
NpyArray fromValues(DType dtype, std::vector<int64_t> shape,
                    const std::vector<T> &values) {
  NpyArray array = makeArray(dtype, std::move(shape));
  EXPECT_EQ(array.data.size(), values.size() * sizeof(T));
  std::memcpy(array.data.data(), values.data(), array.data.size());
  return array;
}

NpyArray readOrFail(const std::string &path) {
  NpyArray array;
  std::string error;
  EXPECT_TRUE(readNpy(path, array, error)) << error;
  return array;
}

std::string readError(const std::string &path) {
  NpyArray array;
  std::string error;
  EXPECT_FALSE(readNpy(path, array, error));
  return error;
}

TEST(Npy, DTypeNamesAndSizes) {
  EXPECT_EQ(dtypeName(DType::F32), "float32");
  EXPECT_EQ(dtypeName(DType::BF16), "bfloat16");
  EXPECT_EQ(dtypeName(DType::F16), "float16");
  EXPECT_EQ(dtypeName(DType::Bool), "bool");
  EXPECT_EQ(dtypeSize(DType::F64), 8);
  EXPECT_EQ(dtypeSize(DType::BF16), 2);
  EXPECT_EQ(dtypeSize(DType::U8), 1);
  EXPECT_EQ(makeArray(DType::I32, {}).numElements(), 1);
  EXPECT_EQ(makeArray(DType::I32, {0, 3}).numElements(), 0);
}

TEST(Npy, ReadsFilesWrittenByNumPy) {
  NpyArray f32 = readOrFail(input("f32_2x3.npy"));
  EXPECT_EQ(f32.dtype, DType::F32);
  EXPECT_EQ(f32.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(elements<float>(f32),
            (std::vector<float>{-1.5f, -0.5f, 0.5f, 1.5f, 2.5f, 3.5f}));

  NpyArray scalar = readOrFail(input("f64_scalar.npy"));
  EXPECT_EQ(scalar.dtype, DType::F64);
  EXPECT_TRUE(scalar.shape.empty());
  EXPECT_EQ(elements<double>(scalar), (std::vector<double>{3.25}));

  NpyArray f16 = readOrFail(input("f16_3.npy"));
  EXPECT_EQ(f16.dtype, DType::F16);
  EXPECT_EQ(elements<float>(convertToDType(f16, DType::F32)),
            (std::vector<float>{0.5f, -1.0f, 65504.0f}));

  NpyArray i32 = readOrFail(input("i32_2x2.npy"));
  EXPECT_EQ(i32.dtype, DType::I32);
  EXPECT_EQ(elements<int32_t>(i32),
            (std::vector<int32_t>{1, -2, 3, 2147483647}));

  NpyArray i64 = readOrFail(input("i64_4.npy"));
  EXPECT_EQ(i64.dtype, DType::I64);
  EXPECT_EQ(elements<int64_t>(i64),
            (std::vector<int64_t>{1, -2, 3, int64_t(1) << 40}));

  NpyArray i8 = readOrFail(input("i8_3.npy"));
  EXPECT_EQ(i8.dtype, DType::I8);
  EXPECT_EQ(elements<int8_t>(i8), (std::vector<int8_t>{-128, 0, 127}));

  NpyArray u8 = readOrFail(input("u8_2.npy"));
  EXPECT_EQ(u8.dtype, DType::U8);
  EXPECT_EQ(elements<uint8_t>(u8), (std::vector<uint8_t>{0, 255}));

  NpyArray boolean = readOrFail(input("bool_4.npy"));
  EXPECT_EQ(boolean.dtype, DType::Bool);
  EXPECT_EQ(elements<uint8_t>(boolean), (std::vector<uint8_t>{1, 0, 0, 1}));

  EXPECT_EQ(elements<float>(readOrFail(input("f32_v2.npy"))),
            (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(elements<float>(readOrFail(input("f32_v3.npy"))),
            (std::vector<float>{4.0f}));
}

TEST(Npy, RoundTripsEveryDType) {
  struct Case {
    DType dtype;
    std::vector<int64_t> shape;
  };
  const Case cases[] = {{DType::F32, {2, 3}}, {DType::F64, {}},
                        {DType::F16, {5}},    {DType::I32, {1, 1}},
                        {DType::I64, {4}},    {DType::I8, {2, 2}},
                        {DType::U8, {3}},     {DType::Bool, {2}},
                        {DType::F32, {0, 4}}, {DType::F64, {2, 1, 3}}};
  int index = 0;
  for (const Case &test : cases) {
    NpyArray array = makeArray(test.dtype, test.shape);
    for (size_t i = 0; i < array.data.size(); ++i)
      array.data[i] = char(test.dtype == DType::Bool ? i % 2 : i * 37 + 5);
    std::string path =
        temporary("roundtrip" + std::to_string(index++) + ".npy");
    std::string error;
    ASSERT_TRUE(writeNpy(path, array, error)) << error;
    NpyArray back = readOrFail(path);
    EXPECT_EQ(back.dtype, array.dtype) << dtypeName(test.dtype);
    EXPECT_EQ(back.shape, array.shape) << dtypeName(test.dtype);
    EXPECT_EQ(back.data, array.data) << dtypeName(test.dtype);
    // The data starts 64-byte aligned, as NumPy writes it.
    std::ifstream file(path, std::ios::binary | std::ios::ate);
    EXPECT_EQ((int64_t(file.tellg()) - int64_t(array.data.size())) % 64, 0);
  }
}

TEST(Npy, BF16IsWrittenAsFloat32) {
  NpyArray f32 =
      fromValues<float>(DType::F32, {3}, {1.0f, -0.375f, 1.00390625f});
  NpyArray bf16 = convertToDType(f32, DType::BF16);
  EXPECT_EQ(elements<uint16_t>(bf16),
            (std::vector<uint16_t>{0x3f80, 0xbec0, 0x3f80})); // tie to even
  std::string path = temporary("bf16.npy"), error;
  ASSERT_TRUE(writeNpy(path, bf16, error)) << error;
  NpyArray back = readOrFail(path);
  EXPECT_EQ(back.dtype, DType::F32);
  EXPECT_EQ(elements<float>(back), (std::vector<float>{1.0f, -0.375f, 1.0f}));
  EXPECT_EQ(convertToDType(back, DType::BF16).data, bf16.data);
}

TEST(Npy, Conversions) {
  NpyArray f64 = fromValues<double>(
      DType::F64, {6}, {1.9, -1.9, 3e10, -3e10, std::nan(""), 0.0});
  EXPECT_EQ(elements<int32_t>(convertToDType(f64, DType::I32)),
            (std::vector<int32_t>{1, -1, 2147483647, -2147483647 - 1, 0, 0}));
  EXPECT_EQ(elements<uint8_t>(convertToDType(f64, DType::U8)),
            (std::vector<uint8_t>{1, 0, 255, 0, 0, 0}));
  EXPECT_EQ(elements<uint8_t>(convertToDType(f64, DType::Bool)),
            (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
  NpyArray i64 =
      fromValues<int64_t>(DType::I64, {3}, {(int64_t(1) << 53) + 1, -7, 0});
  EXPECT_EQ(elements<int32_t>(convertToDType(i64, DType::I32)),
            (std::vector<int32_t>{1, -7, 0})); // wraps, like C++
  EXPECT_EQ(elements<float>(convertToDType(i64, DType::F32))[1], -7.0f);
  NpyArray f32 = fromValues<float>(DType::F32, {2}, {0.1f, 70000.0f});
  NpyArray f16 = convertToDType(f32, DType::F16);
  EXPECT_EQ(elements<uint16_t>(f16), (std::vector<uint16_t>{0x2e66, 0x7c00}));
  EXPECT_FLOAT_EQ(elements<double>(convertToDType(f16, DType::F64))[0],
                  0.0999755859375);
}

TEST(Npy, NumPyReadsWhatWeWrite) {
  std::string python = GACCRT_PYTHON3;
  if (python.empty() ||
      std::system((python + " -c 'import numpy' 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "no python3 with numpy";
  std::string error;
  NpyArray f32 =
      fromValues<float>(DType::F32, {2, 2}, {1.0f, 2.5f, -3.0f, 4.0f});
  NpyArray i64 =
      fromValues<int64_t>(DType::I64, {3}, {-1, 0, int64_t(1) << 40});
  NpyArray f16 = convertToDType(f32, DType::F16);
  NpyArray boolean = fromValues<uint8_t>(DType::Bool, {}, {1});
  ASSERT_TRUE(writeNpy(temporary("np-f32.npy"), f32, error)) << error;
  ASSERT_TRUE(writeNpy(temporary("np-i64.npy"), i64, error)) << error;
  ASSERT_TRUE(writeNpy(temporary("np-f16.npy"), f16, error)) << error;
  ASSERT_TRUE(writeNpy(temporary("np-bool.npy"), boolean, error)) << error;
  std::string script = temporary("check.py");
  std::ofstream(script) << R"PY(
import sys
import numpy as np
prefix = sys.argv[1]
a = np.load(prefix + "np-f32.npy")
assert a.dtype == np.float32 and a.tolist() == [[1.0, 2.5], [-3.0, 4.0]], a
b = np.load(prefix + "np-i64.npy")
assert b.dtype == np.int64 and b.tolist() == [-1, 0, 2**40], b
c = np.load(prefix + "np-f16.npy")
assert c.dtype == np.float16 and c.tolist() == [[1.0, 2.5], [-3.0, 4.0]], c
d = np.load(prefix + "np-bool.npy")
assert d.dtype == np.bool_ and d.shape == () and bool(d), d
)PY";
  std::string command = python + " " + script + " " + temporary("").c_str();
  EXPECT_EQ(std::system(command.c_str()), 0);
}

TEST(Npy, ErrorsNameTheFileAndTheProblem) {
  std::string fortran = readError(input("fortran_f32_2x3.npy"));
  EXPECT_NE(fortran.find(input("fortran_f32_2x3.npy") + ": Fortran-order"),
            std::string::npos)
      << fortran;

  std::string bigEndian = readError(input("bigendian_f32.npy"));
  EXPECT_NE(bigEndian.find("big-endian data ('>f4') is not supported"),
            std::string::npos)
      << bigEndian;

  // Truncate a good file in the middle of its data.
  std::ifstream good(input("f32_2x3.npy"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(good)),
                    std::istreambuf_iterator<char>());
  std::string truncated = temporary("truncated.npy");
  std::ofstream(truncated, std::ios::binary)
      << bytes.substr(0, bytes.size() - 5);
  std::string truncatedError = readError(truncated);
  EXPECT_NE(truncatedError.find(truncated +
                                ": truncated data: expected 24 bytes for 6 "
                                "float32 elements, found 19"),
            std::string::npos)
      << truncatedError;

  std::string shortHeader = temporary("short-header.npy");
  std::ofstream(shortHeader, std::ios::binary) << bytes.substr(0, 40);
  EXPECT_NE(readError(shortHeader).find("truncated header"), std::string::npos);

  std::string notNpy = temporary("not.npy");
  std::ofstream(notNpy) << "hello, world";
  EXPECT_NE(readError(notNpy).find(notNpy + ": not a .npy file (bad magic)"),
            std::string::npos);

  std::string missing = temporary("does-not-exist.npy");
  EXPECT_NE(readError(missing).find(missing + ": cannot open the file"),
            std::string::npos);

  // A directory named like an input is an error, not an uncaught exception.
  std::string directory = temporary("dir.npy");
  std::filesystem::create_directories(directory);
  EXPECT_NE(readError(directory).find(directory + ": is a directory"),
            std::string::npos);

  std::string unsupported = temporary("complex.npy");
  std::string header = "{'descr': '<c8', 'fortran_order': False, "
                       "'shape': (1,), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  std::ofstream(unsupported, std::ios::binary)
      << std::string("\x93NUMPY\x01\x00", 8) << char(header.size() & 0xff)
      << char(header.size() >> 8) << header << std::string(8, '\0');
  EXPECT_NE(readError(unsupported).find("unsupported dtype '<c8'"),
            std::string::npos);
}

} // namespace

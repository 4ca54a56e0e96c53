//===- MemoryTest.cpp - Accounting of the compiled code's allocations -----===//

#include "gaccrt/gaccrt.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

bool isAligned(const void *ptr, size_t alignment) {
  return reinterpret_cast<uintptr_t>(ptr) % alignment == 0;
}

TEST(Memory, AllocFreeAndPeak) {
  int64_t base = gaccrt_current_bytes();
  void *a = _mlir_memref_to_llvm_alloc(100);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(isAligned(a, 16));
  std::memset(a, 0xab, 100);
  EXPECT_EQ(gaccrt_current_bytes(), base + 100);
  EXPECT_GE(gaccrt_peak_bytes(), base + 100);

  void *b = _mlir_memref_to_llvm_aligned_alloc(64, 1000);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(isAligned(b, 64));
  std::memset(b, 0xcd, 1000);
  EXPECT_EQ(gaccrt_current_bytes(), base + 1100);
  EXPECT_GE(gaccrt_peak_bytes(), base + 1100);

  _mlir_memref_to_llvm_free(a);
  EXPECT_EQ(gaccrt_current_bytes(), base + 1000);
  EXPECT_GE(gaccrt_peak_bytes(), base + 1100);

  gaccrt_reset_peak();
  EXPECT_EQ(gaccrt_peak_bytes(), base + 1000);
  _mlir_memref_to_llvm_free(b);
  EXPECT_EQ(gaccrt_current_bytes(), base);
  EXPECT_EQ(gaccrt_peak_bytes(), base + 1000);
  gaccrt_reset_peak();
  EXPECT_EQ(gaccrt_peak_bytes(), base);
}

TEST(Memory, AlignedAllocHonorsEveryAlignment) {
  int64_t base = gaccrt_current_bytes();
  std::vector<void *> blocks;
  for (size_t alignment = 1; alignment <= 8192; alignment *= 2) {
    void *block = _mlir_memref_to_llvm_aligned_alloc(alignment, 33);
    ASSERT_NE(block, nullptr);
    EXPECT_TRUE(isAligned(block, alignment)) << "alignment " << alignment;
    std::memset(block, 0x5a, 33);
    blocks.push_back(block);
  }
  EXPECT_EQ(gaccrt_current_bytes(), base + 33 * int64_t(blocks.size()));
  for (void *block : blocks)
    _mlir_memref_to_llvm_free(block);
  EXPECT_EQ(gaccrt_current_bytes(), base);
}

TEST(Memory, ZeroSizeAndNull) {
  int64_t base = gaccrt_current_bytes();
  void *empty = _mlir_memref_to_llvm_alloc(0);
  EXPECT_NE(empty, nullptr);
  EXPECT_EQ(gaccrt_current_bytes(), base);
  _mlir_memref_to_llvm_free(empty);
  _mlir_memref_to_llvm_free(nullptr);
  EXPECT_EQ(gaccrt_current_bytes(), base);
}

TEST(Memory, ThreadSafeCounters) {
  int64_t base = gaccrt_current_bytes();
  gaccrt_reset_peak();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([] {
      for (int i = 0; i < 2000; ++i) {
        void *block = i % 2 ? _mlir_memref_to_llvm_alloc(24)
                            : _mlir_memref_to_llvm_aligned_alloc(32, 24);
        _mlir_memref_to_llvm_free(block);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(gaccrt_current_bytes(), base);
  // At most one block per thread was live at any time.
  EXPECT_GE(gaccrt_peak_bytes(), base + 24);
  EXPECT_LE(gaccrt_peak_bytes(), base + 4 * 24);
}

/// The VmFlags line of the mapping of /proc/self/smaps that holds `address`.
std::string vmFlagsAt(const void *address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  auto at = reinterpret_cast<uintptr_t>(address);
  while (std::getline(smaps, line)) {
    unsigned long long begin = 0, end = 0;
    char dash = 0;
    std::istringstream fields(line);
    if (line.find(':') > line.find(' ') &&
        (fields >> std::hex >> begin >> dash >> end) && dash == '-') {
      inside = begin <= at && at < end;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0)
      return line;
  }
  return "";
}

TEST(Memory, LargeBlocksAskForHugePages) {
  int64_t huge = gaccrt_huge_page_bytes();
  ASSERT_EQ(huge, int64_t(2) << 20);
  // Below one huge page, and no block: nothing to ask.
  std::vector<char> small(4096);
  EXPECT_EQ(gaccrt_prefer_huge_pages(small.data(), 4096), 0);
  EXPECT_EQ(gaccrt_prefer_huge_pages(nullptr, 4 * huge), 0);
  // A block of the compiled code's allocator of 4 huge pages: where the
  // kernel took the advice, its mapping carries the flag ("hg").
  void *block = _mlir_memref_to_llvm_aligned_alloc(64, 4 * huge);
  std::memset(block, 1, 4 * huge);
  if (gaccrt_prefer_huge_pages(block, 4 * huge)) {
    EXPECT_NE(vmFlagsAt(static_cast<char *>(block) + 2 * huge).find(" hg"),
              std::string::npos);
  }
  _mlir_memref_to_llvm_free(block);
}

TEST(MemoryDeathTest, ForeignPointerIsReported) {
  EXPECT_DEATH(
      {
        std::vector<char> notOurs(64, 0);
        _mlir_memref_to_llvm_free(notOurs.data() + 32);
      },
      "gaccrt: error: _mlir_memref_to_llvm_free: the pointer was not "
      "allocated");
}

TEST(MemoryDeathTest, BadAlignmentIsReported) {
  EXPECT_DEATH(_mlir_memref_to_llvm_aligned_alloc(24, 8),
               "alignment 24 is not a power of two");
}

} // namespace

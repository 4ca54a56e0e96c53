//===- Memory.cpp - Accounted heap allocations of compiled code -----------===//
//
// The three allocation functions that MLIR's memref-to-llvm lowering calls
// with `use-generic-functions`, so that every heap buffer of the compiled
// step is counted: each block is preceded by a hidden header with its size
// (and the start of the underlying malloc block), so the free knows how many
// bytes to subtract. Current and peak counts are of requested bytes.
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"

#include "Internal.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

using namespace gaccrt;

namespace {

/// Sits immediately before every block handed out; 32 bytes, so blocks stay
/// 16-byte aligned.
struct alignas(16) BlockHeader {
  uint64_t magic;
  uint64_t size;
  void *raw;
  uint64_t unused;
};
static_assert(sizeof(BlockHeader) == 32, "header size changes alignment");

/// Marks a live block, so that freeing a foreign pointer is reported rather
/// than corrupting the heap (best effort: a freed block's header is gone).
constexpr uint64_t kLiveMagic = 0x6761636372746d6dULL; // "gaccrtmm"

std::mutex counterMutex;
int64_t currentBytes = 0;
int64_t peakBytes = 0;

void account(int64_t delta) {
  std::lock_guard<std::mutex> lock(counterMutex);
  currentBytes += delta;
  peakBytes = std::max(peakBytes, currentBytes);
}

void *allocate(size_t alignment, size_t size) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fatal("_mlir_memref_to_llvm_aligned_alloc: alignment " +
          std::to_string(alignment) + " is not a power of two");
  alignment = std::max(alignment, alignof(BlockHeader));
  // The header needs sizeof(BlockHeader) bytes before the block, and aligning
  // the block wastes less than `alignment` bytes after those.
  size_t overhead = sizeof(BlockHeader) + alignment;
  if (size > SIZE_MAX - overhead)
    fatal("out of memory: cannot allocate " + std::to_string(size) + " bytes");
  void *raw = std::malloc(size + overhead);
  if (!raw)
    fatal("out of memory: cannot allocate " + std::to_string(size) +
          " bytes (" + std::to_string(gaccrt_current_bytes()) +
          " bytes allocated by compiled code)");
  uintptr_t first = reinterpret_cast<uintptr_t>(raw) + sizeof(BlockHeader);
  uintptr_t aligned = (first + alignment - 1) & ~uintptr_t(alignment - 1);
  auto *header = reinterpret_cast<BlockHeader *>(aligned) - 1;
  header->magic = kLiveMagic;
  header->size = size;
  header->raw = raw;
  header->unused = 0;
  account(static_cast<int64_t>(size));
  gaccrt_prefer_huge_pages(reinterpret_cast<void *>(aligned),
                           static_cast<int64_t>(size));
  return reinterpret_cast<void *>(aligned);
}

/// GACCRT_HUGE_PAGES: "0" turns gaccrt_prefer_huge_pages off.
bool hugePagesWanted() {
  static const bool wanted = [] {
    const char *value = std::getenv("GACCRT_HUGE_PAGES");
    return !value || std::string(value) != "0";
  }();
  return wanted;
}

} // namespace

void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocate(alignof(BlockHeader), size);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  return allocate(alignment, size);
}

void _mlir_memref_to_llvm_free(void *ptr) {
  if (!ptr)
    return;
  auto *header = static_cast<BlockHeader *>(ptr) - 1;
  if (header->magic != kLiveMagic)
    fatal("_mlir_memref_to_llvm_free: the pointer was not allocated by "
          "_mlir_memref_to_llvm_alloc (or was freed twice)");
  header->magic = 0;
  account(-static_cast<int64_t>(header->size));
  std::free(header->raw);
}

void gaccrt_account_arena(int64_t delta) { account(delta); }

int64_t gaccrt_huge_page_bytes(void) { return int64_t(2) << 20; }

int32_t gaccrt_prefer_huge_pages(void *data, int64_t bytes) {
#ifdef __linux__
  if (!data || bytes < gaccrt_huge_page_bytes() || !hugePagesWanted())
    return 0;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin =
      (reinterpret_cast<uintptr_t>(data) + page - 1) & ~(page - 1);
  uintptr_t end =
      (reinterpret_cast<uintptr_t>(data) + uintptr_t(bytes)) & ~(page - 1);
  if (end <= begin)
    return 0;
  return madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE) ==
                 0
             ? 1
             : 0;
#else
  (void)data;
  (void)bytes;
  return 0;
#endif
}

int64_t gaccrt_current_bytes(void) {
  std::lock_guard<std::mutex> lock(counterMutex);
  return currentBytes;
}

int64_t gaccrt_peak_bytes(void) {
  std::lock_guard<std::mutex> lock(counterMutex);
  return peakBytes;
}

void gaccrt_reset_peak(void) {
  std::lock_guard<std::mutex> lock(counterMutex);
  peakBytes = currentBytes;
}

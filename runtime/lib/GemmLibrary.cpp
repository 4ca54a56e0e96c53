//===- GemmLibrary.cpp - the library setting of gaccrt_sgemm --------------===//
//
// Which library gaccrt_sgemm uses (Library): "auto", "onednn",
// "onednn-sgemm", "avx512" or "openblas", set by gaccrt_set_gemm_library or
// GACCRT_GEMM (checked by gaccrt_init through checkGemmLibraryEnv) and reported
// by gaccrt_gemm_library; the GEMM thread count (OpenBLAS's, which gaccrt's
// kernels follow); and the library of the calling thread's last GEMM, for its
// trace event and the unit tests. The lowest layer of gaccrt_sgemm
// (BlasInternal.h).
//
//===----------------------------------------------------------------------===//

#include "gaccrt/gaccrt.h"

#include "BlasInternal.h"
#include "Gemm.h"
#include "Internal.h"

#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

using namespace gaccrt;

namespace {

std::atomic<Library> chosenLibrary{Library::Unset};

/// gaccrt_set_copies: 0 unset (GACCRT_COPIES decides), 1 concurrent, 2
/// lockstep.
std::atomic<int> copiesMode{0};

/// 1 for "concurrent", 2 for "lockstep", 0 for anything else.
int parseCopies(const char *name) {
  if (std::strcmp(name, "concurrent") == 0)
    return 1;
  if (std::strcmp(name, "lockstep") == 0)
    return 2;
  return 0;
}

/// Parses a library name; Unset for an unknown one, for oneDNN when it is
/// not available (no header at build time or no libdnnl.so.2) and for the
/// AVX-512 kernels on a CPU without AVX-512F. "auto" is OpenBLAS when it is
/// the only library.
Library parseLibrary(const char *name) {
  if (std::strcmp(name, "openblas") == 0)
    return Library::Openblas;
  if (std::strcmp(name, "onednn") == 0 && onednnAvailable())
    return Library::Onednn;
  if (std::strcmp(name, "onednn-sgemm") == 0 && onednnBlasAvailable())
    return Library::OnednnSgemm;
  if (std::strcmp(name, "avx512") == 0 && avx512Available())
    return Library::Avx512;
  if (std::strcmp(name, "auto") == 0)
    return onednnAvailable() || avx512Available() ? Library::Auto
                                                  : Library::Openblas;
  return Library::Unset;
}

} // namespace

std::string gaccrt::checkGemmLibraryEnv() {
  const char *env = std::getenv("GACCRT_GEMM");
  if (!env || !*env || parseLibrary(env) != Library::Unset)
    return "";
  std::string names = "'auto', ";
  if (onednnAvailable())
    names += "'onednn', ";
  if (onednnBlasAvailable())
    names += "'onednn-sgemm', ";
  if (avx512Available())
    names += "'avx512', ";
  names.resize(names.size() - 2);
  names += " or 'openblas'";
  if (!onednnAvailable())
    names += " (oneDNN's libdnnl.so.2 is not available)";
  return "GACCRT_GEMM must be " + names + ", got '" + env + "'";
}

std::string gaccrt::checkCopiesEnv() {
  const char *env = std::getenv("GACCRT_COPIES");
  if (!env || !*env || parseCopies(env) != 0)
    return "";
  return std::string("GACCRT_COPIES must be 'concurrent' or 'lockstep', "
                     "got '") +
         env + "'";
}

bool gaccrt::copiesInLockstep() {
  int mode = copiesMode.load(std::memory_order_relaxed);
  if (mode == 0) {
    const char *env = std::getenv("GACCRT_COPIES");
    int initial = env && *env ? parseCopies(env) : 1;
    if (initial == 0)
      fatal(checkCopiesEnv());
    copiesMode.compare_exchange_strong(mode, initial);
    mode = copiesMode.load(std::memory_order_relaxed);
  }
  return mode == 2;
}

int32_t gaccrt_set_copies(const char *mode) {
  int parsed = mode ? parseCopies(mode) : 0;
  if (parsed == 0)
    return -1;
  copiesMode.store(parsed, std::memory_order_relaxed);
  return 0;
}

const char *gaccrt_copies(void) {
  return copiesInLockstep() ? "lockstep" : "concurrent";
}

Library gaccrt::library() {
  Library current = chosenLibrary.load(std::memory_order_relaxed);
  if (current != Library::Unset)
    return current;
  Library initial = parseLibrary("auto");
  if (const char *env = std::getenv("GACCRT_GEMM"); env && *env) {
    initial = parseLibrary(env);
    if (initial == Library::Unset)
      fatal(checkGemmLibraryEnv());
  }
  chosenLibrary.compare_exchange_strong(current, initial);
  return chosenLibrary.load(std::memory_order_relaxed);
}

thread_local const char *gaccrt::lastLibrary = "none";

int gaccrt::gemmThreads() { return std::max(1, openblas_get_num_threads()); }

bool gaccrt::kernelsTakeEveryGemm() {
  Library chosen = library();
  return avx512Available() && (chosen == Library::Avx512 ||
                               (chosen == Library::Auto && gemmThreads() != 1));
}

int32_t gaccrt_set_gemm_library(const char *name) {
  Library parsed = name ? parseLibrary(name) : Library::Unset;
  if (parsed == Library::Unset)
    return -1;
  chosenLibrary.store(parsed, std::memory_order_relaxed);
  return 0;
}

const char *gaccrt_internal_last_gemm_library(void) { return lastLibrary; }

void gaccrt_internal_set_gemm_threads(int32_t threads) {
  openblas_set_num_threads(threads);
}

int32_t gaccrt_internal_gemm_threads(void) { return gemmThreads(); }

int32_t gaccrt_gemm_threads(void) { return gemmThreads(); }

int32_t gaccrt_internal_last_gemm_threads(void) {
  return std::strcmp(lastLibrary, "avx512") == 0 ? avx512LastThreads() : 0;
}

const char *gaccrt_gemm_library(void) {
  switch (library()) {
  case Library::Auto:
    return "auto";
  case Library::Onednn:
    return "onednn";
  case Library::OnednnSgemm:
    return "onednn-sgemm";
  case Library::Avx512:
    return "avx512";
  default:
    return "openblas";
  }
}

//===- StepCache.h - compiled steps kept on disk between runs ---*- C++ -*-===//
//
// The step cache of CompiledStep::compile (StepOptions::stepCacheDir): the
// machine code of a compiled CPU step (its object files, before linking)
// and its signature, in one file per step under a key made of everything the
// code depends on: the step's file (its path and bytes), every pipeline and
// lowering option, the host CPU (LLVM's name and features) and the build of the
// compiler (every loaded program and library, by path, size and
// modification time). A later run of the same step with the same options on
// the same machine and build links the cached objects instead of running
// the pipeline and LLVM. Private to the runner library; docs/Tools.md
// describes the cache for users.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LIB_RUNNER_STEPCACHE_H
#define GACC_LIB_RUNNER_STEPCACHE_H

#include "StepJit.h"

#include "gacc/Runner/StepRunner.h"

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>

namespace mlir::gacc {

/// A step as the cache keeps it.
struct CachedStep {
  /// serializeSignature's text.
  std::string signature;
  StepObjects objects;
};

/// The text that identifies a compile of the step file `path` whose bytes
/// are `input` with `options` on this machine and build (StepCache.h's
/// list; the path too, which locations in messages name).
std::string getStepCacheKey(llvm::StringRef path, llvm::StringRef input,
                            const StepOptions &options);

/// The file of `key`'s entry in `dir`: a hash of the key.
std::string getStepCacheEntryPath(const std::string &dir,
                                  const std::string &key);

/// Reads the entry of `key` from `dir` into `step`. False when there is none,
/// or when it is not an intact entry for exactly this key (a truncated or
/// foreign file is a miss, never an error). A hit marks the entry as used
/// now (its modification time), for the eviction of storeCachedStep.
bool loadCachedStep(const std::string &dir, const std::string &key,
                    CachedStep &step);

/// Writes the entry of `key` to `dir` (created if missing), atomically, then
/// removes the least recently used entries while the directory's entries
/// take more than `maxBytes` (the new one stays). False with `error` set
/// when the entry cannot be written (the compiled step is good anyway).
bool storeCachedStep(const std::string &dir, const std::string &key,
                     const CachedStep &step, uint64_t maxBytes,
                     std::string &error);

} // namespace mlir::gacc

#endif // GACC_LIB_RUNNER_STEPCACHE_H

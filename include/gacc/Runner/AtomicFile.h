//===- AtomicFile.h - all-or-nothing files and result sets ------*- C++ -*-===//
//
// Every file gacc writes (results, saved inputs, traces, compiled steps) goes
// through writeFileAtomically: a temporary file in the same directory,
// flushed with fsync, renamed over the target; a failure leaves the previous
// file untouched and no temporary behind. A set of files that belongs
// together (the results of a step, its inputs) is written by a
// ResultSetWriter, which commits the set with a MANIFEST (names, sizes and
// CRC-32s) written last, and checked by checkResultSet before a directory is
// read. Standard C++ and POSIX only: gacc-run-aot and the runtime (its trace
// writer compiles this file too) link no LLVM. docs/Robustness.md describes
// the protocol and the rule readers follow.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_RUNNER_ATOMICFILE_H
#define GACC_RUNNER_ATOMICFILE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace mlir::gacc {

/// The name of the file that commits a result set.
extern const char kManifestName[];
/// The name under which a ResultSetWriter writes the new manifest before it
/// replaces the previous set's files; present without kManifestName, it
/// marks a set whose commit was interrupted.
extern const char kPendingManifestName[];

/// The CRC-32 (zlib's polynomial, as Python's zlib.crc32) of `size` bytes,
/// continuing from `crc`.
uint32_t crc32(const void *data, size_t size, uint32_t crc = 0);

/// Writes `size` bytes to `path`, all or nothing: into a temporary file
/// `.<name>.gacc-tmp-<pid>-<n>` next to it, flushed (fsync), renamed over
/// `path`, then the directory flushed. On failure removes the temporary,
/// leaves a previous `path` untouched and returns false with `error` set to
/// "<path>: <what failed>: <strerror>" (e.g. "No space left on device").
/// The file is created with `mode` less the umask (0777 for a library).
///
/// Test only: GACC_TEST_FAIL_WRITE_AFTER=N in the environment makes the
/// writes of the process fail with ENOSPC once N bytes in all were written
/// (a full disk where no small file system can be mounted).
bool writeFileAtomically(const std::string &path, const void *data, size_t size,
                         std::string &error, unsigned mode = 0666);
inline bool writeFileAtomically(const std::string &path,
                                const std::string &bytes, std::string &error,
                                unsigned mode = 0666) {
  return writeFileAtomically(path, bytes.data(), bytes.size(), error, mode);
}

/// Removes the temporaries (`.<name>.gacc-tmp-<pid>-<n>`, regular files)
/// in `dir` whose writer is no longer running on this machine: what a
/// process killed while it wrote (SIGKILL, a power loss) left behind.
/// writeFileAtomically and a ResultSetWriter call it for the directory they
/// write to, so a stray temporary lives until the next write there. Returns
/// how many it removed; an unreadable `dir` is no error (0).
int removeStaleTemporaries(const std::string &dir);

/// Writes a set of files into a directory so that a reader sees the whole
/// set or the previous one, never a mixture. add() writes each file to a
/// temporary name; commit() writes the new manifest as kPendingManifestName,
/// removes the previous kManifestName, renames the files into place, removes
/// the previous set's files that the new one lacks and renames the pending
/// manifest to kManifestName. A failure before commit() renames anything,
/// or a writer destroyed without commit(), removes the temporaries and
/// leaves the previous set as it was.
class ResultSetWriter {
public:
  /// Writes into `dir` (created with its parents if missing).
  explicit ResultSetWriter(std::string dir);
  ~ResultSetWriter();
  ResultSetWriter(const ResultSetWriter &) = delete;
  ResultSetWriter &operator=(const ResultSetWriter &) = delete;

  /// Writes `bytes` as the set's file `name` (no slash) under a temporary
  /// name. Returns false with `error` naming the file and the cause.
  bool add(const std::string &name, const std::string &bytes,
           std::string &error);

  /// Puts the set in place. Returns false with `error` naming the file and
  /// the cause.
  bool commit(std::string &error);

private:
  struct Entry {
    std::string name, temporary;
    uint64_t size;
    uint32_t crc;
  };
  void removeTemporaries();

  std::string dir;
  std::vector<Entry> entries;
  bool created = false;
};

/// Checks the set in `dir` before it is read. A directory with a
/// kManifestName must hold every file it lists with its size and CRC-32; one
/// with only a kPendingManifestName holds an interrupted write and is
/// refused; one with neither was written by hand and is accepted. Returns
/// false with `error` naming the directory or file and what is wrong.
bool checkResultSet(const std::string &dir, std::string &error);

} // namespace mlir::gacc

#endif // GACC_RUNNER_ATOMICFILE_H

//===- AtomicFile.cpp - all-or-nothing files and result sets --------------===//
//
// The temporary-write-fsync-rename helper and the manifest of a result set.
// The manifest is text: a first line "gacc-result-set 1", then one line per
// file, "<size> <crc32 as 8 hex digits> <name>". Compiled into GaccNpy and,
// with hidden visibility, into libgaccrt for its trace writer.
//
//===----------------------------------------------------------------------===//

#include "gacc/Runner/AtomicFile.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <signal.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::gacc;

const char mlir::gacc::kManifestName[] = "MANIFEST";
const char mlir::gacc::kPendingManifestName[] = "MANIFEST.pending";

namespace {

constexpr char kManifestMagic[] = "gacc-result-set 1";

std::string describeErrno(int code) { return std::strerror(code); }

/// The directory part of `path` ("." when it has none).
std::string parentOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

std::string joinPath(const std::string &dir, const std::string &name) {
  if (dir.empty() || dir == ".")
    return name;
  return dir.back() == '/' ? dir + name : dir + "/" + name;
}

/// A name next to `path` that no other writer uses.
std::string temporaryNameFor(const std::string &path) {
  static std::atomic<unsigned> counter{0};
  size_t slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + ".gacc-tmp-" + std::to_string(::getpid()) + "-" +
         std::to_string(counter++);
}

/// The writer's process id if `name` is a temporary name of
/// temporaryNameFor (".<name>.gacc-tmp-<pid>-<n>"), else -1.
long temporaryOwner(const char *name) {
  static const char kMarker[] = ".gacc-tmp-";
  if (name[0] != '.')
    return -1;
  const char *marker = std::strstr(name + 1, kMarker);
  if (!marker || marker == name + 1)
    return -1;
  // The last marker: a target's own name may contain the text.
  for (const char *next; (next = std::strstr(marker + 1, kMarker));)
    marker = next;
  const char *digits = marker + sizeof(kMarker) - 1;
  char *end = nullptr;
  long pid = std::strtol(digits, &end, 10);
  if (end == digits || *end != '-' || pid <= 0)
    return -1;
  const char *counter = end + 1;
  if (!*counter)
    return -1;
  for (const char *c = counter; *c; ++c)
    if (*c < '0' || *c > '9')
      return -1;
  return pid;
}

/// Whether process `pid` is running on this machine.
bool processExists(long pid) {
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;
}

} // namespace

int mlir::gacc::removeStaleTemporaries(const std::string &dir) {
  DIR *stream = ::opendir(dir.empty() ? "." : dir.c_str());
  if (!stream)
    return 0;
  int removed = 0;
  while (struct dirent *entry = ::readdir(stream)) {
    long owner = temporaryOwner(entry->d_name);
    if (owner < 0 || owner == ::getpid() || processExists(owner))
      continue;
    std::string path = joinPath(dir, entry->d_name);
    struct stat info;
    if (::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::unlink(path.c_str()) == 0)
      ++removed;
  }
  ::closedir(stream);
  return removed;
}

namespace {

/// GACC_TEST_FAIL_WRITE_AFTER: the bytes the process may still write, or -1.
long long &remainingTestBytes() {
  static long long remaining = [] {
    const char *text = std::getenv("GACC_TEST_FAIL_WRITE_AFTER");
    if (!text || !*text)
      return -1LL;
    char *end = nullptr;
    long long value = std::strtoll(text, &end, 10);
    return *end || value < 0 ? -1LL : value;
  }();
  return remaining;
}

/// write(2) until done; false with errno set on failure.
bool writeAll(int fd, const char *data, size_t size) {
  long long &remaining = remainingTestBytes();
  while (size > 0) {
    size_t chunk = size;
    if (remaining >= 0) {
      if (remaining == 0) {
        errno = ENOSPC;
        return false;
      }
      chunk = std::min<size_t>(chunk, static_cast<size_t>(remaining));
    }
    ssize_t written = ::write(fd, data, chunk);
    if (written < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    if (remaining >= 0)
      remaining -= written;
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

/// Flushes the directory entry of a rename or removal in `dir`.
bool syncDirectory(const std::string &dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return false;
  int rc = ::fsync(fd);
  // Some file systems cannot sync a directory; the rename stands.
  bool ok = rc == 0 || errno == EINVAL || errno == EROFS;
  ::close(fd);
  return ok;
}

/// Writes and flushes `temporary`; removes it on failure. Returns false with
/// `error` set to "<what failed>: <strerror>".
bool writeTemporary(const std::string &temporary, const void *data, size_t size,
                    std::string &error, unsigned mode = 0666) {
  int fd = ::open(temporary.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) {
    error = "cannot create the file: " + describeErrno(errno);
    return false;
  }
  bool ok = writeAll(fd, static_cast<const char *>(data), size);
  if (!ok)
    error = "cannot write the file: " + describeErrno(errno);
  if (ok && ::fsync(fd) != 0) {
    error = "cannot flush the file: " + describeErrno(errno);
    ok = false;
  }
  if (::close(fd) != 0 && ok) {
    error = "cannot write the file: " + describeErrno(errno);
    ok = false;
  }
  if (!ok)
    ::unlink(temporary.c_str());
  return ok;
}

bool readWholeFile(const std::string &path, std::string &bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return false;
  std::ostringstream buffer;
  buffer << file.rdbuf();
  bytes = buffer.str();
  return !file.bad();
}

bool isRegularFile(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

bool makeDirectories(const std::string &dir, std::string &error) {
  struct stat info;
  if (::stat(dir.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode))
      return true;
    error = "cannot create '" + dir + "': not a directory";
    return false;
  }
  std::string parent = parentOf(dir);
  if (parent != dir && !makeDirectories(parent, error))
    return false;
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST) {
    error = "cannot create '" + dir + "': " + describeErrno(errno);
    return false;
  }
  return true;
}

struct ManifestLine {
  uint64_t size;
  uint32_t crc;
  std::string name;
};

/// Parses a manifest's text. False with `error` describing the bad line.
bool parseManifest(const std::string &text, std::vector<ManifestLine> &lines,
                   std::string &error) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line != kManifestMagic) {
    error = "not a gacc result-set manifest (expected the first line '" +
            std::string(kManifestMagic) + "')";
    return false;
  }
  for (int number = 2; std::getline(in, line); ++number) {
    ManifestLine entry;
    char crcText[9] = {};
    int consumed = 0;
    unsigned long long size = 0;
    if (std::sscanf(line.c_str(), "%llu %8[0-9a-f] %n", &size, crcText,
                    &consumed) != 2 ||
        consumed <= 0 || static_cast<size_t>(consumed) >= line.size() ||
        std::strlen(crcText) != 8) {
      error = "malformed line " + std::to_string(number) + ": '" + line + "'";
      return false;
    }
    entry.size = size;
    entry.crc = static_cast<uint32_t>(std::strtoul(crcText, nullptr, 16));
    entry.name = line.substr(static_cast<size_t>(consumed));
    if (entry.name.find('/') != std::string::npos) {
      error = "malformed line " + std::to_string(number) + ": '" + line + "'";
      return false;
    }
    lines.push_back(std::move(entry));
  }
  return true;
}

} // namespace

uint32_t mlir::gacc::crc32(const void *data, size_t size, uint32_t crc) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto *bytes = static_cast<const unsigned char *>(data);
  crc = ~crc;
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ bytes[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

bool mlir::gacc::writeFileAtomically(const std::string &path, const void *data,
                                     size_t size, std::string &error,
                                     unsigned mode) {
  removeStaleTemporaries(parentOf(path));
  std::string temporary = temporaryNameFor(path);
  std::string why;
  if (!writeTemporary(temporary, data, size, why, mode)) {
    error = path + ": " + why;
    return false;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    error = path + ": cannot rename the written file into place: " +
            describeErrno(errno);
    ::unlink(temporary.c_str());
    return false;
  }
  if (!syncDirectory(parentOf(path))) {
    error = path + ": cannot flush its directory: " + describeErrno(errno);
    return false;
  }
  return true;
}

ResultSetWriter::ResultSetWriter(std::string dir) : dir(std::move(dir)) {}

ResultSetWriter::~ResultSetWriter() { removeTemporaries(); }

void ResultSetWriter::removeTemporaries() {
  for (const Entry &entry : entries)
    if (!entry.temporary.empty())
      ::unlink(entry.temporary.c_str());
  entries.clear();
}

bool ResultSetWriter::add(const std::string &name, const std::string &bytes,
                          std::string &error) {
  if (!created) {
    if (!makeDirectories(dir, error)) {
      removeTemporaries();
      return false;
    }
    removeStaleTemporaries(dir);
    created = true;
  }
  std::string path = joinPath(dir, name);
  Entry entry{name, temporaryNameFor(path), bytes.size(),
              crc32(bytes.data(), bytes.size())};
  std::string why;
  if (!writeTemporary(entry.temporary, bytes.data(), bytes.size(), why)) {
    error = path + ": " + why;
    removeTemporaries();
    return false;
  }
  entries.push_back(std::move(entry));
  return true;
}

bool ResultSetWriter::commit(std::string &error) {
  if (!created && !makeDirectories(dir, error))
    return false;
  std::string manifest = std::string(kManifestMagic) + "\n";
  for (const Entry &entry : entries) {
    char crcText[9];
    std::snprintf(crcText, sizeof(crcText), "%08x", entry.crc);
    manifest +=
        std::to_string(entry.size) + " " + crcText + " " + entry.name + "\n";
  }
  std::string manifestPath = joinPath(dir, kManifestName);
  std::string pendingPath = joinPath(dir, kPendingManifestName);
  // The last point where a failure leaves the previous set whole.
  if (!writeFileAtomically(pendingPath, manifest, error)) {
    removeTemporaries();
    return false;
  }
  // The previous set's files, to remove those the new set lacks.
  std::vector<ManifestLine> previous;
  std::string previousText, ignored;
  if (readWholeFile(manifestPath, previousText))
    (void)parseManifest(previousText, previous, ignored);
  if (::unlink(manifestPath.c_str()) != 0 && errno != ENOENT) {
    error = manifestPath +
            ": cannot remove the previous manifest: " + describeErrno(errno);
    ::unlink(pendingPath.c_str());
    removeTemporaries();
    return false;
  }
  // From here a failure leaves MANIFEST.pending without MANIFEST, which
  // readers refuse.
  for (Entry &entry : entries) {
    std::string path = joinPath(dir, entry.name);
    if (::rename(entry.temporary.c_str(), path.c_str()) != 0) {
      error = path + ": cannot rename the written file into place: " +
              describeErrno(errno);
      removeTemporaries();
      return false;
    }
    entry.temporary.clear();
  }
  for (const ManifestLine &old : previous)
    if (std::none_of(entries.begin(), entries.end(),
                     [&](const Entry &e) { return e.name == old.name; }))
      ::unlink(joinPath(dir, old.name).c_str());
  if (!syncDirectory(dir.empty() ? "." : dir) ||
      ::rename(pendingPath.c_str(), manifestPath.c_str()) != 0 ||
      !syncDirectory(dir.empty() ? "." : dir)) {
    error = manifestPath +
            ": cannot put the manifest in place: " + describeErrno(errno);
    return false;
  }
  entries.clear();
  return true;
}

bool mlir::gacc::checkResultSet(const std::string &dir, std::string &error) {
  std::string manifestPath = joinPath(dir, kManifestName);
  std::string pendingPath = joinPath(dir, kPendingManifestName);
  if (!isRegularFile(manifestPath)) {
    if (isRegularFile(pendingPath)) {
      error = "'" + dir +
              "' holds an incomplete result set: " + kPendingManifestName +
              " without " + kManifestName +
              " (a write was interrupted; its files may mix two steps)";
      return false;
    }
    return true; // written by hand
  }
  std::string text;
  if (!readWholeFile(manifestPath, text)) {
    error =
        manifestPath + ": cannot read the manifest: " + describeErrno(errno);
    return false;
  }
  std::vector<ManifestLine> lines;
  std::string why;
  if (!parseManifest(text, lines, why)) {
    error = manifestPath + ": " + why;
    return false;
  }
  for (const ManifestLine &line : lines) {
    std::string path = joinPath(dir, line.name);
    std::string bytes;
    if (!isRegularFile(path) || !readWholeFile(path, bytes)) {
      error = path + ": listed in " + manifestPath +
              " but missing or unreadable (the result set is incomplete)";
      return false;
    }
    if (bytes.size() != line.size) {
      error = path + ": " + std::to_string(bytes.size()) + " bytes, " +
              manifestPath + " lists " + std::to_string(line.size) +
              " (the file does not belong to the result set)";
      return false;
    }
    uint32_t crc = crc32(bytes.data(), bytes.size());
    if (crc != line.crc) {
      char got[9], want[9];
      std::snprintf(got, sizeof(got), "%08x", crc);
      std::snprintf(want, sizeof(want), "%08x", line.crc);
      error = path + ": CRC-32 " + got + ", " + manifestPath + " lists " +
              want + " (the file does not belong to the result set)";
      return false;
    }
  }
  return true;
}

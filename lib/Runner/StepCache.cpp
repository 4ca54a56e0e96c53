//===- StepCache.cpp - compiled steps kept on disk between runs -----------===//
//
// Implements StepCache.h. An entry is one file, `<sha256 of the key>.gstep`:
//
//   gacc-step-cache 1
//   key <bytes>          then the key's text and a newline
//   signature <bytes>    serializeSignature's text
//   constructor <bytes>  one per global constructor, in order (its name)
//   destructor <bytes>   likewise
//   object <bytes>       one per object file
//   crc <8 hex digits>   CRC-32 of everything before this line
//
// Each section's header line is followed by exactly that many bytes and a
// newline. The whole key is stored and compared, so that only an entry made
// by the same compile is ever used.
//
//===----------------------------------------------------------------------===//

#include "StepCache.h"

#include "gacc/Runner/AtomicFile.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <fcntl.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::gacc;

namespace {

constexpr char kEntryMagic[] = "gacc-step-cache 1\n";
constexpr char kEntrySuffix[] = ".gstep";

void printOption(llvm::raw_ostream &os, const char *flag, bool value) {
  os << flag << '=' << (value ? "true" : "false") << '\n';
}
void printOption(llvm::raw_ostream &os, const char *flag, int64_t value) {
  os << flag << '=' << value << '\n';
}
void printOption(llvm::raw_ostream &os, const char *flag, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", value);
  os << flag << '=' << text << '\n';
}
void printOption(llvm::raw_ostream &os, const char *flag,
                 const std::string &value) {
  // Sized, so that no value can read as another option.
  os << flag << '[' << value.size() << "]=" << value << '\n';
}
void printOption(llvm::raw_ostream &os, const char *flag,
                 const std::vector<int64_t> &values) {
  os << flag << "=[";
  llvm::interleaveComma(values, os);
  os << "]\n";
}

/// Appends, for the program and every shared library loaded in this process
/// (the compiler's passes, MLIR, LLVM, the C++ runtime), its path, size,
/// modification time and inode: a rebuild or an upgrade of any of them
/// changes the key.
void printBuild(llvm::raw_ostream &os) {
  std::vector<std::string> paths;
  char exe[4096];
  ssize_t length = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length > 0)
    paths.emplace_back(exe, length);
  dl_iterate_phdr(
      [](struct dl_phdr_info *info, size_t, void *data) {
        if (info->dlpi_name && *info->dlpi_name)
          static_cast<std::vector<std::string> *>(data)->push_back(
              info->dlpi_name);
        return 0;
      },
      &paths);
  for (const std::string &path : paths) {
    struct stat status;
    if (::stat(path.c_str(), &status) != 0) {
      os << "object " << path << " missing\n";
      continue;
    }
    os << "object " << path << ' ' << status.st_size << ' '
       << status.st_mtim.tv_sec << '.' << status.st_mtim.tv_nsec << ' '
       << status.st_ino << '\n';
  }
}

/// Reads one section `<tag> <size>\n<bytes>\n` at `pos` of `text`.
bool readSection(llvm::StringRef text, size_t &pos, llvm::StringRef &tag,
                 llvm::StringRef &bytes) {
  size_t newline = text.find('\n', pos);
  if (newline == llvm::StringRef::npos)
    return false;
  llvm::StringRef header = text.slice(pos, newline);
  auto [name, sizeText] = header.split(' ');
  // The bytes and their newline must fit in what follows the header (a
  // size near 2^64 must not wrap around).
  uint64_t size;
  if (sizeText.getAsInteger(10, size) || size >= text.size() - newline - 1 ||
      text[newline + 1 + size] != '\n')
    return false;
  tag = name;
  bytes = text.substr(newline + 1, size);
  pos = newline + 1 + size + 1;
  return true;
}

void writeSection(std::string &out, llvm::StringRef tag,
                  llvm::StringRef bytes) {
  out += tag;
  out += ' ';
  out += std::to_string(bytes.size());
  out += '\n';
  out += bytes;
  out += '\n';
}

/// Removes the oldest entries of `dir` (by modification time, which a hit
/// renews) other than `keep` while they take more than `maxBytes`.
void evictStepCacheEntries(const std::string &dir, const std::string &keep,
                           uint64_t maxBytes) {
  struct Entry {
    std::string path;
    uint64_t size;
    llvm::sys::TimePoint<> used;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    if (!llvm::StringRef(it->path()).ends_with(kEntrySuffix))
      continue;
    llvm::sys::fs::file_status status;
    if (llvm::sys::fs::status(it->path(), status) ||
        status.type() != llvm::sys::fs::file_type::regular_file)
      continue;
    total += status.getSize();
    if (it->path() != keep)
      entries.push_back(
          {it->path(), status.getSize(), status.getLastModificationTime()});
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.used < b.used; });
  for (const Entry &entry : entries) {
    if (total <= maxBytes)
      break;
    if (!llvm::sys::fs::remove(entry.path))
      total -= entry.size;
  }
}

} // namespace

std::string mlir::gacc::getStepCacheKey(llvm::StringRef path,
                                        llvm::StringRef input,
                                        const StepOptions &options) {
  std::string key;
  llvm::raw_string_ostream os(key);
  os << "gacc-step-cache-key 1\n";
  // The path too: locations in messages (gather sites) name the file.
  llvm::SmallString<256> absolute(path);
  (void)llvm::sys::fs::make_absolute(absolute);
  os << "path " << absolute.size() << ' ' << absolute << '\n';
  os << "input " << input.size() << ' '
     << llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(input)),
                    /*LowerCase=*/true)
     << '\n';
  os << "device " << getDeviceName(options.device) << '\n';
#define GACC_PIPELINE_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION,           \
                             TOOL_HIDDEN)                                      \
  printOption(os, FLAG, options.NAME);
#define GACC_PIPELINE_LIST_OPTION(NAME, TYPE, FLAG, DESCRIPTION)               \
  printOption(os, FLAG, options.NAME);
#include "gacc/Pipelines/PipelineOptions.def"
#define GACC_LOWER_TO_CPU_OPTION(NAME, TYPE, FLAG, DEFAULT, DESCRIPTION)       \
  printOption(os, FLAG, options.NAME);
#include "gacc/Pipelines/LoweringOptions.def"
  os << "cpu " << llvm::sys::getHostCPUName();
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::vector<std::string> names;
  for (const auto &feature : features)
    names.push_back((feature.getValue() ? "+" : "-") + feature.getKey().str());
  std::sort(names.begin(), names.end());
  for (const std::string &name : names)
    os << ' ' << name;
  os << '\n';
  printBuild(os);
  return key;
}

std::string mlir::gacc::getStepCacheEntryPath(const std::string &dir,
                                              const std::string &key) {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(
      path, llvm::toHex(llvm::SHA256::hash(llvm::arrayRefFromStringRef(key)),
                        /*LowerCase=*/true) +
                kEntrySuffix);
  return path.str().str();
}

bool mlir::gacc::loadCachedStep(const std::string &dir, const std::string &key,
                                CachedStep &step) {
  std::string path = getStepCacheEntryPath(dir, key);
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return false;
  llvm::StringRef text = (*buffer)->getBuffer();
  if (!text.starts_with(kEntryMagic))
    return false;
  // The CRC line: "crc XXXXXXXX\n", last.
  constexpr size_t kCrcLine = 13;
  if (text.size() < sizeof(kEntryMagic) - 1 + kCrcLine ||
      !text.substr(text.size() - kCrcLine).starts_with("crc "))
    return false;
  llvm::StringRef body = text.drop_back(kCrcLine);
  uint32_t crc;
  if (text.substr(text.size() - kCrcLine + 4, 8).getAsInteger(16, crc) ||
      crc != crc32(body.data(), body.size()))
    return false;
  CachedStep result;
  bool sameKey = false;
  size_t pos = sizeof(kEntryMagic) - 1;
  while (pos < body.size()) {
    llvm::StringRef tag, bytes;
    if (!readSection(body, pos, tag, bytes))
      return false;
    if (tag == "key")
      sameKey = bytes == key;
    else if (tag == "signature")
      result.signature = bytes.str();
    else if (tag == "constructor")
      result.objects.constructors.push_back(bytes.str());
    else if (tag == "destructor")
      result.objects.destructors.push_back(bytes.str());
    else if (tag == "object")
      result.objects.objects.emplace_back(bytes);
    else
      return false;
  }
  if (!sameKey || result.signature.empty() || result.objects.objects.empty())
    return false;
  step = std::move(result);
  // Used now: the eviction removes the entries used longest ago.
  (void)::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  return true;
}

bool mlir::gacc::storeCachedStep(const std::string &dir, const std::string &key,
                                 const CachedStep &step, uint64_t maxBytes,
                                 std::string &error) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create '" + dir + "': " + ec.message();
    return false;
  }
  std::string out = kEntryMagic;
  writeSection(out, "key", key);
  writeSection(out, "signature", step.signature);
  for (const std::string &name : step.objects.constructors)
    writeSection(out, "constructor", name);
  for (const std::string &name : step.objects.destructors)
    writeSection(out, "destructor", name);
  for (const llvm::SmallString<0> &object : step.objects.objects)
    writeSection(out, "object", object);
  char crc[16];
  std::snprintf(crc, sizeof(crc), "crc %08" PRIx32 "\n",
                crc32(out.data(), out.size()));
  out += crc;
  std::string path = getStepCacheEntryPath(dir, key);
  if (!writeFileAtomically(path, out, error))
    return false;
  evictStepCacheEntries(dir, path, maxBytes);
  return true;
}

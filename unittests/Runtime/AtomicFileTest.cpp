//===- AtomicFileTest.cpp - All-or-nothing files and result sets ----------===//
//
// writeFileAtomically, ResultSetWriter, checkResultSet and
// removeStaleTemporaries (GaccNpy's AtomicFile.h): a replaced file is whole,
// a failed write leaves the previous file or set as it was and no temporary,
// a reader refuses a set that does not match its manifest, and temporaries
// of a process that no longer runs are removed at the next write.
//
//===----------------------------------------------------------------------===//

#include "AtomicFile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace mlir::gacc;
namespace fs = std::filesystem;

namespace {

/// A fresh, empty directory for one test. (The same in a death test's
/// child, which runs the test again up to the statement.)
std::string freshDirectory(const std::string &name) {
  std::string dir = testing::TempDir() + "gaccrt-atomic-" + name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string contents(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

void writePlain(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// The names in `dir`, sorted (hidden ones included).
std::vector<std::string> listing(const std::string &dir) {
  std::vector<std::string> names;
  for (const auto &entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

/// The id of a process that has exited and been reaped.
pid_t deadProcess() {
  pid_t child = ::fork();
  if (child == 0)
    ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(AtomicFile, Crc32MatchesZlib) {
  // zlib.crc32(b"123456789") == 0xcbf43926; continuing from a prefix's CRC
  // gives the CRC of the whole.
  EXPECT_EQ(crc32("123456789", 9), 0xcbf43926u);
  EXPECT_EQ(crc32("56789", 5, crc32("1234", 4)), 0xcbf43926u);
  EXPECT_EQ(crc32("", 0), 0u);
}

TEST(AtomicFile, WritesAndReplacesWhole) {
  std::string dir = freshDirectory("replace"), error;
  std::string path = dir + "/a.bin";
  ASSERT_TRUE(writeFileAtomically(path, std::string("first"), error)) << error;
  EXPECT_EQ(contents(path), "first");
  ASSERT_TRUE(writeFileAtomically(path, std::string("second, longer"), error))
      << error;
  EXPECT_EQ(contents(path), "second, longer");
  EXPECT_EQ(listing(dir), std::vector<std::string>{"a.bin"});
}

TEST(AtomicFile, FailureLeavesNoTemporaryAndNamesTheFile) {
  std::string dir = freshDirectory("fail"), error;
  // The target is a directory: the rename fails after the temporary was
  // written, and the temporary must go.
  fs::create_directories(dir + "/target/inner");
  EXPECT_FALSE(writeFileAtomically(dir + "/target", std::string("x"), error));
  EXPECT_EQ(error.rfind(dir + "/target: cannot rename", 0), 0u) << error;
  EXPECT_EQ(listing(dir), std::vector<std::string>{"target"});
  EXPECT_TRUE(fs::is_directory(dir + "/target/inner"));
  // A missing directory: nothing is created.
  EXPECT_FALSE(
      writeFileAtomically(dir + "/missing/a.bin", std::string("x"), error));
  EXPECT_NE(error.find("missing/a.bin: cannot create the file: No such file"),
            std::string::npos)
      << error;
  EXPECT_FALSE(fs::exists(dir + "/missing"));
}

TEST(AtomicFile, ResultSetReplacesThePreviousSet) {
  std::string dir = freshDirectory("set") + "/out", error;
  {
    ResultSetWriter writer(dir);
    ASSERT_TRUE(writer.add("r0", "zero", error)) << error;
    ASSERT_TRUE(writer.add("r1", "one", error)) << error;
    ASSERT_TRUE(writer.commit(error)) << error;
  }
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"MANIFEST", "r0", "r1"}));
  EXPECT_EQ(contents(dir + "/MANIFEST"),
            "gacc-result-set 1\n4 abdef192 r0\n3 7a6c86f1 r1\n")
      << "sizes and zlib CRC-32s of 'zero' and 'one'";
  EXPECT_TRUE(checkResultSet(dir, error)) << error;
  // A new set without r1: r1 goes, r0 is replaced.
  {
    ResultSetWriter writer(dir);
    ASSERT_TRUE(writer.add("r0", "ZERO!", error)) << error;
    ASSERT_TRUE(writer.commit(error)) << error;
  }
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"MANIFEST", "r0"}));
  EXPECT_EQ(contents(dir + "/r0"), "ZERO!");
  EXPECT_TRUE(checkResultSet(dir, error)) << error;
}

TEST(AtomicFile, UncommittedSetLeavesThePreviousOne) {
  std::string dir = freshDirectory("uncommitted"), error;
  {
    ResultSetWriter writer(dir);
    ASSERT_TRUE(writer.add("r0", "zero", error)) << error;
    ASSERT_TRUE(writer.commit(error)) << error;
  }
  std::string manifest = contents(dir + "/MANIFEST");
  {
    ResultSetWriter writer(dir);
    ASSERT_TRUE(writer.add("r0", "other", error)) << error;
    ASSERT_TRUE(writer.add("r1", "more", error)) << error;
    // Destroyed without commit(), as on an error after the steps.
  }
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"MANIFEST", "r0"}));
  EXPECT_EQ(contents(dir + "/r0"), "zero");
  EXPECT_EQ(contents(dir + "/MANIFEST"), manifest);
}

TEST(AtomicFile, FullDiskLeavesThePreviousSet) {
  // GACC_TEST_FAIL_WRITE_AFTER is read at the first write of a process: the
  // statement runs in a child, and nothing here writes through AtomicFile
  // before it (the previous set is written by hand).
  std::string dir = freshDirectory("full");
  const std::string manifest =
      "gacc-result-set 1\n4 abdef192 r0\n3 7a6c86f1 r1\n";
  writePlain(dir + "/r0", "zero");
  writePlain(dir + "/r1", "one");
  writePlain(dir + "/MANIFEST", manifest);
  // 9 bytes: both new files fit, the pending manifest does not.
  EXPECT_EXIT(
      {
        setenv("GACC_TEST_FAIL_WRITE_AFTER", "9", 1);
        ResultSetWriter writer(dir);
        std::string why;
        bool added =
            writer.add("r0", "ZERO", why) && writer.add("r1", "ONE!", why);
        bool committed = added && writer.commit(why);
        std::fprintf(stderr, "%s", why.c_str());
        std::exit(added && !committed ? 3 : 4);
      },
      testing::ExitedWithCode(3),
      "MANIFEST.pending: cannot write the file: No space left on device");
  EXPECT_EQ(listing(dir), (std::vector<std::string>{"MANIFEST", "r0", "r1"}));
  EXPECT_EQ(contents(dir + "/r0"), "zero");
  EXPECT_EQ(contents(dir + "/r1"), "one");
  EXPECT_EQ(contents(dir + "/MANIFEST"), manifest);
  std::string error;
  EXPECT_TRUE(checkResultSet(dir, error)) << error;
}

TEST(AtomicFile, CheckRefusesAMixedOrInterruptedSet) {
  std::string dir = freshDirectory("check"), error;
  {
    ResultSetWriter writer(dir);
    ASSERT_TRUE(writer.add("r0", "zero", error)) << error;
    ASSERT_TRUE(writer.add("r1", "one", error)) << error;
    ASSERT_TRUE(writer.commit(error)) << error;
  }
  writePlain(dir + "/r1", "two");
  EXPECT_FALSE(checkResultSet(dir, error));
  EXPECT_EQ(error.rfind(dir + "/r1: CRC-32 ", 0), 0u) << error;
  writePlain(dir + "/r1", "three");
  EXPECT_FALSE(checkResultSet(dir, error));
  EXPECT_EQ(error, dir + "/r1: 5 bytes, " + dir +
                       "/MANIFEST lists 3 (the file does not belong to the "
                       "result set)");
  fs::remove(dir + "/r1");
  EXPECT_FALSE(checkResultSet(dir, error));
  EXPECT_NE(error.find("/r1: listed in "), std::string::npos) << error;
  fs::rename(dir + "/MANIFEST", dir + "/MANIFEST.pending");
  EXPECT_FALSE(checkResultSet(dir, error));
  EXPECT_NE(error.find("MANIFEST.pending without MANIFEST"), std::string::npos)
      << error;
  // Neither manifest: written by hand, accepted.
  fs::remove(dir + "/MANIFEST.pending");
  EXPECT_TRUE(checkResultSet(dir, error)) << error;
}

TEST(AtomicFile, StaleTemporariesGoAtTheNextWrite) {
  std::string dir = freshDirectory("stale"), error;
  std::string dead = std::to_string(deadProcess());
  std::string mine = std::to_string(::getpid());
  // Left by a killed writer (its process is gone): removed.
  writePlain(dir + "/.result0.npy.gacc-tmp-" + dead + "-0", "partial");
  writePlain(dir + "/.MANIFEST.pending.gacc-tmp-" + dead + "-12", "partial");
  // This process's own, a name that is not a temporary's, and a folder:
  // kept.
  writePlain(dir + "/.result1.npy.gacc-tmp-" + mine + "-0", "in progress");
  writePlain(dir + "/.notes.gacc-tmp-x", "user file");
  writePlain(dir + "/result.gacc-tmp-" + dead + "-0", "not hidden");
  fs::create_directories(dir + "/.dir.gacc-tmp-" + dead + "-1");
  ResultSetWriter writer(dir);
  ASSERT_TRUE(writer.add("r0", "zero", error)) << error;
  ASSERT_TRUE(writer.commit(error)) << error;
  EXPECT_EQ(listing(dir),
            (std::vector<std::string>{
                ".dir.gacc-tmp-" + dead + "-1", ".notes.gacc-tmp-x",
                ".result1.npy.gacc-tmp-" + mine + "-0", "MANIFEST", "r0",
                "result.gacc-tmp-" + dead + "-0"}));
  // writeFileAtomically cleans its directory too; the count is returned by
  // removeStaleTemporaries itself.
  writePlain(dir + "/.trace.json.gacc-tmp-" + dead + "-3", "partial");
  EXPECT_EQ(removeStaleTemporaries(dir), 1);
  writePlain(dir + "/.trace.json.gacc-tmp-" + dead + "-4", "partial");
  ASSERT_TRUE(
      writeFileAtomically(dir + "/trace.json", std::string("{}"), error))
      << error;
  EXPECT_FALSE(fs::exists(dir + "/.trace.json.gacc-tmp-" + dead + "-4"));
  EXPECT_EQ(removeStaleTemporaries(dir + "/nonexistent"), 0);
}

} // namespace

//===- StepTuning.cpp - a step's GEMM library timed on whole steps --------===//

#include "StepTuning.h"

#include "gaccrt/gaccrt.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using namespace mlir::gacc;

namespace {

/// The whole-step candidates, in the order they are timed (a tie keeps the
/// first).
constexpr const char *kCandidates[] = {"avx512", "avx512-lockstep", "onednn",
                                       "openblas"};

bool startsWith(const std::string &text, const char *prefix) {
  return text.rfind(prefix, 0) == 0;
}

/// Runs the step of `setup` once more in a process with every GEMM on
/// `candidate` (12 steps, 2 of them warm-up) and returns its median step
/// time in milliseconds, or a negative value when it did not run.
double timeCandidate(const StepGemmSetup &setup, const std::string &candidate) {
  std::string self = setup.self;
  if (self.empty()) {
    char exe[4096];
    ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (length <= 0)
      return -1;
    self.assign(exe, size_t(length));
  }
  const char *tmp = std::getenv("TMPDIR");
  std::string path =
      std::string(tmp && *tmp ? tmp : "/tmp") + "/gacc-tune-gemm-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0)
    return -1;
  bool lockstep = candidate == "avx512-lockstep";
  std::vector<std::string> env;
  for (char **e = environ; *e; ++e) {
    std::string var(*e);
    if (!startsWith(var, "GACCRT_GEMM=") &&
        !startsWith(var, "GACCRT_COPIES=") &&
        !startsWith(var, "GACCRT_BACKEND="))
      env.push_back(var);
  }
  env.push_back("GACCRT_GEMM=" +
                (lockstep ? std::string("avx512") : candidate));
  env.push_back(lockstep ? "GACCRT_COPIES=lockstep"
                         : "GACCRT_COPIES=concurrent");
  env.push_back("GACCRT_BACKEND=single");
  std::vector<std::string> args = {self};
  args.insert(args.end(), setup.args.begin(), setup.args.end());
  args.push_back("--steps=12");
  args.push_back("--warmup=2");
  std::vector<char *> argv, envp;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  for (std::string &var : env)
    envp.push_back(var.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fd, STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, fd);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(),
                            envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(fd);
  int status = 0;
  bool ran = spawned == 0 && waitpid(pid, &status, 0) == pid &&
             WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::ifstream file(path);
  std::string out((std::istreambuf_iterator<char>(file)),
                  std::istreambuf_iterator<char>());
  unlink(path.c_str());
  size_t at = out.find("time/step median ");
  if (!ran || at == std::string::npos)
    return -1;
  char *end = nullptr;
  double ms = std::strtod(out.c_str() + at + 17, &end);
  return end && std::strncmp(end, " ms", 3) == 0 ? ms : -1;
}

/// Rounds of timing: every candidate once per round, in turn, the second
/// round in reverse order, so that a machine that slows down or speeds up
/// while they run favours none; a candidate's time is its fastest round.
constexpr int kRounds = 2;

/// How much faster than the kernels (what runs untuned) another candidate
/// must be to be chosen: on a shared machine two runs of one step differ by
/// a few percent, and a near tie should not flip the choice.
constexpr double kTakeOverRatio = 0.95;

/// Times every candidate and records the choice under the step's key.
/// Returns it, or "" (with `message` saying why) when no process ran.
std::string tune(const StepGemmSetup &setup, std::string &message) {
  std::vector<std::string> candidates;
  for (std::string candidate : kCandidates)
    if (candidate != "avx512-lockstep" || setup.lockstepToo)
      candidates.push_back(candidate);
  std::vector<double> fastest(candidates.size(), -1);
  for (int round = 0; round < kRounds; ++round)
    for (size_t turn = 0; turn < candidates.size(); ++turn) {
      size_t c = round % 2 ? candidates.size() - 1 - turn : turn;
      double ms = timeCandidate(setup, candidates[c]);
      if (ms >= 0 && (fastest[c] < 0 || ms < fastest[c]))
        fastest[c] = ms;
    }
  std::string timings;
  int best = -1;
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (fastest[c] < 0)
      continue;
    char text[64];
    std::snprintf(text, sizeof(text), "%.2f", fastest[c]);
    timings +=
        (timings.empty() ? "" : ", ") + candidates[c] + " " + text + " ms";
    if (best < 0 || fastest[c] < fastest[best])
      best = int(c);
  }
  if (best < 0) {
    message = "no library ran the step";
    return "";
  }
  // The kernels (candidates[0]) keep the step unless beaten clearly.
  if (fastest[0] >= 0 && fastest[best] > kTakeOverRatio * fastest[0])
    best = 0;
  message = timings;
  if (gaccrt_gemm_record_step(setup.key.c_str(), candidates[best].c_str()) != 0)
    message += "; not recorded (GACCRT_GEMM_CACHE is off or cannot be written)";
  return candidates[best];
}

/// The bytes of the file at `path`; false when it cannot be read.
bool readFile(const std::string &path, std::string &bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return false;
  bytes.assign(std::istreambuf_iterator<char>(file),
               std::istreambuf_iterator<char>());
  return true;
}

} // namespace

bool mlir::gacc::setUpStepGemms(const StepGemmSetup &setup, std::string &note,
                                std::string &error) {
  int threads = gaccrt_gemm_threads();
  std::string library = gaccrt_gemm_library();
  if (setup.tune) {
    if (gaccrt_world_size() > 1) {
      error = "--tune-gemm runs on one rank (it starts a process per "
              "library); tune, then run the ranks";
      return false;
    }
    if (library != "auto") {
      error = "--tune-gemm needs GACCRT_GEMM=auto (it is '" + library + "')";
      return false;
    }
    if (threads == 1) {
      note = "one GEMM thread: each GEMM shape is timed as it runs; "
             "nothing to tune per step";
      return true;
    }
    std::string message;
    std::string chosen = tune(setup, message);
    if (chosen.empty()) {
      error = "--tune-gemm: " + message;
      return false;
    }
    note = "tuned on " + std::to_string(threads) + " GEMM threads (" + message +
           "): " + chosen;
    gaccrt_set_gemm_step_choice(chosen.c_str());
    return true;
  }
  if (const char *used = gaccrt_gemm_use_step(setup.key.c_str())) {
    note = std::string(used) + " for every GEMM (this step's choice on " +
           std::to_string(threads) + " GEMM threads in the GEMM cache)";
    return true;
  }
  // The first run of this step at this thread count on this CPU: which
  // library runs it fastest is measured here, once.
  if (!setup.autoTune || gaccrt_world_size() > 1 || library != "auto" ||
      threads == 1 || !gaccrt_gemm_cache_enabled())
    return true;
  if (setup.print) {
    std::printf("%s: first run of this step on %d GEMM threads here: timing "
                "it on each GEMM library%s (once; --auto-tune-gemm=false "
                "skips)\n",
                setup.tool.c_str(), threads,
                setup.lockstepToo ? " and form of its copies" : "");
    std::fflush(stdout);
  }
  std::string message;
  std::string chosen = tune(setup, message);
  if (chosen.empty()) {
    note = "not tuned (" + message + "): gaccrt's kernels";
    return true;
  }
  note = "tuned at first use on " + std::to_string(threads) +
         " GEMM threads (" + message + "): " + chosen;
  gaccrt_set_gemm_step_choice(chosen.c_str());
  return true;
}

bool mlir::gacc::describeStepLibrary(const std::string &path, std::string &key,
                                     bool &hasCopies) {
  std::string bytes;
  if (!readFile(path, bytes))
    return false;
  // FNV-1a, 64 bits.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char byte : bytes) {
    hash ^= byte;
    hash *= 0x100000001b3ull;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "step-%016llx",
                static_cast<unsigned long long>(hash));
  key = text;
  hasCopies = bytes.find("gaccrt_copies_concurrent") != std::string::npos;
  return true;
}

//===- StepTuning.cpp - a step's GEMM library timed on whole steps --------===//

#include "StepTuning.h"

#include "gaccrt/gaccrt.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

using namespace mlir::gacc;

namespace {

/// A whole-step candidate: gaccrt's step choice, and whether gaccrt times
/// its GEMMs per shape under it ("onednn" on several threads: its matmul or
/// its sgemm), so that its warm-up lasts until the shapes are decided.
struct Candidate {
  const char *name;
  bool timesShapes;
};

/// The whole-step candidates, in the order they are timed (a tie keeps the
/// first).
constexpr Candidate kCandidates[] = {{"avx512", false},
                                     {"avx512-lockstep", false},
                                     {"onednn", true},
                                     {"openblas", false}};

/// Timed steps per candidate and round: at least kMinTimed and kMinTimedMs
/// of them (short steps run more), at most kMaxTimed.
constexpr int kMinTimed = 2;
constexpr double kMinTimedMs = 50;
constexpr int kMaxTimed = 10;

/// A candidate whose first timed step takes more than kGiveUpRatio times the
/// best time so far cannot win: it stops there.
constexpr double kGiveUpRatio = 1.25;

/// The candidates within kCloseRatio of the best after the first round are
/// timed once more, in reverse order, so that a machine that slows down or
/// speeds up while they run favours none (a candidate's time is its fastest
/// step of both rounds).
constexpr double kCloseRatio = 1.10;

/// How much faster than the kernels (what runs untuned) another candidate
/// must be to be chosen: on a shared machine two runs of one step differ by
/// a few percent, and a near tie should not flip the choice.
constexpr double kTakeOverRatio = 0.95;

/// The most warm-up steps of a candidate that times its GEMM shapes
/// ("onednn": its matmul or its sgemm per shape): a shape called once per
/// step is decided after 12 calls.
constexpr int kMaxShapeTimingSteps = 24;

/// The warm-up of such a candidate also ends after a step in which the
/// calls of the shapes still being timed took less than this share of the
/// step: what remains are shapes called a few times per step (the logits
/// layer's first weight gradient, once per step), which change its time by
/// less than the steps' own noise. (100 x 512 at m = 8 on 2 threads: the
/// first run tuned in 17 steps, 3.6 s, against 21 steps, 5.1 s.)
constexpr double kNegligibleTimingShare = 0.02;

/// Runs the step on `choice`: one step to warm up (the library's threads,
/// packing buffers and kernels), and with `timesShapes` more until gaccrt
/// has decided the library of every GEMM shape that matters (see
/// kNegligibleTimingShare), then timed ones. Lowers
/// `fastest` (-1: not timed yet) to the fastest timed step; `leader` is the
/// best time of any candidate so far (-1: none). Counts the steps in
/// `steps`.
bool timeChoice(const StepGemmSetup &setup, bool timesShapes, double leader,
                double &fastest, int &steps, std::string &error) {
  double ms = 0, timedMs = 0;
  if (!setup.runStep(ms, error))
    return false;
  ++steps;
  for (int warmup = 0; timesShapes && warmup < kMaxShapeTimingSteps &&
                       gaccrt_gemm_shapes_being_timed() > 0;
       ++warmup) {
    double timingUs = gaccrt_gemm_timing_us();
    if (!setup.runStep(ms, error))
      return false;
    ++steps;
    if (gaccrt_gemm_timing_us() - timingUs < kNegligibleTimingShare * ms * 1e3)
      break;
  }
  for (int timed = 0; timed < kMaxTimed; ++timed) {
    if (timed >= kMinTimed && timedMs >= kMinTimedMs)
      break;
    if (!setup.runStep(ms, error))
      return false;
    ++steps;
    timedMs += ms;
    if (fastest < 0 || ms < fastest)
      fastest = ms;
    if (timed == 0 && leader > 0 && ms > kGiveUpRatio * leader)
      break;
  }
  return true;
}

/// Times every candidate that can run here on the runner's step and
/// records the choice under the step's key. Returns it with the timings in
/// `message`, or "" when no candidate could run (`message` says why) or a
/// step failed (`error`).
std::string tune(const StepGemmSetup &setup, std::string &message,
                 std::string &error) {
  std::vector<Candidate> candidates;
  for (Candidate candidate : kCandidates)
    if ((candidate.name != std::string("avx512-lockstep") ||
         setup.lockstepToo) &&
        gaccrt_set_gemm_step_choice(candidate.name) == 0)
      candidates.push_back(candidate);
  if (candidates.empty()) {
    message = "no library can run here";
    return "";
  }
  double start = gaccrt_now_us();
  int steps = 0;
  std::vector<double> fastest(candidates.size(), -1);
  auto leader = [&] {
    double best = -1;
    for (double ms : fastest)
      if (ms > 0 && (best < 0 || ms < best))
        best = ms;
    return best;
  };
  for (size_t c = 0; c < candidates.size(); ++c) {
    gaccrt_set_gemm_step_choice(candidates[c].name);
    if (!timeChoice(setup, candidates[c].timesShapes, leader(), fastest[c],
                    steps, error))
      return "";
  }
  double firstBest = leader();
  std::vector<size_t> close;
  for (size_t c = 0; c < candidates.size(); ++c)
    if (fastest[c] > 0 && fastest[c] <= kCloseRatio * firstBest)
      close.push_back(c);
  if (close.size() > 1)
    for (auto it = close.rbegin(); it != close.rend(); ++it) {
      gaccrt_set_gemm_step_choice(candidates[*it].name);
      if (!timeChoice(setup, candidates[*it].timesShapes, -1, fastest[*it],
                      steps, error))
        return "";
    }

  size_t best = 0;
  for (size_t c = 1; c < candidates.size(); ++c)
    if (fastest[c] > 0 && fastest[c] < fastest[best])
      best = c;
  // The kernels (candidates[0]) keep the step unless beaten clearly.
  if (candidates[0].name == std::string("avx512") &&
      fastest[best] > kTakeOverRatio * fastest[0])
    best = 0;
  char text[96];
  std::snprintf(text, sizeof(text), "%d steps in %.1f s: ", steps,
                (gaccrt_now_us() - start) / 1e6);
  message = text;
  for (size_t c = 0; c < candidates.size(); ++c) {
    std::snprintf(text, sizeof(text), "%s%s %.3f ms", c ? ", " : "",
                  candidates[c].name, fastest[c]);
    message += text;
  }
  gaccrt_set_gemm_step_choice(candidates[best].name);
  if (gaccrt_gemm_record_step(setup.key.c_str(), candidates[best].name) != 0)
    message += "; not recorded (GACCRT_GEMM_CACHE is off or cannot be written)";
  return candidates[best].name;
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

bool mlir::gacc::setUpStepGemms(const StepGemmSetup &setup, bool &ranSteps,
                                std::string &note, std::string &error) {
  ranSteps = false;
  int threads = gaccrt_gemm_threads();
  std::string library = gaccrt_gemm_library();
  if (setup.tune) {
    if (gaccrt_world_size() > 1) {
      error = "--tune-gemm runs on one rank (it times the step on each "
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
  } else {
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
  }
  if (setup.print) {
    std::printf("%s: %s on %d GEMM threads here: timing it on each GEMM "
                "library%s%s\n",
                setup.tool.c_str(),
                setup.tune ? "--tune-gemm" : "first run of this step", threads,
                setup.lockstepToo ? " and form of its copies" : "",
                setup.tune ? "" : " (once; --auto-tune-gemm=false skips)");
    std::fflush(stdout);
  }
  std::string copies = gaccrt_copies();
  std::string message;
  ranSteps = true;
  std::string chosen = tune(setup, message, error);
  if (!error.empty())
    return false;
  if (chosen.empty()) {
    // What ran before: the kernels, untimed.
    gaccrt_set_gemm_library(library.c_str());
    gaccrt_set_copies(copies.c_str());
    if (setup.tune) {
      error = "--tune-gemm: " + message;
      return false;
    }
    note = "not tuned (" + message + "): gaccrt's kernels";
    return true;
  }
  note = std::string(setup.tune ? "tuned" : "tuned at first use") + " on " +
         std::to_string(threads) + " GEMM threads (" + message + "): " + chosen;
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

//===- step_ratio.cpp - step times of compiled steps, interleaved ---------===//
//
// gacc-bench-step-ratio BASE.so STEP.so... [--rounds=R] [--steps=S]
//   [--warmup=W] [--seed=N]
//
// Times CPU training steps compiled by gacc-compile (the same graph at
// several micro-batch counts, say) in one process, interleaved: each of R
// rounds (default 20) runs S timed steps (default 3) of every library in
// turn, each after one untimed step (the first step after a switch finds
// the other steps' buffers in the caches), the order reversed every other
// round; before the rounds, W warm-up steps of each
// (default 20: gaccrt's "auto" times each GEMM shape in its first 18
// calls). Prints, per library, the median step time and its ratio to the
// first library's: the median over the rounds of the ratio of the round's
// medians, with the quartiles. On a shared machine whose speed drifts from
// one process to the next, the ratios of steps that alternate every few
// milliseconds are far steadier than those of separate runs
// (bench/README.md).
//
//===----------------------------------------------------------------------===//

#include "StepIO.h"

#include "gaccrt/gaccrt.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

using namespace mlir::gacc;

namespace {
const char kUsage[] =
    "usage: gacc-bench-step-ratio BASE.so STEP.so... [--rounds=R] "
    "[--steps=S]\n"
    "         [--warmup=W] [--seed=N]\n"
    "Times CPU steps compiled by gacc-compile in one process, interleaved,\n"
    "and prints each one's median step time and its ratio to BASE's.\n";

int fail(const std::string &message) {
  std::fprintf(stderr, "gacc-bench-step-ratio: error: %s\n", message.c_str());
  finalizeRuntime();
  return 1;
}

/// The q-quantile (0 <= q <= 1) of `values`, by linear interpolation (for
/// q = 0.5 the median: the mean of the middle two of an even count).
double quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  double position = q * double(values.size() - 1);
  size_t low = size_t(position);
  size_t high = std::min(low + 1, values.size() - 1);
  return values[low] + (position - double(low)) * (values[high] - values[low]);
}

double median(const std::vector<double> &values) {
  return quantile(values, 0.5);
}

bool parseCount(const std::string &arg, const char *name, int64_t least,
                int64_t &value, std::string &error) {
  std::string prefix = std::string("--") + name + "=";
  if (arg.rfind(prefix, 0) != 0)
    return false;
  std::string text = arg.substr(prefix.size());
  char *end = nullptr;
  value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || value < least)
    error = prefix + "'" + text + "': not an integer of at least " +
            std::to_string(least);
  return true;
}
} // namespace

int main(int argc, char **argv) {
  std::vector<std::string> paths;
  int64_t rounds = 20, steps = 3, warmup = 20, seed = 0;
  std::string error;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (parseCount(arg, "rounds", 1, rounds, error) ||
        parseCount(arg, "steps", 1, steps, error) ||
        parseCount(arg, "warmup", 0, warmup, error) ||
        parseCount(arg, "seed", 0, seed, error)) {
      if (!error.empty())
        break;
      continue;
    }
    if (arg.rfind("--", 0) == 0) {
      error = "unknown option '" + arg + "'";
      break;
    }
    paths.push_back(arg);
  }
  if (error.empty() && paths.size() < 2)
    error = "give a base step library and at least one more";
  if (!error.empty()) {
    std::fprintf(stderr, "gacc-bench-step-ratio: error: %s\n%s", error.c_str(),
                 kUsage);
    return 1;
  }
  if (gaccrt_init() != 0)
    return 1;
  if (gaccrt_world_size() > 1)
    return fail("run it as one process, not under mpirun");

  size_t count = paths.size();
  std::vector<StepLibrary> libraries(count);
  std::vector<std::unique_ptr<PackedStep>> packed;
  for (size_t i = 0; i < count; ++i) {
    StepLibrary &library = libraries[i];
    if (!loadStepLibrary(paths[i], library, error))
      return fail(error);
    if (library.cuda)
      return fail("'" + paths[i] + "' is a CUDA step; this times CPU steps");
    packed.push_back(
        std::make_unique<PackedStep>(library.signature, /*cuda=*/false));
    if (!packed.back()->setInputs(
            makeRandomInputs(library.signature.args, uint64_t(seed), 0), error))
      return fail(error);
  }

  // times[i][r]: the step times of library i in round r.
  std::vector<std::vector<std::vector<double>>> times(
      count, std::vector<std::vector<double>>(size_t(rounds)));
  auto runSteps = [&](size_t i, int64_t n, std::vector<double> *out) {
    auto invoke = [&](void **args, size_t, std::string &) {
      libraries[i].entry(args);
      return true;
    };
    for (int64_t s = 0; s < n; ++s) {
      double ms = 0;
      if (!packed[i]->run(invoke, error, &ms))
        return false;
      if (out)
        out->push_back(ms);
    }
    return true;
  };
  for (size_t i = 0; i < count; ++i)
    if (!runSteps(i, warmup, nullptr))
      return fail(error);
  for (int64_t r = 0; r < rounds; ++r)
    for (size_t j = 0; j < count; ++j) {
      size_t i = r % 2 ? count - 1 - j : j;
      // One untimed step first: it finds the other steps' buffers in the
      // caches, which a run of one step alone does not.
      if (!runSteps(i, 1, nullptr) || !runSteps(i, steps, &times[i][size_t(r)]))
        return fail(error);
    }

  std::printf("%lld rounds of %lld timed step(s) of each library in turn "
              "(after one untimed step), after %lld warm-up step(s) each\n\n",
              static_cast<long long>(rounds), static_cast<long long>(steps),
              static_cast<long long>(warmup));
  std::printf("| step | ms/step (median) | ratio to %s | quartiles of the "
              "round ratios |\n|---|---|---|---|\n",
              paths[0].c_str());
  for (size_t i = 0; i < count; ++i) {
    std::vector<double> all, ratios;
    for (int64_t r = 0; r < rounds; ++r) {
      const std::vector<double> &mine = times[i][size_t(r)];
      all.insert(all.end(), mine.begin(), mine.end());
      ratios.push_back(median(mine) / median(times[0][size_t(r)]));
    }
    std::printf("| %s | %.3f | %.3f | %.3f-%.3f |\n", paths[i].c_str(),
                median(all), median(ratios), quantile(ratios, 0.25),
                quantile(ratios, 0.75));
  }
  std::fflush(stdout);
  packed.clear();
  finalizeRuntime();
  return 0;
}

//===- StepIO.cpp - a compiled step's signature, inputs and calls -*- C++ -*-=//
//
// Implements StepIO.h with the C++ standard library, gaccrt and dlopen only,
// so that gacc-run-aot links no LLVM or MLIR.
//
//===----------------------------------------------------------------------===//

#include "StepIO.h"
#include "AtomicFile.h"

#include "gaccrt/gaccrt.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <list>
#include <memory>
#include <random>
#include <sstream>
#include <system_error>
#include <thread>
#include <type_traits>

namespace fs = std::filesystem;

namespace mlir::gacc {

const char *getDeviceName(Device device) {
  return device == Device::CUDA ? "cuda" : "cpu";
}

std::optional<Device> parseDevice(const std::string &name) {
  if (name == "cpu")
    return Device::CPU;
  if (name == "cuda")
    return Device::CUDA;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Signature text
//===----------------------------------------------------------------------===//

const char kSignatureMagic[] = "gacc-step-signature 1\n";

static std::string joinInts(const std::vector<int64_t> &values) {
  std::string s;
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? "," : "") + std::to_string(values[i]);
  return s;
}

std::string serializeSignature(const StepSignature &signature) {
  std::ostringstream os;
  os << kSignatureMagic;
  os << "name " << signature.name << "\n";
  os << "device " << getDeviceName(signature.device) << "\n";
  os << "batch " << signature.batchSize << "\n";
  os << "split " << signature.split << "\n";
  auto tensor = [&](const char *kind, const TensorInfo &info) {
    os << kind << " " << roleName(info.role) << " " << dtypeName(info.dtype)
       << " " << info.index << " " << info.indexBound << " "
       << (info.isMask ? 1 : 0) << " [" << joinInts(info.shape) << "]";
    if (info.hasFill) {
      char fill[64];
      std::snprintf(fill, sizeof(fill), " fill=%.17g", info.fill);
      os << fill;
    }
    if (!info.scalarType.empty())
      os << " scalar=" << info.scalarType;
    if (!info.shardOf.empty() || info.shardRanks)
      os << " shard_of=[" << joinInts(info.shardOf)
         << "] shard_ranks=" << info.shardRanks;
    os << "\n";
  };
  for (const TensorInfo &arg : signature.args)
    tensor("arg", arg);
  for (const TensorInfo &result : signature.results)
    tensor("result", result);
  for (const std::string &site : signature.gatherSites) {
    std::string line = site;
    std::replace(line.begin(), line.end(), '\n', ' ');
    os << "gather " << line << "\n";
  }
  return os.str();
}

static bool parseDType(const std::string &name, DType &dtype) {
  for (DType d : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I32,
                  DType::I64, DType::I8, DType::U8, DType::Bool})
    if (name == dtypeName(d)) {
      dtype = d;
      return true;
    }
  return false;
}

bool parseSignature(const std::string &text, StepSignature &signature,
                    std::string &error) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || line + "\n" != kSignatureMagic) {
    error = "the step signature does not start with '" +
            std::string(kSignatureMagic, sizeof(kSignatureMagic) - 2) +
            "' (compiled by another gacc-compile version? compile it again)";
    return false;
  }
  signature = StepSignature();
  int lineNo = 1;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty())
      continue;
    size_t space = line.find(' ');
    std::string key = line.substr(0, space);
    std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
    auto bad = [&]() {
      error = "malformed step signature line " + std::to_string(lineNo) +
              ": '" + line + "'";
      return false;
    };
    if (key == "name") {
      signature.name = rest;
    } else if (key == "device") {
      std::optional<Device> device = parseDevice(rest);
      if (!device) {
        error = "the step signature names an unknown device '" + rest + "'";
        return false;
      }
      signature.device = *device;
    } else if (key == "batch") {
      char *end = nullptr;
      signature.batchSize = std::strtoll(rest.c_str(), &end, 10);
      if (rest.empty() || *end)
        return bad();
    } else if (key == "split") {
      signature.split = rest;
    } else if (key == "gather") {
      signature.gatherSites.push_back(rest);
    } else if (key == "arg" || key == "result") {
      std::istringstream fields(rest);
      std::string role, dtype, shape;
      TensorInfo info;
      int mask = 0;
      if (!(fields >> role >> dtype >> info.index >> info.indexBound >> mask >>
            shape) ||
          !parseRoleName(role, info.role) || !parseDType(dtype, info.dtype) ||
          shape.size() < 2 || shape.front() != '[' || shape.back() != ']')
        return bad();
      info.isMask = mask != 0;
      std::string option;
      while (fields >> option) {
        if (option.rfind("scalar=", 0) == 0 && option.size() > 7) {
          info.scalarType = option.substr(7);
          continue;
        }
        if (option.rfind("shard_ranks=", 0) == 0) {
          char *end = nullptr;
          info.shardRanks = std::strtoll(option.c_str() + 12, &end, 10);
          if (option.size() == 12 || *end || info.shardRanks < 1)
            return bad();
          continue;
        }
        if (option.rfind("shard_of=[", 0) == 0 && option.back() == ']') {
          std::istringstream full(option.substr(10, option.size() - 11));
          std::string dim;
          while (std::getline(full, dim, ',')) {
            char *end = nullptr;
            int64_t d = std::strtoll(dim.c_str(), &end, 10);
            if (dim.empty() || *end || d < 0)
              return bad();
            info.shardOf.push_back(d);
          }
          continue;
        }
        char *end = nullptr;
        if (option.rfind("fill=", 0) != 0)
          return bad();
        info.fill = std::strtod(option.c_str() + 5, &end);
        if (option.size() == 5 || *end)
          return bad();
        info.hasFill = true;
      }
      std::istringstream dims(shape.substr(1, shape.size() - 2));
      std::string dim;
      while (std::getline(dims, dim, ',')) {
        char *end = nullptr;
        int64_t d = std::strtoll(dim.c_str(), &end, 10);
        if (dim.empty() || *end || d < 0)
          return bad();
        info.shape.push_back(d);
      }
      (key == "arg" ? signature.args : signature.results).push_back(info);
    } else {
      return bad();
    }
  }
  if (signature.name.empty()) {
    error = "the step signature names no step";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Inputs
//===----------------------------------------------------------------------===//

/// Formats a shape as [a, b, c].
static std::string formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

NpyArray narrowArray(const NpyArray &array, int64_t dim, int64_t samples) {
  std::vector<int64_t> shape = array.shape;
  int64_t outer = 1, inner = dtypeSize(array.dtype);
  for (int64_t d = 0; d < dim; ++d)
    outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d)
    inner *= shape[d];
  int64_t from = shape[dim];
  shape[dim] = samples;
  NpyArray out = makeArray(array.dtype, shape);
  int64_t rows = std::min(from, samples);
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.data.data() + o * samples * inner,
                array.data.data() + o * from * inner, rows * inner);
  return out;
}

bool narrowBatchInputs(const std::vector<TensorInfo> &args,
                       std::vector<NpyArray> &inputs, int64_t samples,
                       std::string &error) {
  for (size_t i = 0; i < args.size() && i < inputs.size(); ++i) {
    if (args[i].role != Role::Batch)
      continue;
    int64_t batch = args[i].shape[args[i].index];
    if (samples < 1 || samples > batch) {
      error = "--run-batch-size=" + std::to_string(samples) +
              " is not between 1 and the batch size " + std::to_string(batch);
      return false;
    }
    inputs[i] = narrowArray(inputs[i], args[i].index, samples);
  }
  return true;
}

int StepSignature::getSampleCountArgument() const {
  return mlir::gacc::getSampleCountArgument(args);
}

int getSampleCountArgument(const std::vector<TensorInfo> &args) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].role == Role::SampleCount)
      return static_cast<int>(i);
  return -1;
}

int64_t getSampleCount(const std::vector<NpyArray> &inputs, int countArg) {
  NpyArray count = convertToDType(inputs[countArg], DType::I64);
  return *reinterpret_cast<const int64_t *>(count.data.data());
}

bool runTailOfInputs(const StepSignature &signature,
                     std::vector<NpyArray> &inputs, int64_t samples,
                     bool fromFiles, std::string &error) {
  if (!signature.hasSampleCount()) {
    error = "--run-batch-size needs a step compiled with --runtime-batch-size";
    return false;
  }
  if (fromFiles) {
    error = "--run-batch-size applies to generated inputs; with --input-dir, "
            "give batch files of fewer samples instead";
    return false;
  }
  return narrowBatchInputs(signature.args, inputs, samples, error) &&
         prepareStepInputs(signature.args, inputs, error);
}

/// runtime-batch-size: pads batch inputs of B' < B samples to B and sets
/// the sample count argument to B'.
static bool applySampleCount(const std::vector<TensorInfo> &args,
                             std::vector<NpyArray> &inputs,
                             std::string &error) {
  int countArg = getSampleCountArgument(args);
  if (countArg < 0)
    return true;
  int64_t samples = -1, first = -1, batchSize = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorInfo &arg = args[i];
    NpyArray &in = inputs[i];
    if (arg.role == Role::Batch)
      batchSize = arg.shape[arg.index];
    if (arg.role != Role::Batch || in.shape.size() != arg.shape.size())
      continue;
    int64_t d = arg.index, batch = arg.shape[d];
    std::vector<int64_t> expected = arg.shape;
    expected[d] = in.shape[d];
    if (in.shape != expected || in.shape[d] < 1 || in.shape[d] > batch)
      continue; // prepareStepInputs reports the shape.
    if (samples >= 0 && in.shape[d] != samples) {
      error = "batch argument #" + std::to_string(i) + " has " +
              std::to_string(in.shape[d]) + " samples but batch argument #" +
              std::to_string(first) + " has " + std::to_string(samples);
      return false;
    }
    samples = in.shape[d];
    first = i;
    batchSize = batch;
    if (samples != batch)
      in = narrowArray(in, d, batch);
  }
  // Full-size batch inputs keep the count they were given (padded rows).
  if (samples >= 0 && samples < batchSize) {
    NpyArray count = makeArray(DType::I64, {});
    *reinterpret_cast<int64_t *>(count.data.data()) = samples;
    inputs[countArg] = count;
  }
  if (!inputs[countArg].shape.empty())
    return true; // prepareStepInputs reports the shape.
  int64_t value = getSampleCount(inputs, countArg);
  if (batchSize > 0 && (value < 1 || value > batchSize)) {
    error = "the sample count (argument #" + std::to_string(countArg) +
            ") is " + std::to_string(value) + "; a step compiled for " +
            std::to_string(batchSize) + " samples runs 1 to " +
            std::to_string(batchSize);
    return false;
  }
  return true;
}

/// Reads the signature text a step library embeds (gacc_step_signature)
/// from the file itself, without loading it.
static bool readEmbeddedSignature(const std::string &path,
                                  StepSignature &signature,
                                  std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = std::string("cannot open it: ") + std::strerror(errno);
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  size_t start = bytes.find(kSignatureMagic);
  if (start == std::string::npos) {
    error = "not a step compiled by gacc-compile (no step signature)";
    return false;
  }
  size_t end = bytes.find('\0', start);
  return parseSignature(bytes.substr(start, end - start), signature, error);
}

bool loadStepLibrary(const std::string &path, StepLibrary &library,
                     std::string &error) {
  // A path without a slash would be searched for on the library path.
  std::string file = path.find('/') == std::string::npos ? "./" + path : path;
  // The signature comes first, read from the file: loading a CUDA step runs
  // its constructors, which load its kernels, so libgaccrt_cuda must be
  // loaded (RTLD_GLOBAL) and the device initialized before.
  StepSignature &signature = library.signature;
  if (!readEmbeddedSignature(file, signature, error)) {
    error = "'" + path + "': " + error;
    return false;
  }
  library.cuda = signature.device == Device::CUDA;
  if (library.cuda && !initCudaRuntime(error))
    return false;
  library.handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library.handle) {
    const char *why = dlerror();
    error = "cannot load '" + path + "': " + (why ? why : "unknown error");
    return false;
  }
  auto *signatureText = reinterpret_cast<const char *>(
      dlsym(library.handle, "gacc_step_signature"));
  library.entry =
      reinterpret_cast<void (*)(void **)>(dlsym(library.handle, "gacc_step"));
  if (!signatureText || !library.entry) {
    error = "'" + path +
            "' is not a step compiled by gacc-compile (no "
            "gacc_step_signature or gacc_step)";
    return false;
  }
  if (serializeSignature(signature) != signatureText) {
    error = "'" + path +
            "': gacc_step_signature differs from the signature text in the "
            "file";
    return false;
  }
  return true;
}

bool prepareStepInputs(const std::vector<TensorInfo> &args,
                       std::vector<NpyArray> &inputs, std::string &error,
                       const std::vector<std::string> *files) {
  // Names the file an argument was read from, if any.
  auto inFile = [&](size_t i) {
    return files && i < files->size() && !(*files)[i].empty()
               ? " in '" + (*files)[i] + "'"
               : std::string();
  };
  if (inputs.size() != args.size()) {
    error = "expected " + std::to_string(args.size()) + " inputs, got " +
            std::to_string(inputs.size());
    return false;
  }
  if (!applySampleCount(args, inputs, error))
    return false;
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorInfo &arg = args[i];
    NpyArray &in = inputs[i];
    // A sharded state argument may be given whole (the step's setInputs
    // hands the rank its shard) or as the rank's shard.
    bool whole = arg.shardRanks > 0 && in.shape == arg.shardOf;
    if (in.shape != arg.shape && !whole) {
      error = "argument #" + std::to_string(i) + " (" + roleName(arg.role) +
              ") expects shape " + formatShape(arg.shape) + " of " +
              dtypeName(arg.dtype) + ", got shape " + formatShape(in.shape) +
              " of " + dtypeName(in.dtype) + inFile(i);
      return false;
    }
    if (in.dtype == arg.dtype)
      continue;
    bool bothFloat = isFloatDType(in.dtype) && isFloatDType(arg.dtype);
    bool bothInt = !isFloatDType(in.dtype) && !isFloatDType(arg.dtype);
    if (!bothFloat && !bothInt) {
      error = "argument #" + std::to_string(i) + " (" + roleName(arg.role) +
              ") expects " + dtypeName(arg.dtype) + " data, got " +
              dtypeName(in.dtype) + inFile(i);
      return false;
    }
    in = convertToDType(in, arg.dtype);
  }
  return true;
}

/// An array of `arg`'s type and shape holding its fill value.
static NpyArray makeFilledArray(const TensorInfo &arg) {
  NpyArray f64 = makeArray(DType::F64, arg.shape);
  auto *values = reinterpret_cast<double *>(f64.data.data());
  std::fill(values, values + f64.numElements(), arg.fill);
  return convertToDType(f64, arg.dtype);
}

bool readStepInputs(const std::vector<TensorInfo> &args,
                    const std::string &inputDir, int rank, int world,
                    std::vector<NpyArray> &inputs, std::string &error) {
  std::string dir = inputDir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    error = "--input-dir='" + dir + "' is not a directory";
    return false;
  }
  // Per-rank folders (rank<r>), when present, must be rank0..rank<N-1> for
  // N ranks; report the folders by their names.
  std::vector<std::pair<long long, std::string>> rankDirs;
  for (fs::directory_iterator it(dir, ec), end; it != end && !ec;
       it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= 4 || name.compare(0, 4, "rank") != 0 ||
        !it->is_directory(ec))
      continue;
    std::string digits = name.substr(4);
    char *endp = nullptr;
    long long r = std::strtoll(digits.c_str(), &endp, 10);
    if (*endp || !std::isdigit(static_cast<unsigned char>(digits[0])))
      continue;
    rankDirs.emplace_back(r, name);
  }
  std::sort(rankDirs.begin(), rankDirs.end());
  if (!rankDirs.empty()) {
    bool match = static_cast<int>(rankDirs.size()) == world;
    for (size_t k = 0; match && k < rankDirs.size(); ++k)
      match = rankDirs[k].first == static_cast<long long>(k) &&
              rankDirs[k].second == "rank" + std::to_string(k);
    if (!match) {
      std::string names;
      for (size_t k = 0; k < rankDirs.size(); ++k)
        names += (k ? ", " : "") + rankDirs[k].second;
      error = "'" + dir + "' has per-rank folders " + names + " (" +
              std::to_string(rankDirs.size()) + ") but gacc-run runs with " +
              std::to_string(world) + " rank" + (world == 1 ? "" : "s") +
              ", which reads " +
              (world == 1 ? std::string("rank0")
                          : "rank0..rank" + std::to_string(world - 1));
      return false;
    }
    dir += "/rank" + std::to_string(rank);
  }
  // A set gacc wrote is read only whole (AtomicFile.h).
  if (!checkResultSet(inputDir, error) ||
      (dir != inputDir && !checkResultSet(dir, error)))
    return false;
  inputs.clear();
  std::vector<std::string> files(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    std::string path = dir + "/arg" + std::to_string(i) + ".npy";
    std::string shared = inputDir + "/arg" + std::to_string(i) + ".npy";
    // A file missing from the rank folder may be shared by all ranks.
    if (!fs::exists(path, ec) && fs::exists(shared, ec))
      path = shared;
    // Arguments the pipeline added start from their fill value.
    if (!fs::exists(path, ec) && args[i].hasFill) {
      inputs.push_back(makeFilledArray(args[i]));
      continue;
    }
    if (!fs::exists(path, ec)) {
      error = "missing input file '" + path + "' for argument #" +
              std::to_string(i) + " (" + roleName(args[i].role) + ")";
      return false;
    }
    NpyArray array;
    if (!readNpy(path, array, error))
      return false;
    inputs.push_back(std::move(array));
    files[i] = path;
  }
  return prepareStepInputs(args, inputs, error, &files);
}

std::vector<NpyArray> makeRandomInputs(const std::vector<TensorInfo> &args,
                                       uint64_t seed, int rank) {
  std::vector<NpyArray> inputs;
  std::mt19937_64 paramRng(seed);
  std::mt19937_64 batchRng(seed * 7919 + 104729 * (rank + 1));
  for (const TensorInfo &sharded : args) {
    // A sharded state argument is drawn whole (the same values as without
    // sharding); prepareStepInputs hands the rank its shard.
    TensorInfo arg = sharded;
    if (arg.shardRanks > 0)
      arg.shape = arg.shardOf;
    if (arg.hasFill) {
      inputs.push_back(makeFilledArray(arg));
      continue;
    }
    std::mt19937_64 &rng = arg.role == Role::Batch ? batchRng : paramRng;
    std::normal_distribution<double> normal(0.0, 1.0);
    int64_t fanIn = arg.shape.empty() ? 1 : arg.shape.front();
    // Divided by (not multiplied with the inverse): the same values as ever.
    double sqrtFanIn = std::sqrt(static_cast<double>(fanIn));
    auto draw = [&]() -> double {
      switch (arg.role) {
      case Role::Param:
        return normal(rng) / sqrtFanIn;
      case Role::State:
        return arg.shape.empty() && isFloatDType(arg.dtype) ? 0.1 : 0.0;
      default:
        if (!isFloatDType(arg.dtype)) {
          int64_t bound = arg.indexBound > 0 ? arg.indexBound : 2;
          return static_cast<double>(
              std::uniform_int_distribution<int64_t>(0, bound - 1)(rng));
        }
        if (arg.isMask)
          return std::uniform_real_distribution<double>(0, 1)(rng) < 0.75;
        return normal(rng);
      }
    };
    if (isFloatDType(arg.dtype)) {
      // Drawn in double and rounded to the element type as they are drawn
      // (the values of an F64 array converted with convertToDType, without
      // holding one: a 100-layer 512-wide MLP has 26 M parameters).
      NpyArray array = makeArray(arg.dtype, arg.shape);
      int64_t n = array.numElements();
      auto *f32 = reinterpret_cast<float *>(array.data.data());
      for (int64_t k = 0; k < n; ++k) {
        double value = draw();
        // A mask keeps at least one token.
        if (arg.isMask && k == 0)
          value = 1.0;
        if (arg.dtype == DType::F32)
          f32[k] = static_cast<float>(value);
        else
          storeFloatElement(array, k, value);
      }
      inputs.push_back(std::move(array));
      continue;
    }
    NpyArray ints = makeArray(DType::I64, arg.shape);
    int64_t n = ints.numElements();
    auto *dst = reinterpret_cast<int64_t *>(ints.data.data());
    for (int64_t k = 0; k < n; ++k)
      dst[k] = static_cast<int64_t>(draw());
    // A mask keeps at least one token.
    if (arg.isMask && n > 0)
      dst[0] = 1;
    inputs.push_back(convertToDType(ints, arg.dtype));
  }
  return inputs;
}

//===----------------------------------------------------------------------===//
// The CUDA runtime
//===----------------------------------------------------------------------===//

namespace {
/// libgaccrt_cuda, opened only for CUDA steps so that CPU runs do not load
/// cuBLAS and NCCL.
struct CudaApi {
  void *handle = nullptr;
  int (*init)(int) = nullptr;
  int (*available)() = nullptr;
  void (*finalize)() = nullptr;
  void *(*alloc)(int64_t) = nullptr;
  void (*free)(void *) = nullptr;
  void (*h2d)(void *, const void *, int64_t) = nullptr;
  void (*d2h)(void *, const void *, int64_t) = nullptr;
  int64_t (*current)() = nullptr;
  int64_t (*peak)() = nullptr;
  void (*resetPeak)() = nullptr;
  void (*mark)() = nullptr;
  double (*elapsedMs)() = nullptr;
  void (*getCounts)(gaccrt_cuda_counts *) = nullptr;
  void (*resetCounts)() = nullptr;
};
CudaApi cudaApi;

/// Opens libgaccrt_cuda (next to the other gacc libraries) once.
bool loadCudaApi(std::string &error) {
  if (cudaApi.handle)
    return true;
  void *handle = dlopen("libgaccrt_cuda.so", RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char *why = dlerror();
    error = std::string("cannot load libgaccrt_cuda.so: ") +
            (why ? why : "unknown error");
    return false;
  }
  auto get = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(
        dlsym(handle, name));
    if (!fn)
      error = std::string("libgaccrt_cuda.so lacks ") + name;
    return fn != nullptr;
  };
  CudaApi api;
  api.handle = handle;
  if (!get(api.init, "gaccrt_cuda_init") ||
      !get(api.available, "gaccrt_cuda_available") ||
      !get(api.finalize, "gaccrt_cuda_finalize") ||
      !get(api.alloc, "gaccrt_cuda_alloc") ||
      !get(api.free, "gaccrt_cuda_free") ||
      !get(api.h2d, "gaccrt_cuda_memcpy_h2d") ||
      !get(api.d2h, "gaccrt_cuda_memcpy_d2h") ||
      !get(api.current, "gaccrt_cuda_current_bytes") ||
      !get(api.peak, "gaccrt_cuda_peak_bytes") ||
      !get(api.resetPeak, "gaccrt_cuda_reset_peak") ||
      !get(api.mark, "gaccrt_cuda_mark") ||
      !get(api.elapsedMs, "gaccrt_cuda_elapsed_ms_since_mark") ||
      !get(api.getCounts, "gaccrt_cuda_get_counts") ||
      !get(api.resetCounts, "gaccrt_cuda_reset_counts"))
    return false;
  cudaApi = api;
  return true;
}
} // namespace

bool initCudaRuntime(std::string &error) {
  if (!loadCudaApi(error))
    return false;
  if (cudaApi.init(-1) != 0) {
    error = "--device=cuda: no usable CUDA device (see the message above)";
    return false;
  }
  return true;
}

void finalizeRuntime() {
  if (cudaApi.handle && cudaApi.available())
    cudaApi.finalize();
  gaccrt_finalize();
}

int64_t deviceCurrentBytes(bool cuda) {
  return cuda ? cudaApi.current() : gaccrt_current_bytes();
}

int64_t devicePeakBytes(bool cuda) {
  return cuda ? cudaApi.peak() : gaccrt_peak_bytes();
}

void deviceResetPeak(bool cuda) {
  if (cuda)
    cudaApi.resetPeak();
  else
    gaccrt_reset_peak();
}

void startDeviceTimer() { cudaApi.mark(); }

double deviceElapsedMs() { return cudaApi.elapsedMs(); }

bool takeDeviceCounts(gaccrt_cuda_counts &counts) {
  if (!cudaApi.handle)
    return false;
  counts = gaccrt_cuda_counts{};
  cudaApi.getCounts(&counts);
  cudaApi.resetCounts();
  return true;
}

//===----------------------------------------------------------------------===//
// Calling a step
//===----------------------------------------------------------------------===//

void copyOnThreads(const std::vector<HostCopy> &copies) {
  // Pieces of 4 MiB, dealt to the threads in turn: the first touch of a
  // buffer's pages (the kernel's page faults) is most of the time, and it
  // scales with the threads.
  constexpr int64_t kPiece = 4 << 20;
  int64_t total = 0;
  for (const HostCopy &copy : copies)
    total += copy.bytes;
  unsigned threads =
      std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, 8);
  threads = std::min<int64_t>(threads, std::max<int64_t>(1, total / kPiece));
  auto run = [&](unsigned worker) {
    int64_t piece = 0;
    for (const HostCopy &copy : copies)
      for (int64_t at = 0; at < copy.bytes; at += kPiece, ++piece) {
        if (piece % threads != worker)
          continue;
        int64_t bytes = std::min(kPiece, copy.bytes - at);
        char *to = static_cast<char *>(copy.to) + at;
        if (copy.from)
          std::memcpy(to, static_cast<const char *>(copy.from) + at, bytes);
        else
          std::memset(to, 0, bytes);
      }
  };
  std::vector<std::thread> workers;
  for (unsigned worker = 1; worker < threads; ++worker) {
    try {
      workers.emplace_back(run, worker);
    } catch (const std::system_error &) {
      run(worker); // no thread to be had: this one does its share
    }
  }
  run(0);
  for (std::thread &worker : workers)
    worker.join();
}

PackedStep::PackedStep(const StepSignature &signature, bool cuda)
    : signature(signature), cuda(cuda) {
  // An argument's pages are first touched by setInputs' copy; a result's
  // here (on threads, copyOnThreads), not inside the first timed call.
  for (const std::vector<TensorInfo> *list :
       {&signature.args, &signature.results})
    for (const TensorInfo &info : *list) {
      Buffer buffer;
      buffer.shape = info.shape;
      int64_t count = 1;
      for (int64_t d : info.shape)
        count *= d;
      buffer.bytes = count * dtypeSize(info.dtype);
      buffers.push_back(std::move(buffer));
    }
  auto roundUp = [](int64_t bytes, int64_t to) {
    return std::max<int64_t>(to, (bytes + to - 1) / to * to);
  };
  if (cuda) {
    for (Buffer &buffer : buffers)
      buffer.data = cudaApi.alloc(roundUp(buffer.bytes, 64));
  } else {
    // On the host, one block for all (a deep step's parameters are
    // hundreds of buffers under a huge page each): it starts at a huge
    // page and gets huge pages where the kernel gives them on request
    // (gaccrt_prefer_huge_pages); each buffer starts at 64 bytes.
    int64_t total = 0;
    for (const Buffer &buffer : buffers)
      total += roundUp(buffer.bytes, 64);
    int64_t huge = gaccrt_huge_page_bytes();
    int64_t alignment = total >= huge ? huge : 64;
    int64_t allocated = roundUp(total, alignment);
    hostBlockBytes = allocated;
    hostBlock = std::aligned_alloc(alignment, allocated);
    if (hostBlock) {
      gaccrt_prefer_huge_pages(hostBlock, allocated);
      char *at = static_cast<char *>(hostBlock);
      for (Buffer &buffer : buffers) {
        buffer.data = at;
        at += roundUp(buffer.bytes, 64);
      }
    }
    std::vector<HostCopy> touches;
    for (size_t j = signature.args.size(); j < buffers.size(); ++j)
      if (buffers[j].data)
        touches.push_back({buffers[j].data, nullptr, buffers[j].bytes});
    copyOnThreads(touches);
  }
  // Descriptor fields: allocated, aligned, offset, sizes, strides; `packed`
  // points at them, so `fields` is sized before any pointer is taken.
  size_t fieldCount = 0;
  for (const Buffer &buffer : buffers)
    fieldCount += 1 + 2 * buffer.shape.size();
  fields.reserve(fieldCount);
  for (Buffer &buffer : buffers) {
    packed.push_back(&buffer.data);
    packed.push_back(&buffer.data);
    size_t first = fields.size();
    fields.push_back(0);
    for (int64_t d : buffer.shape)
      fields.push_back(d);
    std::vector<int64_t> strides(buffer.shape.size());
    int64_t stride = 1;
    for (size_t d = buffer.shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride *= buffer.shape[d];
    }
    for (int64_t value : strides)
      fields.push_back(value);
    for (size_t k = first; k < fields.size(); ++k)
      packed.push_back(&fields[k]);
  }
}

PackedStep::~PackedStep() {
  if (cuda)
    for (Buffer &buffer : buffers)
      cudaApi.free(buffer.data);
  std::free(hostBlock);
}

bool PackedStep::setInputs(const std::vector<NpyArray> &inputs,
                           std::string &error) {
  const std::vector<TensorInfo> &args = signature.args;
  if (inputs.size() != args.size()) {
    error = "expected " + std::to_string(args.size()) + " inputs, got " +
            std::to_string(inputs.size());
    return false;
  }
  if (!cuda && !hostBlock) {
    // One block holds every host buffer.
    error = "cannot allocate " + std::to_string(hostBlockBytes) +
            " bytes for the " + std::to_string(buffers.size()) +
            " arguments and results of '" + signature.name + "'";
    return false;
  }
  for (size_t j = 0; j < buffers.size(); ++j)
    if (!buffers[j].data) {
      error = "cannot allocate " + std::to_string(buffers[j].bytes) +
              " bytes for " +
              (j < args.size() ? "argument #" + std::to_string(j)
                               : "result #" + std::to_string(j - args.size()));
      return false;
    }
  std::vector<HostCopy> copies;
  // This rank's shards of whole state arguments, kept until the copies
  // are done (a list: its elements never move).
  std::list<NpyArray> shards;
  for (size_t i = 0; i < args.size(); ++i) {
    Buffer &buffer = buffers[i];
    // Shards are laid out for the ranks the step was compiled for.
    if (args[i].shardRanks > 0 && args[i].shardRanks != gaccrt_world_size()) {
      error = "argument #" + std::to_string(i) +
              " is a shard of the optimizer state for " +
              std::to_string(args[i].shardRanks) +
              " ranks (shard-optimizer-state), but the step runs on " +
              std::to_string(gaccrt_world_size()) +
              "; compile it with data-parallel-size=" +
              std::to_string(gaccrt_world_size());
      return false;
    }
    // A sharded state argument given whole: this rank's shard.
    if (args[i].shardRanks > 0 && inputs[i].shape == args[i].shardOf &&
        inputs[i].shape != args[i].shape) {
      const NpyArray &shard = shards.emplace_back(
          sliceShard(inputs[i], args[i].shardRanks, gaccrt_rank()));
      if (static_cast<int64_t>(shard.data.size()) != buffer.bytes) {
        error = "input #" + std::to_string(i) + " has a shard of " +
                std::to_string(shard.data.size()) + " bytes, expected " +
                std::to_string(buffer.bytes) + " (prepare the inputs first)";
        return false;
      }
      if (cuda)
        cudaApi.h2d(buffer.data, shard.data.data(), buffer.bytes);
      else
        copies.push_back({buffer.data, shard.data.data(), buffer.bytes});
      continue;
    }
    if (static_cast<int64_t>(inputs[i].data.size()) != buffer.bytes) {
      error = "input #" + std::to_string(i) + " has " +
              std::to_string(inputs[i].data.size()) + " bytes, expected " +
              std::to_string(buffer.bytes) + " (prepare the inputs first)";
      return false;
    }
    if (cuda)
      cudaApi.h2d(buffer.data, inputs[i].data.data(), buffer.bytes);
    else
      copies.push_back({buffer.data, inputs[i].data.data(), buffer.bytes});
  }
  copyOnThreads(copies);
  pendingFeedback = false;
  return true;
}

bool PackedStep::run(
    const std::function<bool(void **, size_t, std::string &)> &invoke,
    std::string &error, double *callMs) {
  const std::vector<TensorInfo> &args = signature.args;
  const std::vector<TensorInfo> &results = signature.results;
  // Updated parameters and state feed the next step: swap their buffers
  // (same shape and type) instead of copying.
  if (pendingFeedback) {
    for (size_t j = 0; j < results.size(); ++j)
      if (results[j].role == Role::ParamOut ||
          results[j].role == Role::StateOut)
        std::swap(buffers[results[j].index].data,
                  buffers[args.size() + j].data);
    pendingFeedback = false;
  }
  gaccrt_index_errors_reset();
  double start = 0;
  if (callMs && cuda)
    startDeviceTimer();
  else if (callMs)
    start = gaccrt_now_us();
  if (!invoke(packed.data(), packed.size(), error))
    return false;
  if (callMs)
    *callMs = cuda ? deviceElapsedMs() : (gaccrt_now_us() - start) / 1000.0;
  pendingFeedback = true;
  int64_t badIndex = 0, bound = 0, site = 0;
  if (int64_t count = gaccrt_index_errors(&badIndex, &bound, &site)) {
    if (site == kSampleCountSite) {
      error = "the sample count is " + std::to_string(badIndex) +
              "; a step compiled for " + std::to_string(bound - 1) +
              " samples runs 1 to " + std::to_string(bound - 1) +
              " (the step ran with it clamped)";
      return false;
    }
    const std::vector<std::string> &sites = signature.gatherSites;
    std::string where = site >= 0 && site < static_cast<int64_t>(sites.size())
                            ? sites[site]
                            : "site #" + std::to_string(site);
    // A division's site says so (kDivisionSitePrefix of
    // gacc-guard-divisions; this library does not link MLIR): the "index" is
    // the divisor, the "bound" the dividend; it divided by 1 instead.
    const std::string divisionPrefix = "division: ";
    if (where.rfind(divisionPrefix, 0) == 0) {
      std::string op = where.substr(divisionPrefix.size());
      error = badIndex == 0
                  ? "integer division by zero in " + op
                  : "signed division of " + std::to_string(bound) + " by " +
                        std::to_string(badIndex) + " overflows in " + op;
      error += " (" + std::to_string(count) +
               " undefined divisions in this step; they divided by 1)";
      return false;
    }
    // A scatter-add's site says so (kScatterSitePrefix of gacc-guard-gathers;
    // this library does not link MLIR); it skips the row.
    if (where.rfind("scatter_add at ", 0) == 0) {
      error = "index " + std::to_string(badIndex) + " out of range [0, " +
              std::to_string(bound) + ") in " + where + " (" +
              std::to_string(count) +
              " out-of-range rows in this step; they were skipped)";
      return false;
    }
    error = "index " + std::to_string(badIndex) + " out of range [0, " +
            std::to_string(bound) + ") in gather at " + where + " (" +
            std::to_string(count) +
            " out-of-range reads in this step; they read a clamped index)";
    return false;
  }
  return true;
}

NpyArray PackedStep::getOutput(size_t j) const {
  const Buffer &buffer = buffers[signature.args.size() + j];
  NpyArray out =
      makeArray(signature.results[j].dtype, signature.results[j].shape);
  if (cuda)
    cudaApi.d2h(out.data.data(), buffer.data, buffer.bytes);
  else
    std::memcpy(out.data.data(), buffer.data, buffer.bytes);
  return out;
}

std::string PackedStep::describeNonFiniteOutput(size_t j) const {
  if (cuda)
    return describeNonFinite(getOutput(j));
  const Buffer &buffer = buffers[signature.args.size() + j];
  DType dtype = signature.results[j].dtype;
  return describeNonFinite(dtype, buffer.data, buffer.bytes / dtypeSize(dtype));
}

int64_t PackedStep::getBufferBytes() const {
  int64_t bytes = 0;
  for (const Buffer &buffer : buffers)
    bytes += buffer.bytes;
  return bytes;
}

std::vector<NpyArray> PackedStep::getOutputs() const {
  std::vector<NpyArray> outputs;
  for (size_t j = 0; j < signature.results.size(); ++j)
    outputs.push_back(getOutput(j));
  return outputs;
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

std::string formatBytes(int64_t bytes) {
  char buffer[64];
  if (bytes >= (1 << 20))
    std::snprintf(buffer, sizeof(buffer), "%.2f MiB", bytes / 1048576.0);
  else if (bytes >= 1024)
    std::snprintf(buffer, sizeof(buffer), "%.2f KiB", bytes / 1024.0);
  else
    std::snprintf(buffer, sizeof(buffer), "%lld B",
                  static_cast<long long>(bytes));
  return buffer;
}

namespace {
/// NaN and infinity counts of IEEE values of `Bits` with `exponentMask`
/// and `fractionMask`, sign in the top bit.
template <typename Bits>
void countNonFinite(const void *data, int64_t count, Bits exponentMask,
                    Bits fractionMask, int64_t &nan, int64_t &posInf,
                    int64_t &negInf) {
  const auto *values = static_cast<const Bits *>(data);
  constexpr Bits sign = Bits(1) << (8 * sizeof(Bits) - 1);
  for (int64_t k = 0; k < count; ++k) {
    Bits v;
    std::memcpy(&v, values + k, sizeof(Bits));
    if ((v & exponentMask) != exponentMask)
      continue;
    if (v & fractionMask)
      ++nan;
    else
      ++(v & sign ? negInf : posInf);
  }
}
} // namespace

std::string describeNonFinite(DType dtype, const void *data, int64_t count) {
  int64_t nan = 0, posInf = 0, negInf = 0;
  switch (dtype) {
  case DType::F32:
    countNonFinite<uint32_t>(data, count, 0x7f800000u, 0x007fffffu, nan, posInf,
                             negInf);
    break;
  case DType::F64:
    countNonFinite<uint64_t>(data, count, 0x7ff0000000000000ull,
                             0x000fffffffffffffull, nan, posInf, negInf);
    break;
  case DType::F16:
    countNonFinite<uint16_t>(data, count, 0x7c00, 0x03ff, nan, posInf, negInf);
    break;
  case DType::BF16:
    countNonFinite<uint16_t>(data, count, 0x7f80, 0x007f, nan, posInf, negInf);
    break;
  default:
    return "";
  }
  if (nan + posInf + negInf == 0)
    return "";
  std::string s;
  auto add = [&](int64_t n, const char *what) {
    if (n)
      s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  add(nan, "NaN");
  add(posInf, "+inf");
  add(negInf, "-inf");
  return s + " of " + std::to_string(count) + " value" +
         (count == 1 ? "" : "s");
}

std::string describeNonFinite(const NpyArray &array) {
  return describeNonFinite(array.dtype, array.data.data(), array.numElements());
}

std::vector<std::string>
describeNonFiniteResults(const std::vector<TensorInfo> &results,
                         const std::function<std::string(size_t)> &describe) {
  std::vector<std::string> lines;
  for (size_t j = 0; j < results.size(); ++j) {
    std::string what = describe(j);
    if (!what.empty())
      lines.push_back("result " + std::to_string(j) + " (" +
                      roleName(results[j].role) + "): " + what);
  }
  return lines;
}

std::string formatStepSummary(int64_t steps, int64_t warmup,
                              const std::vector<double> &stepMs, int64_t peak,
                              bool cuda, int64_t collectives,
                              int64_t bytesReduced,
                              const gaccrt_cuda_counts *counts) {
  std::vector<double> sorted = stepMs;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  double median = n == 0       ? NAN
                  : n % 2 == 1 ? sorted[n / 2]
                               : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  double mean = 0;
  for (double ms : stepMs)
    mean += ms;
  mean /= std::max<size_t>(1, stepMs.size());
  char times[128];
  std::snprintf(times, sizeof(times),
                ", time/step median %.3f ms (mean %.3f ms)", median, mean);
  std::string s =
      "summary: " + std::to_string(steps) + " step" + (steps == 1 ? "" : "s");
  if (warmup)
    s += " (" + std::to_string(warmup) + " warm-up)";
  s += times;
  s += ", peak memory " + formatBytes(peak) +
       (cuda ? " (device, with inputs and results)" : " (runtime-accounted)");
  s += ", collectives/step " + std::to_string(collectives) +
       ", bytes reduced/step " + std::to_string(bytesReduced);
  if (counts)
    s += ", kernel launches/step " + std::to_string(counts->launches) +
         ", host syncs/step " + std::to_string(counts->syncs) +
         ", allocations/step " + std::to_string(counts->allocations) + " (" +
         std::to_string(counts->device_allocations) + " from the driver)";
  return s;
}

NpyArray sliceShard(const NpyArray &full, int64_t ranks, int64_t rank) {
  int64_t n = full.numElements(), size = dtypeSize(full.dtype);
  int64_t s = (std::max<int64_t>(n, 1) + ranks - 1) / ranks;
  NpyArray shard = makeArray(full.dtype, {s});
  int64_t begin = std::min(n, rank * s), end = std::min(n, rank * s + s);
  if (end > begin)
    std::memcpy(shard.data.data(), full.data.data() + begin * size,
                (end - begin) * size);
  return shard;
}

NpyArray joinShards(const std::vector<NpyArray> &shards,
                    const std::vector<int64_t> &shape) {
  NpyArray full =
      makeArray(shards.empty() ? DType::F32 : shards[0].dtype, shape);
  int64_t n = full.numElements(), size = dtypeSize(full.dtype), at = 0;
  for (const NpyArray &shard : shards) {
    int64_t take = std::min(n - at, shard.numElements());
    if (take <= 0)
      break;
    std::memcpy(full.data.data() + at * size, shard.data.data(), take * size);
    at += take;
  }
  return full;
}

} // namespace mlir::gacc

//===- OnednnGemm.cpp - gaccrt_sgemm through oneDNN's matmul --------------===//
//
// The oneDNN paths of gaccrt_sgemm. oneDNN's matmul primitive (its brgemm
// kernels on AVX2/AVX-512 CPUs) is faster than OpenBLAS for the skinny
// forward and backward-data GEMMs of a micro-batch (b x 1024 x 1024 at
// b = 64: about 1.2x in the training step, bench/README.md), because it does
// not re-pack the whole weight matrix the way OpenBLAS does in every call.
// oneDNN's BLAS-like dnnl_sgemm (its own packing GEMM, not brgemm) is the
// faster of the two for other shapes (on 2 threads of a Zen 5 VM the
// 256x256x8192 weight gradient took 3.1 ms against the matmul's 3.6 ms, the
// 8192x256x10 backward-data GEMM 0.6 ms against 0.36), so the two are
// separate candidates of the per-shape timing (GemmTuning.cpp).
//
// libdnnl.so.2 (oneDNN 2.x, Debian's libdnnl2) is loaded with dlopen at the
// first GEMM, through its C API: nothing that links gaccrt needs oneDNN to
// start, and without it (or when it fails to load) every GEMM goes to
// OpenBLAS. A primitive is created once per shape, layout and alpha/beta and
// kept in a per-thread cache, so a step that calls the same GEMMs every
// micro-batch and every step pays the creation once. GEMMs that oneDNN has
// no brgemm kernel for (CPUs without AVX-512, unusual layouts) are left to
// OpenBLAS.
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include <cstdlib>
#include <cstring>
#include <unordered_map>

#if GACCRT_HAVE_ONEDNN
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#endif

using namespace gaccrt;

#if GACCRT_HAVE_ONEDNN

static_assert(DNNL_VERSION_MAJOR == 2,
              "gaccrt loads libdnnl.so.2 and uses the oneDNN 2.x C API");

namespace {

/// The oneDNN C functions gaccrt calls, resolved from libdnnl.so.2.
struct Api {
#define GACCRT_DNNL_FUNCTIONS(X)                                               \
  X(dnnl_engine_create)                                                        \
  X(dnnl_stream_create)                                                        \
  X(dnnl_stream_wait)                                                          \
  X(dnnl_memory_desc_init_by_strides)                                          \
  X(dnnl_matmul_desc_init)                                                     \
  X(dnnl_primitive_attr_create)                                                \
  X(dnnl_primitive_attr_destroy)                                               \
  X(dnnl_primitive_attr_set_output_scales)                                     \
  X(dnnl_post_ops_create)                                                      \
  X(dnnl_post_ops_destroy)                                                     \
  X(dnnl_post_ops_append_sum)                                                  \
  X(dnnl_primitive_attr_set_post_ops)                                          \
  X(dnnl_primitive_desc_create)                                                \
  X(dnnl_primitive_desc_query)                                                 \
  X(dnnl_primitive_desc_destroy)                                               \
  X(dnnl_primitive_create)                                                     \
  X(dnnl_primitive_execute)                                                    \
  X(dnnl_memory_create)                                                        \
  X(dnnl_memory_set_data_handle)
#define GACCRT_DNNL_MEMBER(name) decltype(&::name) name = nullptr;
  GACCRT_DNNL_FUNCTIONS(GACCRT_DNNL_MEMBER)
#undef GACCRT_DNNL_MEMBER
  /// OpenMP's, from libdnnl's libgomp: sets the GEMM thread count.
  void (*ompSetNumThreads)(int) = nullptr;
  /// libgomp's entry of `#pragma omp parallel` and the team queries:
  /// gaccrt's parallel loops on oneDNN's threads (onednnParallel); null
  /// when libdnnl was built with another OpenMP runtime.
  void (*gompParallel)(void (*)(void *), void *, unsigned, unsigned) = nullptr;
  int (*ompGetThreadNum)() = nullptr;
  int (*ompGetNumThreads)() = nullptr;
  /// oneDNN's BLAS-like sgemm (row-major); null when missing.
  decltype(&::dnnl_sgemm) sgemm = nullptr;
  dnnl_engine_t engine = nullptr;
};

/// The loaded API, or null when libdnnl.so.2 is missing or incomplete.
/// Loaded once; never unloaded (its threads may outlive any caller).
const Api *api() {
  static const Api *loaded = []() -> const Api * {
    // OpenMP's own wait policy (its threads spin a while after a parallel
    // region, then sleep): with the step's parallel loops on the same
    // threads (onednnParallel) the next GEMM or loop starts on threads that
    // are awake.
    void *handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!handle)
      return nullptr;
    static Api instance;
    bool complete = true;
#define GACCRT_DNNL_RESOLVE(name)                                              \
  instance.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name));   \
  complete = complete && instance.name;
    GACCRT_DNNL_FUNCTIONS(GACCRT_DNNL_RESOLVE)
#undef GACCRT_DNNL_RESOLVE
    instance.ompSetNumThreads =
        reinterpret_cast<void (*)(int)>(dlsym(handle, "omp_set_num_threads"));
    instance.sgemm =
        reinterpret_cast<decltype(&::dnnl_sgemm)>(dlsym(handle, "dnnl_sgemm"));
    instance.gompParallel = reinterpret_cast<decltype(instance.gompParallel)>(
        dlsym(handle, "GOMP_parallel"));
    instance.ompGetThreadNum =
        reinterpret_cast<int (*)()>(dlsym(handle, "omp_get_thread_num"));
    instance.ompGetNumThreads =
        reinterpret_cast<int (*)()>(dlsym(handle, "omp_get_num_threads"));
    if (!complete || instance.dnnl_engine_create(&instance.engine, dnnl_cpu,
                                                 0) != dnnl_success)
      return nullptr;
    return &instance;
  }();
  return loaded;
}

/// What identifies a matmul primitive: sizes, the strides of op(A), op(B)
/// and C, and alpha and beta (as bits).
struct Key {
  int64_t values[11];
  bool operator==(const Key &other) const {
    return std::memcmp(values, other.values, sizeof(values)) == 0;
  }
};

struct KeyHash {
  size_t operator()(const Key &key) const {
    size_t hash = 1469598103934665603ull;
    for (int64_t value : key.values)
      hash = (hash ^ size_t(value)) * 1099511628211ull;
    return hash;
  }
};

/// A ready primitive with its memory objects, or none (`primitive` null)
/// when oneDNN has no brgemm implementation for the key. Kept for the life
/// of the thread.
struct Entry {
  dnnl_primitive_t primitive = nullptr;
  dnnl_memory_t a = nullptr, b = nullptr, c = nullptr;
};

/// Per thread: the cache, the stream, and the OpenMP thread count set.
struct ThreadState {
  std::unordered_map<Key, Entry, KeyHash> cache;
  dnnl_stream_t stream = nullptr;
  /// The OpenMP thread count set for this thread's GEMMs (0: none yet).
  int threads = 0;
};

ThreadState &threadState() {
  thread_local ThreadState state;
  return state;
}

/// Gives oneDNN's OpenMP threads of the calling thread the GEMM thread
/// count: one knob for every library, OpenBLAS's (which reads
/// OPENBLAS_NUM_THREADS, then OMP_NUM_THREADS, then the core count).
void followGemmThreads(const Api &dnnl, ThreadState &state) {
  if (int threads = gemmThreads(); state.threads != threads) {
    if (dnnl.ompSetNumThreads)
      dnnl.ompSetNumThreads(threads);
    state.threads = threads;
  }
}

Entry makeEntry(const Api &dnnl, const GemmArgs &args) {
  Entry entry;
  dnnl_memory_desc_t aDesc, bDesc, cDesc;
  dnnl_dims_t aDims = {args.m, args.k},
              aStrides = {args.aRowStride, args.aColStride};
  dnnl_dims_t bDims = {args.k, args.n},
              bStrides = {args.bRowStride, args.bColStride};
  dnnl_dims_t cDims = {args.m, args.n},
              cStrides = {args.cRowStride, args.cColStride};
  if (dnnl.dnnl_memory_desc_init_by_strides(&aDesc, 2, aDims, dnnl_f32,
                                            aStrides) != dnnl_success ||
      dnnl.dnnl_memory_desc_init_by_strides(&bDesc, 2, bDims, dnnl_f32,
                                            bStrides) != dnnl_success ||
      dnnl.dnnl_memory_desc_init_by_strides(&cDesc, 2, cDims, dnnl_f32,
                                            cStrides) != dnnl_success)
    return entry;
  dnnl_matmul_desc_t desc;
  if (dnnl.dnnl_matmul_desc_init(&desc, &aDesc, &bDesc, nullptr, &cDesc) !=
      dnnl_success)
    return entry;
  dnnl_primitive_attr_t attr = nullptr;
  if (dnnl.dnnl_primitive_attr_create(&attr) != dnnl_success)
    return entry;
  bool attrOk = true;
  if (args.alpha != 1.0f)
    attrOk = dnnl.dnnl_primitive_attr_set_output_scales(
                 attr, 1, 0, &args.alpha) == dnnl_success;
  if (attrOk && args.beta != 0.0f) {
    dnnl_post_ops_t ops = nullptr;
    attrOk = dnnl.dnnl_post_ops_create(&ops) == dnnl_success;
    if (attrOk) {
      attrOk = dnnl.dnnl_post_ops_append_sum(ops, args.beta) == dnnl_success &&
               dnnl.dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
      dnnl.dnnl_post_ops_destroy(ops);
    }
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (attrOk && dnnl.dnnl_primitive_desc_create(&pd, &desc, attr, dnnl.engine,
                                                nullptr) != dnnl_success)
    pd = nullptr;
  dnnl.dnnl_primitive_attr_destroy(attr);
  if (!pd)
    return entry; // no implementation: OpenBLAS
  const char *impl = nullptr;
  // Only its brgemm kernels (AVX-512 and newer) were measured to beat
  // OpenBLAS; on AVX2 oneDNN falls back to its own gemm, which did not
  // (bench/README.md), and its reference implementation is far slower.
  bool fast = dnnl.dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0,
                                             &impl) == dnnl_success &&
              impl && std::strncmp(impl, "brg", 3) == 0;
  dnnl_primitive_t primitive = nullptr;
  if (fast && dnnl.dnnl_primitive_create(&primitive, pd) != dnnl_success)
    primitive = nullptr;
  dnnl.dnnl_primitive_desc_destroy(pd);
  if (!primitive)
    return entry;
  // The descriptors are the caller's layouts, so nothing is reordered; the
  // handles are set before every execution.
  if (dnnl.dnnl_memory_create(&entry.a, &aDesc, dnnl.engine,
                              DNNL_MEMORY_NONE) != dnnl_success ||
      dnnl.dnnl_memory_create(&entry.b, &bDesc, dnnl.engine,
                              DNNL_MEMORY_NONE) != dnnl_success ||
      dnnl.dnnl_memory_create(&entry.c, &cDesc, dnnl.engine,
                              DNNL_MEMORY_NONE) != dnnl_success)
    return Entry();
  entry.primitive = primitive;
  return entry;
}

} // namespace

bool gaccrt::onednnSgemm(const GemmArgs &args) {
  const Api *dnnl = api();
  if (!dnnl)
    return false;
  ThreadState &state = threadState();
  if (!state.stream &&
      dnnl->dnnl_stream_create(&state.stream, dnnl->engine,
                               dnnl_stream_default_flags) != dnnl_success) {
    state.stream = nullptr;
    return false;
  }
  followGemmThreads(*dnnl, state);
  Key key{{args.m, args.n, args.k, args.aRowStride, args.aColStride,
           args.bRowStride, args.bColStride, args.cRowStride, args.cColStride,
           0, 0}};
  std::memcpy(&key.values[9], &args.alpha, sizeof(float));
  std::memcpy(&key.values[10], &args.beta, sizeof(float));
  auto [it, inserted] = state.cache.try_emplace(key);
  if (inserted)
    it->second = makeEntry(*dnnl, args);
  Entry &entry = it->second;
  if (!entry.primitive)
    return false;
  if (dnnl->dnnl_memory_set_data_handle(entry.a, const_cast<float *>(args.a)) !=
          dnnl_success ||
      dnnl->dnnl_memory_set_data_handle(entry.b, const_cast<float *>(args.b)) !=
          dnnl_success ||
      dnnl->dnnl_memory_set_data_handle(entry.c, args.c) != dnnl_success)
    return false;
  dnnl_exec_arg_t execArgs[] = {{DNNL_ARG_SRC, entry.a},
                                {DNNL_ARG_WEIGHTS, entry.b},
                                {DNNL_ARG_DST, entry.c}};
  if (dnnl->dnnl_primitive_execute(entry.primitive, state.stream, 3,
                                   execArgs) != dnnl_success)
    return false;
  return dnnl->dnnl_stream_wait(state.stream) == dnnl_success;
}

bool gaccrt::onednnBlasSgemm(const GemmArgs &args) {
  const Api *dnnl = api();
  if (!dnnl || !dnnl->sgemm || args.cColStride != 1)
    return false;
  // Each operand row-major or transposed (one of its strides 1).
  bool transA = args.aColStride != 1, transB = args.bColStride != 1;
  if ((transA && args.aRowStride != 1) || (transB && args.bRowStride != 1))
    return false;
  followGemmThreads(*dnnl, threadState());
  return dnnl->sgemm(transA ? 'T' : 'N', transB ? 'T' : 'N', args.m, args.n,
                     args.k, args.alpha, args.a,
                     transA ? args.aColStride : args.aRowStride, args.b,
                     transB ? args.bColStride : args.bRowStride, args.beta,
                     args.c, args.cRowStride) == dnnl_success;
}

bool gaccrt::onednnAvailable() { return api() != nullptr; }

bool gaccrt::onednnBlasAvailable() {
  const Api *dnnl = api();
  return dnnl && dnnl->sgemm;
}

namespace {
/// One onednnParallel call: what each thread of the team runs.
struct Team {
  const Api *dnnl;
  void (*body)(void *, int);
  void *context;
  int parts;
};

void runTeamParts(void *data) {
  const Team &team = *static_cast<const Team *>(data);
  // A team smaller than asked (a nested region runs on one thread) still
  // runs every part.
  int threads = team.dnnl->ompGetNumThreads();
  for (int part = team.dnnl->ompGetThreadNum(); part < team.parts;
       part += threads)
    team.body(team.context, part);
}
} // namespace

bool gaccrt::onednnParallel(int parts, void (*body)(void *, int),
                            void *context) {
  const Api *dnnl = api();
  if (!dnnl || !dnnl->gompParallel || !dnnl->ompGetThreadNum ||
      !dnnl->ompGetNumThreads)
    return false;
  Team team{dnnl, body, context, parts};
  dnnl->gompParallel(runTeamParts, &team, unsigned(parts), /*flags=*/0);
  return true;
}

#else

bool gaccrt::onednnSgemm(const GemmArgs &) { return false; }

bool gaccrt::onednnParallel(int, void (*)(void *, int), void *) {
  return false;
}

bool gaccrt::onednnBlasSgemm(const GemmArgs &) { return false; }

bool gaccrt::onednnAvailable() { return false; }

bool gaccrt::onednnBlasAvailable() { return false; }

#endif

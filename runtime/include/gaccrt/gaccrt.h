/*===- gaccrt.h - The gacc runtime C ABI ----------------------------------===*\
 *
 * The C ABI that code compiled by gacc (and the gacc tools) calls at run time:
 * lifecycle and collective backends (single rank, MPI), memory accounting of
 * the compiled code's heap allocations, GEMM through OpenBLAS, timers and a
 * Chrome trace writer. Plain C, usable from C and C++; compiled MLIR code
 * calls some of these functions through MLIR's default memref calling
 * convention (a memref argument expands to allocated pointer, aligned
 * pointer, offset, sizes..., strides...), so their signatures are fixed.
 *
 * Errors: functions that cannot continue print "gaccrt: error: <message>" on
 * stderr and abort every rank (gaccrt_abort); they never return a wrong
 * result or hang. Threads: the memory, timer and trace functions may be
 * called from any thread; the collectives must be called by every rank in
 * the same order from one thread (as with MPI), and gaccrt_init and
 * gaccrt_finalize not concurrently with anything else.
 *
\*===----------------------------------------------------------------------===*/

#ifndef GACCRT_GACCRT_H
#define GACCRT_GACCRT_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define GACCRT_API
#else
#define GACCRT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===--- Lifecycle --------------------------------------------------------===*/

/** Backend selection: GACCRT_BACKEND=mpi or GACCRT_BACKEND=single forces a
 *  backend; otherwise "mpi" when launched by mpirun (OMPI_COMM_WORLD_SIZE or
 *  PMI_SIZE set in the environment), else "single" (MPI is not touched at
 *  all). Idempotent. If MPI was already initialized by the host program,
 *  gaccrt uses it and leaves MPI_Finalize to the host. Every other gaccrt
 *  function initializes the runtime on first use if the host did not.
 *  Returns 0 on success, non-zero with a message on stderr otherwise. */
GACCRT_API int gaccrt_init(void);
/** Writes the trace if enabled (and stops tracing), then MPI_Finalize if
 *  gaccrt initialized MPI. The single backend may be initialized again
 *  afterwards; MPI may not. */
GACCRT_API void gaccrt_finalize(void);
GACCRT_API int gaccrt_rank(void);
GACCRT_API int gaccrt_world_size(void);
/** "single" or "mpi". */
GACCRT_API const char *gaccrt_backend_name(void);
GACCRT_API void gaccrt_barrier(void);
/** Prints "gaccrt: error: <message>" on stderr and aborts all ranks
 *  (MPI_Abort under the MPI backend, abort() otherwise). */
GACCRT_API void gaccrt_abort(const char *message);

/*===--- Collectives ------------------------------------------------------===*/

/** Element types of gaccrt_all_reduce. */
enum {
  GACCRT_F32 = 0,
  GACCRT_F64 = 1,
  GACCRT_BF16 = 2,
  GACCRT_F16 = 3,
  GACCRT_I32 = 4,
  GACCRT_I64 = 5
};
/** Reduction kinds: average is a sum followed by one division by the world
 *  size (an error for integer types); max, min and product are elementwise
 *  over the ranks (the shard dialect's reductions on values other than
 *  gradients, e.g. a metric's maximum over the ranks). */
enum {
  GACCRT_SUM = 0,
  GACCRT_AVERAGE = 1,
  GACCRT_MAX = 2,
  GACCRT_MIN = 3,
  GACCRT_PRODUCT = 4
};

/** All-reduces `count` elements of type `dtype` in place over all ranks
 *  (one call per accumulator bucket `bucket`, which names the trace event).
 *  bf16 and f16 are reduced in f32 temporaries and rounded once. The single
 *  backend leaves the data unchanged but counts the call and its bytes. */
GACCRT_API void gaccrt_all_reduce(void *data, int64_t count, int32_t dtype,
                                  int32_t kind, int64_t bucket);
/** Starts gaccrt_all_reduce of a bucket and returns at once with a handle
 *  (> 0) for gaccrt_all_reduce_wait: how compiled code overlaps a bucket's
 *  all-reduce with the rest of the final micro-batch's backward. The buffer
 *  must not be read or written until the wait returns. With several MPI
 *  ranks a communication thread of the runtime runs the started calls in
 *  the order they were started, with the same MPI call as gaccrt_all_reduce
 *  (so the result is the same bits); any other collective of this rank
 *  (gaccrt_all_reduce, gaccrt_broadcast, gaccrt_barrier) first waits until
 *  the started ones finished. With one rank, no data, or an MPI that was
 *  initialized by the host without MPI_THREAD_SERIALIZED, the reduction
 *  runs before the call returns. Counted and traced as gaccrt_all_reduce
 *  (the trace event of a started call begins at the start, on track 1,
 *  "communication"). */
GACCRT_API int64_t gaccrt_all_reduce_start(void *data, int64_t count,
                                           int32_t dtype, int32_t kind,
                                           int64_t bucket);
/** Waits until the all-reduce `handle` (of gaccrt_all_reduce_start on
 *  `data`) has finished; returns at once when it has. An unknown handle or
 *  another buffer aborts with a message. */
GACCRT_API void gaccrt_all_reduce_wait(int64_t handle, void *data);
/** Started all-reduces that have not finished yet. */
GACCRT_API int64_t gaccrt_all_reduces_in_flight(void);
/** gaccrt_all_reduce of a 1-D f32 memref in MLIR's expanded descriptor form;
 *  the stride must be 1. */
GACCRT_API void gaccrt_all_reduce_memref_f32(float *allocated, float *aligned,
                                             int64_t offset, int64_t size,
                                             int64_t stride, int32_t kind,
                                             int64_t bucket);
/** Reduce-scatter of a bucket (shard-optimizer-state): `send` holds
 *  world_size * count elements of type `dtype` (f32, f64, i32 or i64), rank
 *  r's block at element r * count; the blocks are reduced elementwise over
 *  the ranks (kind: sum or average) and rank r receives block r in `recv`
 *  (count elements). MPI: MPI_Reduce_scatter_block. Counted as a collective
 *  of world_size * count elements reduced. */
GACCRT_API void gaccrt_reduce_scatter(const void *send, void *recv,
                                      int64_t count, int32_t dtype,
                                      int32_t kind, int64_t bucket);
/** All-gather of a bucket's updated shards: `recv` (world_size * count
 *  elements) receives rank r's `count` elements of `send` at element
 *  r * count. MPI: MPI_Allgather. Counted as a collective. */
GACCRT_API void gaccrt_all_gather(const void *send, void *recv, int64_t count,
                                  int32_t dtype, int64_t bucket);
/** Start gaccrt_reduce_scatter or gaccrt_all_gather of a bucket and return
 *  at once with a handle (> 0) for gaccrt_reduce_scatter_wait /
 *  gaccrt_all_gather_wait, as gaccrt_all_reduce_start does for an
 *  all-reduce: `send` must not be written and `recv` not be read or written
 *  until the wait returns. Started collectives of every kind run on one
 *  communication thread in the order they were started; with one rank, no
 *  data, or an MPI without MPI_THREAD_SERIALIZED the call completes before
 *  it returns. Counted and traced as the blocking calls. */
GACCRT_API int64_t gaccrt_reduce_scatter_start(const void *send, void *recv,
                                               int64_t count, int32_t dtype,
                                               int32_t kind, int64_t bucket);
GACCRT_API int64_t gaccrt_all_gather_start(const void *send, void *recv,
                                           int64_t count, int32_t dtype,
                                           int64_t bucket);
/** Wait until the started reduce-scatter / all-gather `handle` on these
 *  buffers has finished. An unknown handle, a handle of another kind of
 *  collective or another `recv` aborts with a message. */
GACCRT_API void gaccrt_reduce_scatter_wait(int64_t handle, const void *send,
                                           void *recv);
GACCRT_API void gaccrt_all_gather_wait(int64_t handle, const void *send,
                                       void *recv);
/** Under GACCRT_GEMM=auto with several GEMM threads: when the GEMM cache
 *  (GACCRT_GEMM_CACHE, runtime/README.md) has a whole-step choice for the
 *  step `step_key` (one word: letters, digits, '-', '_', '.') at this thread
 *  count on this CPU, every GEMM of the process runs on that library
 *  ("avx512", "onednn" or "openblas"; gaccrt_set_gemm_library), or on the
 *  kernels with the copies of a pair in lockstep ("avx512-lockstep";
 *  gaccrt_set_copies), and the choice is returned; otherwise nothing
 *  changes and NULL is returned. */
GACCRT_API const char *gaccrt_gemm_use_step(const char *step_key);
/** Runs every GEMM of the process as the whole-step choice `choice` says
 *  (see gaccrt_gemm_use_step): "avx512", "onednn" or "openblas"
 *  (gaccrt_set_gemm_library, the copies concurrent by the rule), or
 *  "avx512-lockstep" (the kernels, the copies of a pair in lockstep:
 *  gaccrt_set_copies). Returns 0, or -1 and changes nothing for another
 *  name or a library that cannot run here. */
GACCRT_API int32_t gaccrt_set_gemm_step_choice(const char *choice);
/** The number of threads a GEMM runs on (OpenBLAS's thread count). */
GACCRT_API int32_t gaccrt_gemm_threads(void);
/** Records in the GEMM cache that the step `step_key` runs fastest with
 *  every GEMM on `library` ("avx512", "avx512-lockstep", "onednn" or
 *  "openblas", see gaccrt_gemm_use_step) at this GEMM thread count
 *  (more than one), as timed on whole steps, one library per process
 *  (gacc-run --tune-gemm). Returns 0, or -1 (one GEMM thread, a bad key or
 *  library, no cache file). */
GACCRT_API int32_t gaccrt_gemm_record_step(const char *step_key,
                                           const char *library);
/** 1 when this process has a GEMM cache file (GACCRT_GEMM_CACHE is not
 *  "off" or empty and the CPU model is known), else 0: whether
 *  gaccrt_gemm_record_step can keep a choice for later processes. */
GACCRT_API int32_t gaccrt_gemm_cache_enabled(void);
/** The GEMM shapes whose library is being timed in their first calls, on
 *  every thread ("auto" on one GEMM thread, "onednn" on several): 0 once
 *  every shape called so far runs on its chosen library. A caller that
 *  times whole steps (gacc-run --tune-gemm) warms up until it is 0. */
GACCRT_API int32_t gaccrt_gemm_shapes_being_timed(void);
/** Microseconds spent so far, on every thread, in the GEMM calls of shapes
 *  whose library was being timed (their warm-up and timed calls). A caller
 *  that times whole steps compares its growth over a step with the step's
 *  time: when the shapes still being timed take a negligible part of the
 *  step (a shape called once per step, whose choice needs 12 calls), the
 *  step's time is that of its decided shapes. */
GACCRT_API double gaccrt_gemm_timing_us(void);
/** Broadcasts `bytes` bytes at `data` from rank `root` to every rank. */
GACCRT_API void gaccrt_broadcast(void *data, int64_t bytes, int root);
/** Collective timeout in seconds (0, the default: wait forever). With a
 *  timeout, the MPI backend runs each collective nonblocking and polls it;
 *  when it has not completed in time (a rank stopped answering) it prints
 *  an error naming the call, this rank and the ranks that did not join, and
 *  aborts every rank. */
GACCRT_API void gaccrt_set_collective_timeout(double seconds);
GACCRT_API double gaccrt_collective_timeout(void);
/** Number of gaccrt_all_reduce* calls (started ones included),
 *  gaccrt_reduce_scatter and gaccrt_all_gather calls since init or
 *  gaccrt_reset_stats. */
GACCRT_API int64_t gaccrt_collectives_issued(void);
/** Sum of count * sizeof(dtype) over those calls. */
GACCRT_API int64_t gaccrt_bytes_reduced(void);
/** Bytes this rank sent over the network in those calls and in
 *  gaccrt_reduce_scatter / gaccrt_all_gather, as a ring algorithm sends
 *  them: an all-reduce of b bytes 2 b (N - 1) / N, a reduce-scatter of
 *  b bytes (its input) and an all-gather of b bytes (its output)
 *  b (N - 1) / N each, for N ranks (0 with one rank). */
GACCRT_API int64_t gaccrt_bytes_moved(void);
GACCRT_API void gaccrt_reset_stats(void);

/*===--- Index checks -----------------------------------------------------===*/

/** Called by compiled code (gacc-guard-gathers) when a gather reads a tensor
 *  at `index` outside [0, bound) at gather site `site`; the compiled code
 *  then reads a clamped index, so nothing out of bounds is read. Also called
 *  (gacc-guard-divisions) with (divisor, dividend, site) for an integer
 *  division by zero or INT_MIN / -1, which then divides by 1. Records the
 *  first such error (and counts all) until gaccrt_index_errors_reset. */
GACCRT_API void gaccrt_index_error(int64_t index, int64_t bound, int64_t site);
/** Number of index errors since the last reset; when non-zero and the
 *  pointers are not NULL, stores the first error's index, bound and site. */
GACCRT_API int64_t gaccrt_index_errors(int64_t *index, int64_t *bound,
                                       int64_t *site);
GACCRT_API void gaccrt_index_errors_reset(void);

/*===--- Memory -----------------------------------------------------------===*/

/** The allocation functions that MLIR's memref-to-llvm lowering calls with
 *  `use-generic-functions`. Each block carries a hidden header with its size
 *  so that the free can be accounted; blocks must be freed with
 *  _mlir_memref_to_llvm_free. */
GACCRT_API void *_mlir_memref_to_llvm_alloc(size_t size);
GACCRT_API void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t size);
GACCRT_API void _mlir_memref_to_llvm_free(void *ptr);
/** Bytes currently allocated through the functions above: the sizes the
 *  compiled code requested (including any padding MLIR's lowering adds for
 *  alignment), not gaccrt's hidden headers. */
GACCRT_API int64_t gaccrt_current_bytes(void);
/** Highest gaccrt_current_bytes since start or gaccrt_reset_peak. */
GACCRT_API int64_t gaccrt_peak_bytes(void);
/** peak := current. */
GACCRT_API void gaccrt_reset_peak(void);
/** Adds `delta` bytes to the count of gaccrt_current_bytes: a compiled
 *  function whose buffers live in a compile-time arena (gacc-plan-arena)
 *  counts the arena's bytes on entry and subtracts them on return. */
GACCRT_API void gaccrt_account_arena(int64_t delta);
/** Asks the kernel for transparent huge pages (madvise MADV_HUGEPAGE, Linux)
 *  for the whole 4 KiB pages of [data, data + bytes) when the range spans
 *  at least gaccrt_huge_page_bytes (2 MiB), the size from which a range
 *  can hold one; nothing for smaller ranges, on other systems, or with
 *  GACCRT_HUGE_PAGES=0. Where transparent huge pages are enabled only on
 *  request ("madvise", as on Debian), a first touch then maps 2 MiB at a
 *  time instead of 4 KiB: on a 2-core VM, 256 MiB took 55-430 ms instead
 *  of 700-900 ms to touch. gaccrt's allocator does this for the compiled
 *  code's large blocks; the runners for their step buffers and the JIT's
 *  data sections (the arena). Returns 1 when the advice was taken, else 0. */
GACCRT_API int32_t gaccrt_prefer_huge_pages(void *data, int64_t bytes);
/** 2 MiB: below this, gaccrt_prefer_huge_pages does nothing. */
GACCRT_API int64_t gaccrt_huge_page_bytes(void);

/*===--- Timers and the Chrome trace --------------------------------------===*/

/** Monotonic clock in microseconds (CLOCK_MONOTONIC, so ranks on one host
 *  share the time base). */
GACCRT_API double gaccrt_now_us(void);
/** Starts recording trace events; they are written to `path` (JSON object
 *  format, loadable in Perfetto or chrome://tracing) by gaccrt_trace_write or
 *  gaccrt_finalize. With one rank the file is `path`; with several ranks
 *  every rank writes its own file, named by inserting ".rank<r>" before the
 *  extension of the file name: trace.json -> trace.rank1.json, trace ->
 *  trace.rank1. Calling it again changes the path and keeps the events;
 *  NULL or "" stops tracing and drops the recorded events. */
GACCRT_API void gaccrt_trace_enable(const char *path);
GACCRT_API int gaccrt_trace_enabled(void);
/** Opens an event on the calling thread's stack; gaccrt_trace_end closes the
 *  innermost one. Pairs nest. */
GACCRT_API void gaccrt_trace_begin(const char *name, const char *category);
GACCRT_API void gaccrt_trace_end(void);
/** Records a complete event; `args_json` is NULL or the text of a JSON object
 *  (copied verbatim into the trace). */
GACCRT_API void gaccrt_trace_complete(const char *name, const char *category,
                                      double ts_us, double dur_us,
                                      const char *args_json);
/** Micro-batch region markers for compiled code: event "micro-batch <index>",
 *  category "region". */
GACCRT_API void gaccrt_trace_region_begin(int64_t index);
GACCRT_API void gaccrt_trace_region_end(int64_t index);
/** Writes the trace file (see gaccrt_trace_enable). Returns 0 on success;
 *  non-zero when tracing is not enabled or the file cannot be written (with
 *  a message on stderr). */
GACCRT_API int gaccrt_trace_write(void);

/*===--- GEMM -------------------------------------------------------------===*/

/** C = alpha * op(A) * op(B) + beta * C through oneDNN's matmul, gaccrt's
 *  AVX-512 kernels or OpenBLAS's cblas_sgemm (see gaccrt_set_gemm_library),
 *  with A, B, C 2-D
 *  f32 memrefs in MLIR's expanded descriptor form. op(X) = X^T when transX is
 *  non-zero; the sizes passed are those of the stored X. Any row stride with
 *  unit column stride is used in place, as is a column-major layout (unit row
 *  stride); other layouts go through a contiguous copy. beta == 0 ignores
 *  the previous contents of C (NaN included). Mismatched shapes abort. */
GACCRT_API void gaccrt_sgemm(int32_t transA, int32_t transB, float alpha,
                             float beta, float *aAlloc, float *aAligned,
                             int64_t aOffset, int64_t aSize0, int64_t aSize1,
                             int64_t aStride0, int64_t aStride1, float *bAlloc,
                             float *bAligned, int64_t bOffset, int64_t bSize0,
                             int64_t bSize1, int64_t bStride0, int64_t bStride1,
                             float *cAlloc, float *cAligned, int64_t cOffset,
                             int64_t cSize0, int64_t cSize1, int64_t cStride0,
                             int64_t cStride1);

/** gaccrt_sgemm, then epilogue(context, i0, i1, j0, j1) for the rectangles
 *  [i0, i1) x [j0, j1) of a partition of C (rows by columns, in the
 *  indices of C as passed), each once its elements are final: the compiled
 *  elementwise loop that reads C (a bias, an activation) on every element
 *  exactly once. On gaccrt's AVX-512 kernels with a row-major C each tile
 *  calls it right after its last store, while the tile is in cache, on the
 *  thread that computed it; otherwise it runs after the GEMM over bands of
 *  rows, on the GEMM threads as gaccrt_parallel_for runs a loop. The
 *  rectangles are disjoint and may run concurrently: the epilogue must
 *  touch nothing but its rectangle's elements of its outputs and read
 *  nothing that it or the GEMM writes elsewhere. gacc's lowering fuses a
 *  GEMM with the elementwise loop after it this way
 *  (gacc-fuse-gemm-epilogues). */
GACCRT_API void gaccrt_sgemm_epilogue(
    int32_t transA, int32_t transB, float alpha, float beta, float *aAlloc,
    float *aAligned, int64_t aOffset, int64_t aSize0, int64_t aSize1,
    int64_t aStride0, int64_t aStride1, float *bAlloc, float *bAligned,
    int64_t bOffset, int64_t bSize0, int64_t bSize1, int64_t bStride0,
    int64_t bStride1, float *cAlloc, float *cAligned, int64_t cOffset,
    int64_t cSize0, int64_t cSize1, int64_t cStride0, int64_t cStride1,
    void (*epilogue)(void *, int64_t, int64_t, int64_t, int64_t),
    void *context);

/** Two accumulating GEMMs into one C:
 *  C = alpha * (op(A1) * op(B1) + op(A2) * op(B2)) + beta * C. Where both
 *  run on gaccrt's AVX-512 kernels and have a weight gradient's layout (C
 *  with more rows than the two inner sizes together, these within one inner
 *  block of the kernels, op(B) row-major, no operand needing a copy), it is
 *  one GEMM over both inner ranges (op(A1) and op(A2) side by side, op(B1)
 *  over op(B2), without copying them together): C is read and written
 *  once, each tile summing all products in registers, with the bits of
 *  gaccrt_sgemm on the stacked operands there. Otherwise it is the two
 *  calls gaccrt_sgemm(A1, B1, beta) and gaccrt_sgemm(A2, B2, 1), bit for
 *  bit. gacc's lowering pairs the weight-gradient GEMMs of two
 *  micro-batches with it (gacc-pair-accumulating-gemms). Mismatched shapes
 *  abort. */
GACCRT_API void gaccrt_sgemm_pair(
    int32_t transA, int32_t transB, float alpha, float beta, float *a1Alloc,
    float *a1Aligned, int64_t a1Offset, int64_t a1Size0, int64_t a1Size1,
    int64_t a1Stride0, int64_t a1Stride1, float *b1Alloc, float *b1Aligned,
    int64_t b1Offset, int64_t b1Size0, int64_t b1Size1, int64_t b1Stride0,
    int64_t b1Stride1, float *a2Alloc, float *a2Aligned, int64_t a2Offset,
    int64_t a2Size0, int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1,
    float *b2Alloc, float *b2Aligned, int64_t b2Offset, int64_t b2Size0,
    int64_t b2Size1, int64_t b2Stride0, int64_t b2Stride1, float *cAlloc,
    float *cAligned, int64_t cOffset, int64_t cSize0, int64_t cSize1,
    int64_t cStride0, int64_t cStride1);

/** Four accumulating GEMMs into one C: C = alpha * (op(A1) * op(B1) + ...
 *  + op(A4) * op(B4)) + beta * C. Where all four run on gaccrt's AVX-512
 *  kernels with a weight gradient's layout and the four inner sizes fit one
 *  inner block of the kernels, it is one GEMM over all four inner ranges
 *  (as gaccrt_sgemm_pair is over two): C is read and written once, with the
 *  bits of gaccrt_sgemm on the stacked operands there. Otherwise it is the
 *  two calls gaccrt_sgemm_pair(A1, B1, A2, B2, beta) and
 *  gaccrt_sgemm_pair(A3, B3, A4, B4, 1). gacc's lowering uses it for the
 *  weight gradients of four micro-batches when two copies of two
 *  micro-batches each run side by side (gacc-pair-accumulating-gemms,
 *  paired copies). Mismatched shapes abort. */
GACCRT_API void gaccrt_sgemm_quad(
    int32_t transA, int32_t transB, float alpha, float beta, float *a1Alloc,
    float *a1Aligned, int64_t a1Offset, int64_t a1Size0, int64_t a1Size1,
    int64_t a1Stride0, int64_t a1Stride1, float *b1Alloc, float *b1Aligned,
    int64_t b1Offset, int64_t b1Size0, int64_t b1Size1, int64_t b1Stride0,
    int64_t b1Stride1, float *a2Alloc, float *a2Aligned, int64_t a2Offset,
    int64_t a2Size0, int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1,
    float *b2Alloc, float *b2Aligned, int64_t b2Offset, int64_t b2Size0,
    int64_t b2Size1, int64_t b2Stride0, int64_t b2Stride1, float *a3Alloc,
    float *a3Aligned, int64_t a3Offset, int64_t a3Size0, int64_t a3Size1,
    int64_t a3Stride0, int64_t a3Stride1, float *b3Alloc, float *b3Aligned,
    int64_t b3Offset, int64_t b3Size0, int64_t b3Size1, int64_t b3Stride0,
    int64_t b3Stride1, float *a4Alloc, float *a4Aligned, int64_t a4Offset,
    int64_t a4Size0, int64_t a4Size1, int64_t a4Stride0, int64_t a4Stride1,
    float *b4Alloc, float *b4Aligned, int64_t b4Offset, int64_t b4Size0,
    int64_t b4Size1, int64_t b4Stride0, int64_t b4Stride1, float *cAlloc,
    float *cAligned, int64_t cOffset, int64_t cSize0, int64_t cSize1,
    int64_t cStride0, int64_t cStride1);

/** Two GEMMs sharing op(B): C1 = alpha * op(A1) * op(B) + beta * C1 and
 *  C2 = alpha * op(A2) * op(B) + beta * C2, op(A1) and op(A2) of the same
 *  sizes and layout, C1 and C2 too. Where the shape runs on gaccrt's
 *  AVX-512 kernels through their panels route (op(B) row-major, fewer rows
 *  than the inner size) or the transposed route of x W^T, it is one pass
 *  over op(B) whose panels serve the tiles of both (two micro-batches'
 *  forward or backward-data GEMMs of one layer: the weight is read once),
 *  with the bits of the two calls. Otherwise it is the two calls
 *  gaccrt_sgemm(A1, B, C1) and gaccrt_sgemm(A2, B, C2). gacc's lowering
 *  uses it when the two micro-batches of a pair run in turn
 *  (gacc-pair-accumulating-gemms, lockstep copies). Mismatched shapes
 *  abort. */
GACCRT_API void gaccrt_sgemm_rows_pair(
    int32_t transA, int32_t transB, float alpha, float beta, float *a1Alloc,
    float *a1Aligned, int64_t a1Offset, int64_t a1Size0, int64_t a1Size1,
    int64_t a1Stride0, int64_t a1Stride1, float *bAlloc, float *bAligned,
    int64_t bOffset, int64_t bSize0, int64_t bSize1, int64_t bStride0,
    int64_t bStride1, float *c1Alloc, float *c1Aligned, int64_t c1Offset,
    int64_t c1Size0, int64_t c1Size1, int64_t c1Stride0, int64_t c1Stride1,
    float *a2Alloc, float *a2Aligned, int64_t a2Offset, int64_t a2Size0,
    int64_t a2Size1, int64_t a2Stride0, int64_t a2Stride1, float *c2Alloc,
    float *c2Aligned, int64_t c2Offset, int64_t c2Size0, int64_t c2Size1,
    int64_t c2Stride0, int64_t c2Stride1);

/** Chooses the library of gaccrt_sgemm: "auto" (the default when oneDNN
 *  or the AVX-512 kernels can run: each GEMM shape of at least 2^16
 *  multiply-adds runs on every library in its first calls, timed, then on
 *  the fastest; the AVX-512 kernels keep it unless another library is 10 %
 *  faster), "onednn" (a fixed rule
 *  per shape: oneDNN's matmul where it was measured faster, OpenBLAS
 *  elsewhere), "onednn-sgemm" (oneDNN's BLAS-like dnnl_sgemm for every
 *  GEMM), "avx512" (gaccrt's own register-blocked AVX-512 kernels for
 *  every GEMM) or "openblas". oneDNN needs gaccrt built with oneDNN's
 *  header and libdnnl.so.2 at run time; the AVX-512 kernels a CPU with
 *  AVX-512F. The environment variable GACCRT_GEMM sets the initial choice
 *  (gaccrt_init rejects an unknown name there). Returns 0, or -1 and
 *  changes nothing for an unknown name or a library that cannot run here
 *  ("auto" is "openblas" when OpenBLAS is the only one). GEMMs use
 *  OpenBLAS's thread count (OPENBLAS_NUM_THREADS, then OMP_NUM_THREADS,
 *  then the number of cores); with more than one thread "onednn" runs
 *  every GEMM on oneDNN (that many OpenMP threads), each shape of at least
 *  2^16 multiply-adds on its matmul or its sgemm as timed in its first
 *  calls, the smaller ones on its matmul where it has a kernel,
 *  "auto" every GEMM on the AVX-512 kernels where they can run, untimed
 *  (unless gaccrt_gemm_use_step), and the kernels split each large GEMM
 *  across that many threads of their own. */
GACCRT_API int32_t gaccrt_set_gemm_library(const char *name);
/** The library chosen for gaccrt_sgemm: "auto", "onednn", "onednn-sgemm",
 *  "avx512" or "openblas". Under "auto" and "onednn", GEMMs that oneDNN's
 *  matmul has no brgemm kernel for (no AVX-512) go to another library. */
GACCRT_API const char *gaccrt_gemm_library(void);

/*===--- Parallel loops ---------------------------------------------------===*/

/** Runs body(context, lo, hi) on slices [lo, hi) that together cover
 *  [0, count) once, each on one thread: on the GEMM threads (the thread
 *  count of gaccrt_sgemm), the caller running the first slice, or on the
 *  caller alone when `count` times `work` (the estimated scalar operations
 *  of one iteration) is too small to share, when one thread is set, or
 *  when another thread's GEMM or loop is using the workers. Returns when
 *  every slice is done; nothing when count <= 0. The lowering calls it for
 *  the outermost parallel loops of a step (gacc-parallel-loops-to-runtime);
 *  `body` must not call it again. */
GACCRT_API void gaccrt_parallel_for(void (*body)(void *, int64_t, int64_t),
                                    void *context, int64_t count, int64_t work);

/** Runs body(context, lo, hi) over [0, count) once, where the iterations
 *  are independent copies of a step's work (two micro-batches' forward and
 *  backward passes: gacc-pair-accumulating-gemms) that may call
 *  gaccrt_sgemm, gaccrt_sgemm_pair and gaccrt_parallel_for. With as many
 *  GEMM threads as copies (2 <= threads <= count) and every GEMM on gaccrt's
 *  AVX-512 kernels (GACCRT_GEMM avx512, or auto), each slice runs on one
 *  thread (the caller the first), and its GEMMs and loops run on that
 *  thread alone: no GEMM or loop split between cores, whose caches would
 *  then hand each other the halves of every small micro-batch's
 *  activations. Otherwise the caller runs body(context, 0, count), each
 *  GEMM and loop in it split over every thread as usual. Traced events of
 *  a slice off the caller are on their own track ("copy 2", ...). */
/** Whether gaccrt_parallel_copies(..., count) runs one copy per thread (1)
 *  or the copies in turn on the caller (0), by the rule above, unless
 *  gaccrt_set_copies("lockstep") (or GACCRT_COPIES=lockstep) has the copies
 *  always run in turn. gacc's lowering asks before the copies of a pair,
 *  and runs them in lockstep (their GEMMs of one weight as
 *  gaccrt_sgemm_rows_pair) when they would run in turn. */
GACCRT_API int32_t gaccrt_copies_concurrent(int64_t count);
/** How the copies of gaccrt_parallel_copies run: "concurrent" (the rule
 *  above, the default) or "lockstep" (always in turn, i.e. gacc's lockstep
 *  form). The initial setting is GACCRT_COPIES (gaccrt_init rejects another
 *  value). Returns 0, or -1 and changes nothing for another name. */
GACCRT_API int32_t gaccrt_set_copies(const char *mode);
/** The setting of gaccrt_set_copies: "concurrent" or "lockstep". */
GACCRT_API const char *gaccrt_copies(void);

GACCRT_API void gaccrt_parallel_copies(void (*body)(void *, int64_t, int64_t),
                                       void *context, int64_t count);

#ifdef __cplusplus
}
#endif

#endif /* GACCRT_GACCRT_H */

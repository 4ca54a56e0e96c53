/*===- gaccrt_cuda.h - The gacc runtime's CUDA backend C ABI --------------===*\
 *
 * libgaccrt_cuda.so: what code compiled by gacc for CUDA (and the gacc tools
 * with --device=cuda) calls at run time, on top of libgaccrt.so: device
 * selection, a compute and a communication stream, accounted device memory,
 * GEMM through cuBLAS, the NCCL all-reduce of the accumulator buckets
 * (bootstrapped over gaccrt's MPI backend), timing, and the MLIR GPU runtime
 * ABI (mgpu*) that MLIR's gpu-to-llvm lowering calls from host code. No CUDA
 * header is needed to use it: CUDA handles are opaque pointers here.
 *
 * The CUDA driver (libcuda.so.1) is loaded at run time, so programs linking
 * this library start on machines without a driver or GPU: gaccrt_cuda_init
 * then returns non-zero with "gaccrt: CUDA is not available: <reason>" on
 * stderr, and any function that needs a device aborts with
 * "gaccrt: error: <function>: CUDA is not available: <reason>".
 *
 * Errors: every CUDA driver, cuBLAS and NCCL status is checked; a failure
 * prints "gaccrt: error: <function>: <call> failed: <status> (<text>)" and
 * aborts every rank (gaccrt_abort). NCCL's asynchronous errors are polled
 * while the host waits for the device, and a failed communicator is aborted
 * (ncclCommAbort) before the ranks are, so a broken collective ends the run
 * instead of hanging it.
 *
 * Ordering: everything runs on one in-order "compute" stream except the
 * all-reduces, which run on a "communication" stream after waiting for the
 * compute stream's work issued before them. The next operation gaccrt puts on
 * the compute stream (a GEMM, copy, memset, kernel launch, event record,
 * stream synchronization) waits for every blocking all-reduce
 * (gaccrt_cuda_all_reduce) issued before it, so the reduced buffers are never
 * read or overwritten early; a started one (gaccrt_cuda_all_reduce_start) is
 * waited for where gaccrt_cuda_all_reduce_wait is called.
 *
 * Threads: call the CUDA functions from one thread at a time (any thread;
 * the context is made current where needed). The accounting queries may be
 * called from any thread.
 *
\*===----------------------------------------------------------------------===*/

#ifndef GACCRT_GACCRT_CUDA_H
#define GACCRT_GACCRT_CUDA_H

#include "gaccrt/gaccrt.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===--- Lifecycle --------------------------------------------------------===*/

/** Loads the driver (libcuda.so.1, or the file named by GACCRT_CUDA_DRIVER),
 *  cuInit, picks a device, makes its primary context current, creates the
 *  compute and communication streams and a cuBLAS handle bound to the compute
 *  stream. `device_ordinal_or_minus1` >= 0 picks that device; -1 picks the
 *  local rank under mpirun (OMPI_COMM_WORLD_LOCAL_RANK, else MPI_LOCALRANKID)
 *  modulo the number of devices, else device 0. Idempotent (asking for
 *  another device than the one in use is an error). Returns 0 on success, or
 *  non-zero after printing "gaccrt: CUDA is not available: <reason>" (no
 *  driver, no device, cuInit's error, ...). Never aborts. Every other
 *  function initializes the backend on first use with the device given to
 *  mgpuSetDefaultDevice, else -1. */
GACCRT_API int gaccrt_cuda_init(int device_ordinal_or_minus1);
/** 1 when gaccrt_cuda_init succeeded (and gaccrt_cuda_finalize has not been
 *  called since), else 0. Does not initialize anything itself. */
GACCRT_API int gaccrt_cuda_available(void);
/** The device ordinal in use, or -1 when the backend is not initialized. */
GACCRT_API int gaccrt_cuda_device(void);
/** Waits for the device, writes the device-side trace events (see
 *  gaccrt_cuda_synchronize), destroys the NCCL communicator, the cuBLAS
 *  handle and the streams, and releases the primary context. Device memory
 *  still allocated is not freed. gaccrt_cuda_init may be called again
 *  afterwards. Call it before gaccrt_finalize. */
GACCRT_API void gaccrt_cuda_finalize(void);

/*===--- Memory -----------------------------------------------------------===*/

/** cuMemAlloc with accounting; 0 bytes returns NULL. Out of memory aborts
 *  with the free and total device memory in the message. */
GACCRT_API void *gaccrt_cuda_alloc(int64_t bytes);
/** Frees memory from gaccrt_cuda_alloc or mgpuMemAlloc (NULL is ignored); any
 *  other pointer aborts. */
GACCRT_API void gaccrt_cuda_free(void *device_ptr);
/** Copies ordered on the compute stream (after pending all-reduces). The
 *  host-to-device and device-to-host copies return when the copy is done;
 *  device-to-device copies and memset_zero are only enqueued. */
GACCRT_API void gaccrt_cuda_memcpy_h2d(void *dst, const void *src,
                                       int64_t bytes);
GACCRT_API void gaccrt_cuda_memcpy_d2h(void *dst, const void *src,
                                       int64_t bytes);
GACCRT_API void gaccrt_cuda_memcpy_d2d(void *dst, const void *src,
                                       int64_t bytes);
GACCRT_API void gaccrt_cuda_memset_zero(void *dst, int64_t bytes);
/** Bytes of device memory currently allocated through gaccrt_cuda_alloc and
 *  mgpuMemAlloc (requested sizes; not cuBLAS's or NCCL's own buffers). */
GACCRT_API int64_t gaccrt_cuda_current_bytes(void);
/** Highest gaccrt_cuda_current_bytes since start or gaccrt_cuda_reset_peak. */
GACCRT_API int64_t gaccrt_cuda_peak_bytes(void);
/** peak := current. */
GACCRT_API void gaccrt_cuda_reset_peak(void);
/** Bytes of freed device memory the backend keeps for reuse (its pool:
 *  freed blocks are reused by allocations of the same rounded size and
 *  returned to the driver at gaccrt_cuda_finalize or when an allocation
 *  would fail). */
GACCRT_API int64_t gaccrt_cuda_pooled_bytes(void);

/** Device work done since gaccrt_cuda_reset_counts (or start). */
typedef struct gaccrt_cuda_counts {
  int64_t launches;           /**< kernel launches (mgpuLaunchKernel) */
  int64_t syncs;              /**< host waits for a stream or an event */
  int64_t allocations;        /**< gaccrt_cuda_alloc and mgpuMemAlloc calls */
  int64_t device_allocations; /**< ... of them not served by the pool */
} gaccrt_cuda_counts;
GACCRT_API void gaccrt_cuda_get_counts(gaccrt_cuda_counts *counts);
GACCRT_API void gaccrt_cuda_reset_counts(void);

/*===--- Synchronization and timing ---------------------------------------===*/

/** Waits until the communication and compute streams are idle (polling
 *  NCCL's asynchronous errors while waiting), then adds the pending
 *  device-side trace events (GEMMs and all-reduces, with the times they ran
 *  on the device) to the trace. (Events already complete are also added
 *  whenever the host waits for the compute stream: mgpuStreamSynchronize,
 *  blocking copies.) */
GACCRT_API void gaccrt_cuda_synchronize(void);
/** Records the timing mark on the compute stream (gaccrt_cuda_init sets the
 *  first one). */
GACCRT_API void gaccrt_cuda_mark(void);
/** Milliseconds of device time from the last mark to the end of the work
 *  issued so far on the compute stream, all-reduces included; waits for that
 *  work. */
GACCRT_API double gaccrt_cuda_elapsed_ms_since_mark(void);

/*===--- GEMM -------------------------------------------------------------===*/

/** gaccrt_sgemm on device memory, through cuBLAS on the compute stream:
 *  C = alpha * op(A) * op(B) + beta * C, with A, B, C 2-D f32 memrefs in
 *  MLIR's expanded descriptor form whose pointers are device pointers.
 *  op(X) = X^T when transX is non-zero; the sizes passed are those of the
 *  stored X. Row-major (any row stride, unit column stride) and column-major
 *  (unit row stride) layouts are used in place; other positive strides go
 *  through a contiguous device copy; zero or negative strides abort. beta
 *  == 0 ignores C's previous contents (NaN included). Mismatched shapes
 *  abort. Traced as "sgemm MxNxK" (category "accumulate" when beta != 0,
 *  else "gemm") with device times. */
GACCRT_API void gaccrt_cuda_sgemm(
    int32_t transA, int32_t transB, float alpha, float beta, float *aAlloc,
    float *aAligned, int64_t aOffset, int64_t aSize0, int64_t aSize1,
    int64_t aStride0, int64_t aStride1, float *bAlloc, float *bAligned,
    int64_t bOffset, int64_t bSize0, int64_t bSize1, int64_t bStride0,
    int64_t bStride1, float *cAlloc, float *cAligned, int64_t cOffset,
    int64_t cSize0, int64_t cSize1, int64_t cStride0, int64_t cStride1);

/*===--- Collectives ------------------------------------------------------===*/

/** All-reduces `count` elements of type `dtype` (GACCRT_F32 ... GACCRT_I64)
 *  of device memory in place over all ranks: one ncclAllReduce on the
 *  communication stream, which first waits for the compute stream. `kind`
 *  is GACCRT_SUM or GACCRT_AVERAGE (ncclAvg; an error for integers). The
 *  NCCL communicator is created on the first call with more than one rank
 *  (rank 0's ncclGetUniqueId is sent with gaccrt_broadcast). With one rank
 *  the data is untouched and NCCL is not used. Every call is counted in
 *  gaccrt_collectives_issued / gaccrt_bytes_reduced and traced as
 *  "all-reduce bucket <bucket>" (category "collective"; with several ranks
 *  with device times on track 1, "communication"). Returns once the
 *  reduction is enqueued. */
GACCRT_API void gaccrt_cuda_all_reduce(void *device_data, int64_t count,
                                       int32_t dtype, int32_t kind,
                                       int64_t bucket);
/** shard-optimizer-state on the device: gaccrt_reduce_scatter and
 *  gaccrt_all_gather (gaccrt.h) of device buffers, as ncclReduceScatter
 *  (ncclSum or ncclAvg) and ncclAllGather on the communication stream after
 *  the compute stream's work; the compute stream's next work waits for
 *  them. With one rank, a device copy. `count` is one rank's block. */
GACCRT_API void gaccrt_cuda_reduce_scatter(const void *send, void *recv,
                                           int64_t count, int32_t dtype,
                                           int32_t kind, int64_t bucket);
GACCRT_API void gaccrt_cuda_all_gather(const void *send, void *recv,
                                       int64_t count, int32_t dtype,
                                       int64_t bucket);
/** gaccrt_reduce_scatter_start / gaccrt_all_gather_start and their waits
 *  (gaccrt.h) on device buffers: the NCCL call is enqueued on the
 *  communication stream after the compute stream's work so far, and the
 *  compute stream waits for it (on the device) only in the wait; a device
 *  block freed in between is reused only after it. One rank: a device
 *  copy on the compute stream, nothing to wait for. */
GACCRT_API int64_t gaccrt_cuda_reduce_scatter_start(const void *send,
                                                    void *recv, int64_t count,
                                                    int32_t dtype, int32_t kind,
                                                    int64_t bucket);
GACCRT_API int64_t gaccrt_cuda_all_gather_start(const void *send, void *recv,
                                                int64_t count, int32_t dtype,
                                                int64_t bucket);
GACCRT_API void gaccrt_cuda_reduce_scatter_wait(int64_t handle,
                                                const void *send, void *recv);
GACCRT_API void gaccrt_cuda_all_gather_wait(int64_t handle, const void *send,
                                            void *recv);
/** Starts gaccrt_cuda_all_reduce of a bucket and returns a handle (> 0) for
 *  gaccrt_cuda_all_reduce_wait: what code compiled with overlap-all-reduce
 *  calls right after the final micro-batch's last write into the bucket.
 *  The ncclAllReduce is enqueued on the communication stream after an event
 *  recorded on the compute stream (so it starts once the bucket's
 *  gradients are final), followed by an event the wait uses; unlike
 *  gaccrt_cuda_all_reduce, later compute-stream work does not wait for it.
 *  The buffer must not be read or written until the wait. With one rank the
 *  data is untouched but the streams are ordered the same way; with no data
 *  there is nothing to wait for. Counted like gaccrt_cuda_all_reduce; traced
 *  with device times on track 1 ("communication"), args "overlapped": true.
 *  Events are reused: steps after the first create none. */
GACCRT_API int64_t gaccrt_cuda_all_reduce_start(void *device_data,
                                                int64_t count, int32_t dtype,
                                                int32_t kind, int64_t bucket);
/** Makes the compute stream wait (cuStreamWaitEvent: on the device, the host
 *  does not block) until the all-reduce `handle` of
 *  gaccrt_cuda_all_reduce_start on `device_data` is done; the work issued
 *  after it on the compute stream sees the reduced bucket. A handle waited
 *  for before returns at once; an unknown handle or another buffer aborts
 *  with a message. */
GACCRT_API void gaccrt_cuda_all_reduce_wait(int64_t handle, void *device_data);
/** Started all-reduces not waited for yet. */
GACCRT_API int64_t gaccrt_cuda_all_reduces_in_flight(void);

/*===--- The MLIR GPU runtime ABI -----------------------------------------===*/

/* The functions MLIR's gpu-to-llvm lowering (LLVM 22) calls from host code,
 * with the signatures of mlir/lib/ExecutionEngine/CudaRuntimeWrappers.cpp
 * (CUmodule, CUfunction, CUstream and CUevent are opaque pointers here).
 * Unlike upstream, every failure aborts with a message, mgpuStreamCreate
 * returns the compute stream (mgpuStreamDestroy of it does nothing) and a
 * NULL stream means the compute stream, so compiled kernels, cuBLAS GEMMs
 * and gaccrt's copies are ordered on one stream; allocations are accounted. */
GACCRT_API void *mgpuModuleLoad(void *data, size_t gpuBlobSize);
/** `data` is NUL-terminated PTX, compiled by the driver's JIT. */
GACCRT_API void *mgpuModuleLoadJIT(void *data, int optLevel);
GACCRT_API void mgpuModuleUnload(void *module);
GACCRT_API void *mgpuModuleGetFunction(void *module, const char *name);
GACCRT_API void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                                 intptr_t gridZ, intptr_t blockX,
                                 intptr_t blockY, intptr_t blockZ, int32_t smem,
                                 void *stream, void **params, void **extra,
                                 size_t paramsCount);
GACCRT_API void *mgpuStreamCreate(void);
GACCRT_API void mgpuStreamDestroy(void *stream);
GACCRT_API void mgpuStreamSynchronize(void *stream);
GACCRT_API void mgpuStreamWaitEvent(void *stream, void *event);
GACCRT_API void *mgpuEventCreate(void);
GACCRT_API void mgpuEventDestroy(void *event);
GACCRT_API void mgpuEventSynchronize(void *event);
GACCRT_API void mgpuEventRecord(void *event, void *stream);
/** Accounted like gaccrt_cuda_alloc; `isHostShared` allocates managed memory
 *  (cuMemAllocManaged). */
GACCRT_API void *mgpuMemAlloc(uint64_t sizeBytes, void *stream,
                              bool isHostShared);
GACCRT_API void mgpuMemFree(void *ptr, void *stream);
GACCRT_API void mgpuMemcpy(void *dst, void *src, size_t sizeBytes,
                           void *stream);
GACCRT_API void mgpuMemset32(void *dst, unsigned int value, size_t count,
                             void *stream);
GACCRT_API void mgpuMemset16(void *dst, unsigned short value, size_t count,
                             void *stream);
/** Chooses the device of the lazy initialization; an error once the backend
 *  runs on another device. */
GACCRT_API void mgpuSetDefaultDevice(int32_t device);

#ifdef __cplusplus
}
#endif

#endif /* GACCRT_GACCRT_CUDA_H */

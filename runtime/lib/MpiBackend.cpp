//===- MpiBackend.cpp - The MPI collective backend ------------------------===//
//
// The CPU multi-rank backend: MPI (OpenMPI) on a private duplicate of
// MPI_COMM_WORLD whose error handler returns error codes, so every failing
// call is reported here with the call's name and the rank before all ranks
// are aborted with MPI_Abort, instead of hanging or continuing with wrong
// data. MPI is initialized here unless the host program already did, and then
// only finalized here if it was initialized here.
//
//===----------------------------------------------------------------------===//

#include "CollectiveTimeout.h"
#include "Internal.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace gaccrt;

namespace {

/// Elements (or bytes) per MPI call: MPI counts are ints.
constexpr int64_t kMaxMpiCount = int64_t(1) << 30;

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error code " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

MPI_Datatype toMpi(ReduceType type) {
  switch (type) {
  case ReduceType::F32:
    return MPI_FLOAT;
  case ReduceType::F64:
    return MPI_DOUBLE;
  case ReduceType::I32:
    return MPI_INT32_T;
  case ReduceType::I64:
    return MPI_INT64_T;
  }
  return MPI_DATATYPE_NULL;
}

int64_t sizeOf(ReduceType type) {
  return type == ReduceType::F64 || type == ReduceType::I64 ? 8 : 4;
}

class MpiBackend final : public Backend {
public:
  const char *name() const override { return "mpi"; }

  bool init(std::string &error) override {
    int initialized = 0, finalized = 0;
    int rc = MPI_Initialized(&initialized);
    if (rc == MPI_SUCCESS)
      rc = MPI_Finalized(&finalized);
    if (rc != MPI_SUCCESS) {
      error = "MPI_Initialized/MPI_Finalized failed: " + mpiErrorString(rc);
      return false;
    }
    if (finalized) {
      error = "MPI was already finalized (gaccrt_init after gaccrt_finalize?)";
      return false;
    }
    // MPI_THREAD_SERIALIZED: the overlapped all-reduces
    // (gaccrt_all_reduce_start) run on a communication thread, never
    // concurrently with another MPI call of this process.
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      if (rc != MPI_SUCCESS) {
        error = "MPI_Init_thread failed: " + mpiErrorString(rc);
        return false;
      }
      ownsMpi = true;
    } else if (MPI_Query_thread(&provided) != MPI_SUCCESS) {
      provided = MPI_THREAD_SINGLE;
    }
    threadSerialized = provided >= MPI_THREAD_SERIALIZED;
    // Errors on MPI_COMM_WORLD are fatal by default, so the duplicate needs
    // no check of its own; from then on calls on `comm` return their codes.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN),
          "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm, &rankValue), "MPI_Comm_rank");
    check(MPI_Comm_size(comm, &sizeValue), "MPI_Comm_size");
    return true;
  }

  void finalize() override {
    check(MPI_Comm_free(&comm), "MPI_Comm_free");
    if (ownsMpi)
      check(MPI_Finalize(), "MPI_Finalize");
    ownsMpi = false;
  }

  int rank() const override { return rankValue; }
  int worldSize() const override { return sizeValue; }
  bool allowsCommunicationThread() const override { return threadSerialized; }

  void barrier() override {
    stallForTest();
    if (collectiveTimeoutSeconds() <= 0)
      return check(MPI_Barrier(comm), "MPI_Barrier");
    MPI_Request request;
    check(MPI_Ibarrier(comm, &request), "MPI_Ibarrier");
    wait(request, "MPI_Barrier");
  }

  void allReduce(void *data, int64_t count, ReduceType type,
                 ReduceOp op) override {
    MPI_Op mpiOp = op == ReduceOp::Max       ? MPI_MAX
                   : op == ReduceOp::Min     ? MPI_MIN
                   : op == ReduceOp::Product ? MPI_PROD
                                             : MPI_SUM;
    stallForTest();
    char *bytes = static_cast<char *>(data);
    for (int64_t begin = 0; begin < count; begin += kMaxMpiCount) {
      int n = static_cast<int>(std::min(kMaxMpiCount, count - begin));
      if (collectiveTimeoutSeconds() <= 0) {
        check(MPI_Allreduce(MPI_IN_PLACE, bytes + begin * sizeOf(type), n,
                            toMpi(type), mpiOp, comm),
              "MPI_Allreduce");
        continue;
      }
      MPI_Request request;
      check(MPI_Iallreduce(MPI_IN_PLACE, bytes + begin * sizeOf(type), n,
                           toMpi(type), mpiOp, comm, &request),
            "MPI_Iallreduce");
      wait(request, "MPI_Allreduce");
    }
  }

  void broadcast(void *data, int64_t bytes, int root) override {
    stallForTest();
    char *base = static_cast<char *>(data);
    for (int64_t begin = 0; begin < bytes; begin += kMaxMpiCount) {
      int n = static_cast<int>(std::min(kMaxMpiCount, bytes - begin));
      if (collectiveTimeoutSeconds() <= 0) {
        check(MPI_Bcast(base + begin, n, MPI_BYTE, root, comm), "MPI_Bcast");
        continue;
      }
      MPI_Request request;
      check(MPI_Ibcast(base + begin, n, MPI_BYTE, root, comm, &request),
            "MPI_Ibcast");
      wait(request, "MPI_Bcast");
    }
  }

  void reduceScatter(const void *send, void *recv, int64_t count,
                     ReduceType type, ReduceOp op) override {
    MPI_Op mpiOp = op == ReduceOp::Max       ? MPI_MAX
                   : op == ReduceOp::Min     ? MPI_MIN
                   : op == ReduceOp::Product ? MPI_PROD
                                             : MPI_SUM;
    if (count > kMaxMpiCount) {
      printError("MPI_Reduce_scatter_block of " + std::to_string(count) +
                 " elements per rank: more than MPI's int count allows");
      abortAll();
    }
    stallForTest();
    int n = static_cast<int>(count);
    if (collectiveTimeoutSeconds() <= 0)
      return check(MPI_Reduce_scatter_block(send, recv, n, toMpi(type), mpiOp,
                                            comm),
                   "MPI_Reduce_scatter_block");
    MPI_Request request;
    check(MPI_Ireduce_scatter_block(send, recv, n, toMpi(type), mpiOp, comm,
                                    &request),
          "MPI_Ireduce_scatter_block");
    wait(request, "MPI_Reduce_scatter_block");
  }

  void allGather(const void *send, void *recv, int64_t bytes) override {
    if (bytes > kMaxMpiCount) {
      printError("MPI_Allgather of " + std::to_string(bytes) +
                 " bytes per rank: more than MPI's int count allows");
      abortAll();
    }
    stallForTest();
    int n = static_cast<int>(bytes);
    if (collectiveTimeoutSeconds() <= 0)
      return check(
          MPI_Allgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm),
          "MPI_Allgather");
    MPI_Request request;
    check(MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, comm, &request),
          "MPI_Iallgather");
    wait(request, "MPI_Allgather");
  }

  [[noreturn]] void abortAll() override {
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::abort(); // MPI_Abort does not return; this is for the compiler
  }

private:
  /// Polls a nonblocking collective until it completes or the collective
  /// timeout passes; then names the call and the ranks that did not join
  /// and aborts every rank (a stopped rank would otherwise leave the others
  /// waiting forever).
  void wait(MPI_Request &request, const char *call) {
    ++collectiveNumber;
    double timeout = collectiveTimeoutSeconds();
    PollOutcome outcome = pollWithDeadline(
        [&] {
          int done = 0;
          check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
          return done != 0;
        },
        timeout);
    if (outcome == PollOutcome::Done)
      return;
    printError(collectiveTimeoutMessage(
        call, collectiveNumber, "", rankValue, sizeValue, timeout,
        "--collective-timeout", "aborting all ranks"));
    abortAll();
  }

  /// Test only: GACCRT_TEST_STALL_RANK=r makes rank r stop answering (sleep)
  /// at its first collective, as a hung rank would.
  void stallForTest() {
    static const char *stall = std::getenv("GACCRT_TEST_STALL_RANK");
    if (stall && std::atoi(stall) == rankValue)
      std::this_thread::sleep_for(std::chrono::seconds(3600));
  }

  /// Turns a failed MPI call into a message naming it, then aborts all ranks.
  /// (Not through `fatal`: this also works during init and finalize.)
  void check(int rc, const char *call) {
    if (rc == MPI_SUCCESS)
      return;
    printError(std::string(call) + " failed on rank " +
               std::to_string(rankValue) + ": " + mpiErrorString(rc));
    abortAll();
  }

  MPI_Comm comm = MPI_COMM_NULL;
  int rankValue = 0;
  int sizeValue = 1;
  bool ownsMpi = false;
  bool threadSerialized = false;
  int64_t collectiveNumber = 0;
};

} // namespace

std::unique_ptr<Backend> gaccrt::createMpiBackend() {
  return std::make_unique<MpiBackend>();
}

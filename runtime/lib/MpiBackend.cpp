//===- MpiBackend.cpp - The MPI collective backend ------------------------===//
//
// The CPU multi-rank backend: MPI (OpenMPI) on a private duplicate of
// MPI_COMM_WORLD whose error handler returns error codes, so every failing
// call is reported here with the call's name and the rank before all ranks
// are aborted with MPI_Abort, instead of hanging or continuing with wrong
// data. MPI is initialized here unless the host program already did, and then
// only finalized here if it was initialized here.
//
// A rank that dies (crashes, is killed) ends the job: mpirun then stops the
// other ranks with SIGTERM. So that a survivor says where it was, the backend
// handles SIGTERM on several ranks (when nobody else handles it): the
// handler names the collective the rank was waiting in, or that it was
// outside one, and exits with status 1 instead of dying of the signal.
//
//===----------------------------------------------------------------------===//

#include "CollectiveTimeout.h"
#include "Internal.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>

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

//===----------------------------------------------------------------------===//
// Where a rank is, for the SIGTERM handler (async-signal-safe reads only)
//===----------------------------------------------------------------------===//

/// The MPI call a thread of this rank waits in (a string literal), or null.
std::atomic<const char *> currentCollective{nullptr};
/// The number of collectives this rank started.
std::atomic<long long> collectivesStarted{0};
/// This rank, for the handler.
std::atomic<int> handlerRank{0};
/// Whether the handler is installed (and must be removed at finalize).
bool handlerInstalled = false;
struct sigaction previousTermAction;

/// Appends `text` to `buffer` (of `capacity`) at `length`.
void append(char *buffer, size_t capacity, size_t &length, const char *text) {
  for (; *text && length + 1 < capacity; ++text)
    buffer[length++] = *text;
}

void appendNumber(char *buffer, size_t capacity, size_t &length,
                  long long value) {
  char digits[24];
  int n = 0;
  unsigned long long v =
      value < 0 ? 0ULL - static_cast<unsigned long long>(value) : value;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && n < 23);
  if (value < 0)
    append(buffer, capacity, length, "-");
  while (n > 0 && length + 1 < capacity)
    buffer[length++] = digits[--n];
}

/// SIGTERM on a rank of several: mpirun stopping this rank, most often
/// because another one ended. Says where this rank was and exits with 1.
void onTerminate(int) {
  char line[512];
  size_t length = 0;
  const size_t capacity = sizeof(line);
  append(line, capacity, length, "gaccrt: error: rank ");
  appendNumber(line, capacity, length, handlerRank.load());
  append(line, capacity, length, " was terminated (SIGTERM) ");
  const char *call = currentCollective.load();
  long long number = collectivesStarted.load();
  if (call) {
    append(line, capacity, length, "while it waited in ");
    append(line, capacity, length, call);
    append(line, capacity, length, " (collective #");
    appendNumber(line, capacity, length, number);
    append(line, capacity, length, " of this rank)");
  } else {
    append(line, capacity, length, "outside a collective (after ");
    appendNumber(line, capacity, length, number);
    append(line, capacity, length, " collectives)");
  }
  append(line, capacity, length,
         ": another rank ended (crashed or was killed) and mpirun stopped "
         "this one, or the job was stopped\n");
  ssize_t ignored = ::write(STDERR_FILENO, line, length);
  (void)ignored;
  ::_exit(1);
}

/// Marks the collective `call` this rank waits in, for the handler.
class CollectiveScope {
public:
  explicit CollectiveScope(const char *call) {
    collectivesStarted.fetch_add(1);
    currentCollective.store(call);
  }
  ~CollectiveScope() { currentCollective.store(nullptr); }
  CollectiveScope(const CollectiveScope &) = delete;
  CollectiveScope &operator=(const CollectiveScope &) = delete;
};

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
    if (sizeValue > 1)
      installTerminateHandler();
    return true;
  }

  void finalize() override {
    if (handlerInstalled) {
      ::sigaction(SIGTERM, &previousTermAction, nullptr);
      handlerInstalled = false;
    }
    check(MPI_Comm_free(&comm), "MPI_Comm_free");
    if (ownsMpi)
      check(MPI_Finalize(), "MPI_Finalize");
    ownsMpi = false;
  }

  int rank() const override { return rankValue; }
  int worldSize() const override { return sizeValue; }
  bool allowsCommunicationThread() const override { return threadSerialized; }

  void barrier() override {
    CollectiveScope scope("MPI_Barrier");
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
    CollectiveScope scope("MPI_Allreduce");
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
    CollectiveScope scope("MPI_Bcast");
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
        call, collectivesStarted.load(), "", rankValue, sizeValue, timeout,
        gaccrt_collective_timeout() > 0 ? "--collective-timeout"
                                        : "GACCRT_COLLECTIVE_TIMEOUT_S",
        "aborting all ranks"));
    abortAll();
  }

  /// Test only: GACCRT_TEST_STALL_RANK=r makes rank r stop answering (sleep)
  /// at its first collective, as a hung rank would. GACCRT_TEST_KILL_RANK=r
  /// makes rank r stop answering at its second collective (so that the
  /// others have joined one with it and wait in the next) and kill itself
  /// (SIGKILL) a second later, as a crashed or killed rank would.
  void stallForTest() {
    static const char *stall = std::getenv("GACCRT_TEST_STALL_RANK");
    if (stall && std::atoi(stall) == rankValue)
      std::this_thread::sleep_for(std::chrono::seconds(3600));
    static const char *kill = std::getenv("GACCRT_TEST_KILL_RANK");
    if (kill && std::atoi(kill) == rankValue &&
        collectivesStarted.load() == 2) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      std::raise(SIGKILL);
    }
  }

  /// Handles SIGTERM with onTerminate unless the program handles (or
  /// ignores) it itself.
  void installTerminateHandler() {
    struct sigaction current;
    if (::sigaction(SIGTERM, nullptr, &current) != 0 ||
        current.sa_handler != SIG_DFL || (current.sa_flags & SA_SIGINFO))
      return;
    handlerRank.store(rankValue);
    struct sigaction action;
    std::memset(&action, 0, sizeof(action));
    action.sa_handler = onTerminate;
    sigemptyset(&action.sa_mask);
    if (::sigaction(SIGTERM, &action, &previousTermAction) == 0)
      handlerInstalled = true;
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
};

} // namespace

std::unique_ptr<Backend> gaccrt::createMpiBackend() {
  return std::make_unique<MpiBackend>();
}

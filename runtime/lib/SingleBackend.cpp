//===- SingleBackend.cpp - The one-rank collective backend ----------------===//
//
// The backend used when the program is not launched by mpirun: one rank, no
// MPI calls at all. Every collective over one rank is the identity, so the
// data is left untouched (the front still counts and traces the calls).
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cstdlib>
#include <cstring>

using namespace gaccrt;

namespace {

class SingleBackend final : public Backend {
public:
  const char *name() const override { return "single"; }
  bool init(std::string &error) override { return true; }
  void finalize() override {}
  int rank() const override { return 0; }
  int worldSize() const override { return 1; }
  void barrier() override {}
  void allReduce(void *data, int64_t count, ReduceType type,
                 ReduceOp op) override {}
  void broadcast(void *data, int64_t bytes, int root) override {}
  void reduceScatter(const void *send, void *recv, int64_t count,
                     ReduceType type, ReduceOp op) override {
    std::memmove(recv, send,
                 count * (type == ReduceType::F64 || type == ReduceType::I64 ? 8 : 4));
  }
  void allGather(const void *send, void *recv, int64_t bytes) override {
    std::memmove(recv, send, bytes);
  }
  [[noreturn]] void abortAll() override { std::abort(); }
};

} // namespace

std::unique_ptr<Backend> gaccrt::createSingleBackend() {
  return std::make_unique<SingleBackend>();
}

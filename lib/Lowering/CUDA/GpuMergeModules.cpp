//===- GpuMergeModules.cpp - one GPU module per step ----------------------===//
//
// The gacc-gpu-merge-modules pass of the CUDA lowering, after kernel
// outlining (which makes one gpu.module per kernel): every kernel moves into
// the first module under its old module's (unique) name and the launches
// follow, so a step loads one module, compiled to PTX once, instead of one
// per kernel. A kernel equal to one already there (the same signature,
// attributes and body: every layer of one width has the same bias + ReLU
// kernel) is not moved; its launches use the one there, so the PTX does
// not grow with repeated layers.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Passes.h"
#include "gacc/Support/VerifyPassResult.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "gacc-gpu-merge-modules"

namespace mlir::gacc {
#define GEN_PASS_DEF_GPUMERGEMODULESPASS
#include "gacc/Lowering/Passes.h.inc"
} // namespace mlir::gacc

using namespace mlir;
using namespace mlir::gacc;

namespace {
/// The kernel's text without its name: equal for kernels with the same
/// signature, attributes and body (locations are not printed).
static std::string getKernelKey(gpu::GPUFuncOp kernel) {
  std::string text;
  llvm::raw_string_ostream os(text);
  kernel->print(os, OpPrintingFlags().useLocalScope());
  std::string name = ("@" + kernel.getName() + "(").str();
  size_t at = text.find(name);
  if (at != std::string::npos)
    text.replace(at, name.size() - 1, "@");
  return text;
}

struct GpuMergeModulesPass
    : public gacc::impl::GpuMergeModulesPassBase<GpuMergeModulesPass> {
  void runOnOperation() override {
    GACC_VERIFY_PASS_RESULT();
    ModuleOp module = getOperation();
    SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
    if (gpuModules.size() < 2)
      return;
    gpu::GPUModuleOp target = gpuModules.front();
    // Modules that hold anything but kernels (or carry targets already)
    // stay as they are.
    auto mergeable = [](gpu::GPUModuleOp gpuModule) {
      return !gpuModule.getTargetsAttr() &&
             llvm::all_of(
                 gpuModule.getBody()->getOperations(),
                 [](Operation &op) { return isa<gpu::GPUFuncOp>(op); });
    };
    if (!mergeable(target))
      return;
    SymbolTable targetSymbols(target);
    // The kernels in the target by their key.
    llvm::StringMap<StringAttr> kernels;
    for (gpu::GPUFuncOp kernel : target.getOps<gpu::GPUFuncOp>())
      kernels.try_emplace(getKernelKey(kernel), kernel.getNameAttr());
    // Old kernel reference -> new one.
    DenseMap<SymbolRefAttr, SymbolRefAttr> renamed;
    for (gpu::GPUModuleOp source : llvm::drop_begin(gpuModules)) {
      if (!mergeable(source))
        continue;
      for (gpu::GPUFuncOp kernel :
           llvm::make_early_inc_range(source.getOps<gpu::GPUFuncOp>())) {
        auto oldRef =
            SymbolRefAttr::get(source.getSymNameAttr(),
                               {FlatSymbolRefAttr::get(kernel.getNameAttr())});
        std::string key = getKernelKey(kernel);
        auto known = kernels.find(key);
        if (known != kernels.end()) {
          renamed[oldRef] = SymbolRefAttr::get(
              target.getSymNameAttr(), {FlatSymbolRefAttr::get(known->second)});
          continue;
        }
        kernel->moveBefore(target.getBody(), target.getBody()->end());
        // Unique within the target: the source module's name, else a
        // suffixed one.
        kernel.setName(source.getSymName());
        StringAttr name = targetSymbols.insert(kernel);
        kernels.try_emplace(key, name);
        renamed[oldRef] = SymbolRefAttr::get(target.getSymNameAttr(),
                                             {FlatSymbolRefAttr::get(name)});
      }
      source.erase();
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto found = renamed.find(launch.getKernelAttr());
      if (found != renamed.end())
        launch.setKernelAttr(found->second);
    });
  }
};
} // namespace

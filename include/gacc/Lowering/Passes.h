//===- Passes.h - every gacc lowering pass ----------------------*- C++ -*-===//
//
// The lowering passes of all targets, for the pipelines and for embedders:
// those both pipelines run (gacc/Lowering/Common/Passes.h, library
// GaccLoweringCommon), those of the CPU (gacc/Lowering/CPU/Passes.h,
// GaccLoweringCPU) and those of CUDA (gacc/Lowering/CUDA/Passes.h,
// GaccLoweringCUDA), and the lowering's external models
// (gacc/Lowering/Common/ExternalModels.h); Gacc::GaccConversion links the
// three libraries. The pipelines
// built from them (gacc-lower-to-cpu, gacc-lower-to-cuda) are in
// gacc/Pipelines/Pipelines.h.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_PASSES_H
#define GACC_LOWERING_PASSES_H

#include "gacc/Lowering/CPU/Passes.h"
#include "gacc/Lowering/CUDA/Passes.h"
#include "gacc/Lowering/Common/ExternalModels.h"
#include "gacc/Lowering/Common/Passes.h"

namespace mlir::gacc {

/// Registers every lowering pass (Common, CPU and CUDA) with the global pass
/// registry; what mlirRegisterGaccConversionPasses of the C API calls.
inline void registerGaccConversionPasses() {
  registerGaccLoweringCommonPasses();
  registerGaccLoweringCPUPasses();
  registerGaccLoweringCUDAPasses();
}

} // namespace mlir::gacc

#endif // GACC_LOWERING_PASSES_H

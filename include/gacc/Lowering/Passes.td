//===- Passes.td - every gacc lowering pass ----------------*- tablegen -*-===//
//
// The lowering passes of all targets, for the C API only: its generated
// functions keep the prefix they had when one file declared them all
// (mlirRegisterGaccConversionPasses, mlirCreateGaccConversion<Pass>). Each
// pass is declared in the Passes.td of the target it serves: Common (both
// pipelines), CPU or CUDA.
//
//===----------------------------------------------------------------------===//

#ifndef GACC_LOWERING_PASSES_TD
#define GACC_LOWERING_PASSES_TD

include "gacc/Lowering/Common/Passes.td"
include "gacc/Lowering/CPU/Passes.td"
include "gacc/Lowering/CUDA/Passes.td"

#endif // GACC_LOWERING_PASSES_TD

//===- ExternalModels.cpp - the lowering's external models ------*- C++ -*-===//
//
// Implements registerGaccLoweringExternalModels (ExternalModels.h); the
// models themselves are in AllReduceBufferization.cpp and
// ForBufferizationQueries.cpp.
//
//===----------------------------------------------------------------------===//

#include "gacc/Lowering/Common/ExternalModels.h"

void mlir::gacc::registerGaccLoweringExternalModels(DialectRegistry &registry) {
  registerBufferizableOpInterfaceExternalModels(registry);
  registerLinearForBufferizationQueries(registry);
}

// A gacc pass that leaves invalid IR is reported as a gacc internal error at
// the failing op's location, with the verifier's message as a note, instead
// of a raw upstream verifier message (issue 11). gacc-test-break-ir is a
// test-only pass that drops the operands of func.return.
// RUN: gacc-opt %s --gacc-test-break-ir --verify-diagnostics

func.func @step(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @below {{internal error: pass 'gacc-test-break-ir' produced invalid IR; please report it as a gacc bug with the input and the command line}}
  // expected-note @below {{the IR verifier said: 'func.return' op has 0 operands, but enclosing function (@step) returns 1}}
  return %x : tensor<4xf32>
}

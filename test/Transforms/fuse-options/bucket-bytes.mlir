// RUN: gacc-opt %s --gacc-sink-all-reduce="bucket-bytes=0" --verify-diagnostics
// expected-error @below {{expected a positive bucket-bytes, got 0}}
module {
}

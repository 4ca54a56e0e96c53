// RUN: gacc-opt %s --gacc-fuse-accumulation="accumulate-type=f64x" --verify-diagnostics
// expected-error @below {{unsupported accumulate-type 'f64x'; expected f32 or nothing}}
module {
}

/*===- HeaderC.c - gaccrt.h compiles as C and links from C ----------------===*\
 *
 * Compiled as C to keep the public headers C-compatible; CollectiveTest
 * calls it.
 *
\*===----------------------------------------------------------------------===*/

#include "gaccrt/gaccrt.h"
#include "gaccrt/half.h"

int gaccrtTestCallFromC(void) {
  float data[2] = {1.0f, 2.0f};
  if (gaccrt_init() != 0)
    return 1;
  gaccrt_all_reduce(data, 2, GACCRT_F32, GACCRT_SUM, 0);
  if (data[0] != 1.0f || data[1] != 2.0f)
    return 2;
  if (gaccrt_f32_to_bf16(1.0f) != 0x3f80u)
    return 3;
  return gaccrt_world_size() == 1 ? 0 : 4;
}

"""Writes the inputs of test/Check/evaluator-semantics.test: OUT/<set>/arg<i>.npy
(values as float hex, so that -0.0 and NaN are exact)."""
import os
import sys

import numpy as np

out = sys.argv[1]

def save(d, i, dtype, shape, values):
    os.makedirs(os.path.join(out, d), exist_ok=True)
    v = [float.fromhex(x) if isinstance(x, str) else x for x in values]
    np.save(os.path.join(out, d, "arg%d.npy" % i), np.array(v, dtype=dtype).reshape(shape))

save('round', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('round', 1, 'float32', (4,), ['-0x1.3333340000000p-2', '0x1.3333340000000p-2', '-0x1.4000000000000p+1', '0x1.4000000000000p+1'])
save('z', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('z', 1, 'float32', (4,), ['-0x0.0p+0', '0x0.0p+0', '-0x0.0p+0', '0x0.0p+0'])
save('z', 2, 'float32', (4,), ['0x0.0p+0', '-0x0.0p+0', '0x0.0p+0', '-0x0.0p+0'])
save('div', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('div', 1, 'int32', (4,), [7, -7, 7, -2147483648])
save('div', 2, 'int32', (4,), [-2, 2, 2, 3])
save('fp', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('fp', 1, 'float32', (4,), ['0x1.158e460000000p+63', '0x1.65a0bc0000000p+31', '0x1.9166660000000p+7', '0x1.02207a0000000p+63'])
save('cbrt', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('cbrt', 1, 'float32', (4,), ['-0x0.0p+0', '0x1.b000000000000p+4', '-0x1.0000000000000p+3', '0x1.4484c00000000p-100'])
save('mnr', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('mnr', 1, 'float32', (4, 2), ['nan', 'nan', '0x1.0000000000000p+0', 'nan', 'nan', '0x1.0000000000000p+1', '0x1.8000000000000p+1', '0x1.0000000000000p+2'])
save('b', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('b', 1, 'float32', (4,), ['0x0.0p+0', '0x1.0000000000000p+1', '0x1.0000000000000p+0', '0x1.0000000000000p+0'])
save('b', 2, 'float32', (4,), ['0x1.0000000000000p+0', '0x1.0000000000000p+0', '0x1.0000000000000p+0', '0x1.0000000000000p+0'])
save('zr', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('zr', 1, 'float32', (4, 2), ['-0x0.0p+0', '0x0.0p+0', '0x0.0p+0', '-0x0.0p+0', '-0x0.0p+0', '-0x0.0p+0', '-0x0.0p+0', '0x0.0p+0'])
save('bits', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('bits', 1, 'int32', (4,), [0, 1, -1, 240])
save('bits', 2, 'int8', (4,), [0, 1, -128, 6])
save('ovf', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('ovf', 1, 'int32', (4,), [7, -2147483648, 3, -5])
save('ext', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('ext', 1, 'int32', (4,), [-1, 65536, 7, -2147483648])
save('ext', 2, 'int32', (4,), [-1, 65536, -3, 2])
save('mops', 0, 'float32', (), ['0x1.0000000000000p-1'])
save('mops', 1, 'float32', (4,), ['-inf', '0x1.8000000000000p+0', '0x1.0000000000000p-130', '0x1.4000000000000p+2'])
save('mops', 2, 'int32', (4,), [1, -1, 3, -2])

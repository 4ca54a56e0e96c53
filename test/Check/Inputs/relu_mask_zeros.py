# Inputs of examples/mlp.mlir whose first-layer pre-activations include -0.0
# and +0.0 (relu-mask-zeros.test).
import sys

import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(7)
w1 = rng.standard_normal((4, 8)).astype(np.float32)
w1[:, :4] = np.abs(w1[:, :4]) + 0.1
b1 = np.array([-0.0, 0.0, -0.0, 0.0, -0.0, 0.3, -0.3, 0.0], np.float32)
x = rng.standard_normal((8, 4)).astype(np.float32)
x[0:2] = -0.0
x[2:4] = 0.0
args = [w1, b1,
        rng.standard_normal((8, 3)).astype(np.float32),
        rng.standard_normal(3).astype(np.float32),
        x,
        np.array([0, 1, 2, 0, 1, 2, 0, 1], np.int64),
        np.array(0.1, np.float32)]
for i, a in enumerate(args):
    np.save(f"{out}/arg{i}.npy", a)

"""Compiles and runs a one-layer regression step; prints where gacc-compile
came from and whether the loss matches PyTorch's."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import gacc.torch
from gacc import _config

torch.manual_seed(0)
m = nn.Linear(3, 2)
x, y = torch.randn(4, 3), torch.randn(4, 2)
want = float(F.mse_loss(m(x), y))
step = gacc.torch.compile(m, lambda m, x, y: F.mse_loss(m(x), y), (x, y),
                          micro_batches=2)
got = float(step(x, y))
print("gacc %s: loss %s PyTorch" % (_config.tool("gacc-compile"),
                                    "matches" if abs(got - want) <= 1e-6 *
                                    abs(want) else "DIFFERS from"))

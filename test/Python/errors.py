"""Prints the error gacc.torch gives for a model it cannot take."""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import gacc.torch  # noqa: E402
from gacc.torch import UnsupportedError  # noqa: E402


class Cumulative(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.cumsum(self.lin(x), dim=1)


def case(name):
    if name == "batchnorm":
        m, lf, batch, opt = models.batchnorm(True)
        return lambda: gacc.torch.compile(m, lf, batch, micro_batches=2)
    if name == "cumsum":
        m = Cumulative()
        x = torch.randn(4, 4)
        return lambda: gacc.torch.export_step(
            m, lambda m, x: m(x).sum(), (x, ))
    if name == "optimizer":
        m = nn.Linear(3, 1)
        opt = torch.optim.RMSprop(m.parameters())
        x = torch.randn(4, 3)
        return lambda: gacc.torch.export_step(
            m, lambda m, x: m(x).sum(), (x, ), optimizer=opt)
    if name == "inplace_view":
        class ViewUpdate(nn.Module):
            def __init__(self):
                super().__init__()
                self.lin = nn.Linear(4, 4)

            def forward(self, x):
                y = self.lin(x) * 2.0
                v = y.view(-1)
                y.add_(1.0)  # v must see it too
                return v

        m = ViewUpdate()
        return lambda: gacc.torch.export_step(
            m, lambda m, x: m(x).sum(), (torch.randn(3, 4), ))
    if name == "batch":
        m = nn.Linear(3, 1)
        return lambda: gacc.torch.export_step(
            m, lambda m, x, y: F.mse_loss(m(x), y),
            (torch.randn(4, 3), torch.randn(5, 1)))
    raise SystemExit("unknown case " + name)


for name in sys.argv[1:]:
    try:
        case(name)()
        print("%s: no error" % name)
    except UnsupportedError as err:
        print("%s: UnsupportedError: %s" % (name, err))

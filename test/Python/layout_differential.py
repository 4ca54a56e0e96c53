"""Differential test of gacc.torch's views: random chains of transposes,
reshapes, unsqueezes, broadcasts and matmuls over a batch tensor (the
sample dimension moved into any position, merged with others), compiled at
random splits and compared with PyTorch's float64 gradients. A chain that
gacc.torch cannot export must fail with UnsupportedError, never with a
wrong number.

  layout_differential.py --seed S --count N
"""

import argparse
import copy
import os
import random
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import gacc.torch  # noqa: E402
from gacc.torch import UnsupportedError  # noqa: E402


def divisors(n):
    return [d for d in range(2, n) if n % d == 0]


class Chain(nn.Module):
    def __init__(self, rng, shape):
        super().__init__()
        self.rng_state = rng.getstate()
        self.p = nn.Parameter(torch.randn(*shape[1:]) * 0.5)
        self.ops = []
        shape = list(shape)
        for _ in range(rng.randint(2, 6)):
            kind = rng.choice(["transpose", "merge", "split", "unsqueeze",
                               "mm", "bcast", "sum"])
            r = len(shape)
            if kind == "transpose" and r >= 2:
                i, j = rng.sample(range(r), 2)
                self.ops.append(("transpose", i, j))
                shape[i], shape[j] = shape[j], shape[i]
            elif kind == "merge" and r >= 2:
                i = rng.randrange(r - 1)
                self.ops.append(("merge", i))
                shape[i:i + 2] = [shape[i] * shape[i + 1]]
            elif kind == "split":
                cands = [i for i in range(r) if divisors(shape[i])]
                if not cands:
                    continue
                i = rng.choice(cands)
                d = rng.choice(divisors(shape[i]))
                self.ops.append(("split", i, d))
                shape[i:i + 1] = [d, shape[i] // d]
            elif kind == "unsqueeze" and r < 5:
                i = rng.randint(0, r)
                self.ops.append(("unsqueeze", i))
                shape.insert(i, 1)
            elif kind == "mm":
                n = rng.randint(2, 5)
                w = nn.Parameter(torch.randn(shape[-1], n) * 0.5)
                self.register_parameter("w%d" % len(self.ops), w)
                self.ops.append(("mm", "w%d" % len(self.ops)))
                shape[-1] = n
            elif kind == "bcast":
                i = rng.randrange(r)
                bshape = [1] * r
                bshape[i] = shape[i]
                b = nn.Parameter(torch.randn(*bshape))
                self.register_parameter("b%d" % len(self.ops), b)
                self.ops.append(("bcast", "b%d" % len(self.ops)))
            elif kind == "sum" and r >= 2:
                i = rng.randrange(r)
                self.ops.append(("sum", i))
                shape[i:i + 1] = [1]
        self.out_shape = shape
        # the loss weights the output with this fixed tensor: a sum over the
        # samples wherever the sample dimension went
        self.register_buffer("t", torch.randn(*shape))

    def forward(self, x):
        h = torch.tanh(x * self.p)
        for op in self.ops:
            if op[0] == "transpose":
                h = h.transpose(op[1], op[2])
            elif op[0] == "merge":
                s = list(h.shape)
                h = h.reshape(s[:op[1]] + [s[op[1]] * s[op[1] + 1]] +
                              s[op[1] + 2:])
            elif op[0] == "split":
                s = list(h.shape)
                h = h.reshape(s[:op[1]] + [op[2], s[op[1]] // op[2]] +
                              s[op[1] + 1:])
            elif op[0] == "unsqueeze":
                h = h.unsqueeze(op[1])
            elif op[0] == "mm":
                h = h @ getattr(self, op[1])
            elif op[0] == "bcast":
                h = h * getattr(self, op[1])
            elif op[0] == "sum":
                h = h.sum(op[1], keepdim=True)
        return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=20)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    passed = refused = failed = 0
    for i in range(args.count):
        B = rng.choice([4, 6])
        shape = [B] + [rng.choice([1, 2, 3, 4, 6]) for _ in range(
            rng.randint(1, 3))]
        model = Chain(rng, shape)
        x = torch.randn(*shape)
        loss_fn = lambda m, x: (m(x) * m.t).sum() / 5.0  # noqa: E731
        m_count = rng.choice([1, 2, 3])
        desc = " ".join(str(o) for o in model.ops)
        ref = copy.deepcopy(model).double()
        try:
            step = gacc.torch.compile(model, loss_fn, (x, ),
                                      micro_batches=m_count)
        except UnsupportedError as err:
            refused += 1
            lines = [l for l in str(err).splitlines() if "error" in l]
            print("REFUSED case %d (%s %s): %s" % (i, shape, desc,
                                                   (lines or [str(err)])[0]))
            continue
        loss = step(x)
        ref_loss = loss_fn(ref, *compare.to64((x, )))
        ref_loss.backward()
        e = compare.rel_err([p.grad for p in model.parameters()],
                            [p.grad for p in ref.parameters()])
        el = abs(float(loss) - float(ref_loss)) / max(abs(float(ref_loss)),
                                                      1e-30)
        ok = e <= compare.TOL and el <= compare.TOL
        passed += ok
        failed += not ok
        print("%s case %d (x %s m=%d: %s): loss rel %.1e, grads rel %.1e" %
              ("PASS" if ok else "FAIL", i, shape, m_count, desc, el, e))
    print("layout differential: %d passed, %d refused, %d failed" %
          (passed, refused, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

"""Differential test of gacc.torch: random small models built from the
supported layers, random losses, optimizers and splits, each compiled and
run against PyTorch's float64 full-batch step.

  differential.py --seed S --count N
"""

import argparse
import copy
import os
import random
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare  # noqa: E402
import gacc.torch  # noqa: E402

ACTS = [nn.ReLU, nn.SiLU, nn.Tanh, nn.Sigmoid, lambda: nn.GELU("tanh"),
        nn.GELU, lambda: nn.Hardtanh(-0.5, 0.5)]


def random_case(rng, B):
    width = rng.randint(3, 12)
    n_in, n_out = width, rng.randint(2, 6)
    layers, d = [], n_in
    for _ in range(rng.randint(1, 4)):
        w = rng.randint(3, 12)
        layers.append(nn.Linear(d, w, bias=rng.random() < 0.7))
        if rng.random() < 0.3:
            layers.append(nn.LayerNorm(w, elementwise_affine=rng.random()
                                       < 0.7))
        layers.append(rng.choice(ACTS)())
        d = w
    layers.append(nn.Linear(d, n_out))
    model = nn.Sequential(*layers)
    x = torch.randn(B, n_in)
    loss = rng.choice(["ce", "mse", "sum", "ce_ignore"])
    if loss.startswith("ce"):
        y = torch.randint(0, n_out, (B, ))
        if loss == "ce_ignore":
            y[rng.randrange(B)] = -100
        fn = lambda m, x, y: F.cross_entropy(m(x), y)  # noqa: E731
    elif loss == "mse":
        y = torch.randn(B, n_out)
        fn = lambda m, x, y: F.mse_loss(m(x), y)  # noqa: E731
    else:
        y = torch.randn(B, n_out)
        fn = lambda m, x, y: (m(x) * y).sum() / 7.0  # noqa: E731
    kind = rng.choice(["none", "sgd", "adam", "adamw"])
    opt = None
    if kind == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=0.05,
                              momentum=rng.choice([0.0, 0.9]),
                              nesterov=False,
                              weight_decay=rng.choice([0.0, 0.01]))
    elif kind == "adam":
        opt = torch.optim.Adam(model.parameters(), lr=0.01,
                               amsgrad=rng.random() < 0.3,
                               weight_decay=rng.choice([0.0, 0.01]))
    elif kind == "adamw":
        opt = torch.optim.AdamW(model.parameters(), lr=0.01)
    desc = "%s loss=%s opt=%s" % (
        "-".join(type(l).__name__ for l in layers), loss, kind)
    return model, fn, (x, y), opt, desc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=10)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    torch.manual_seed(args.seed)
    passed = failed = 0
    for i in range(args.count):
        B = rng.choice([4, 6, 8])
        model, fn, batch, opt, desc = random_case(rng, B)
        m = rng.choice([1, 2, 3, 4])
        ref = copy.deepcopy(model).double()
        step = gacc.torch.compile(model, fn, batch, micro_batches=m,
                                  optimizer=opt)
        loss = step(*batch)
        ref_loss = fn(ref, *compare.to64(batch))
        ref_loss.backward()
        if opt is not None:
            compare.reference_optimizer(opt, ref).step()
            got = [p.data for p in model.parameters()]
            want = [p.data for p in ref.parameters()]
            grads = [p.grad for p in ref.parameters()]
        else:
            got = [p.grad for p in model.parameters()]
            want = [p.grad for p in ref.parameters()]
            grads = None
        e = compare.rel_err(got, want, grads)
        el = abs(float(loss) - float(ref_loss)) / max(abs(float(ref_loss)),
                                                      1e-30)
        ok = e <= compare.TOL and el <= compare.TOL
        passed += ok
        failed += not ok
        print("%s case %d (B=%d m=%d %s): loss rel %.1e, results rel %.1e" %
              ("PASS" if ok else "FAIL", i, B, m, desc, el, e))
    print("differential: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

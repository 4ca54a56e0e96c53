#!/usr/bin/python3
"""gacc.torch.compile's training steps against PyTorch eager gradient
accumulation, in the same process with the same thread count.

    PYTHONPATH=build/python /usr/bin/python3 bench/torch_steps.py [--threads N] [--models mlp,gpt] [--m 1,2,4,8]

Models: an MLP (4 hidden layers of 512, ReLU, cross-entropy, B = 256, SGD
with momentum) and a small GPT (vocabulary 256, T = 32, D = 128, 4 heads,
one block, tied LM head, cross-entropy with ignored tokens, B = 32, AdamW).
PyTorch's recipe: for each of m micro-batches forward, loss / m, backward
(gradients accumulate in .grad), then optimizer.step() and zero_grad().
gacc: one call of the compiled step (m regions, one optimizer update).
Steps alternate between the two; each reports the median of --steps timed
steps after --warmup. Prints one line per (model, m): gacc ms, PyTorch ms,
ratio (gacc / PyTorch; below 1 is faster).
"""

import argparse
import os
import statistics
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--models", default="mlp,gpt")
ap.add_argument("--m", default="1,2,4,8")
ap.add_argument("--steps", type=int, default=10)
ap.add_argument("--warmup", type=int, default=3)
args = ap.parse_args()
# gaccrt's GEMM threads and LibTorch's intra-op threads, set before either
# library starts its pool
os.environ["OPENBLAS_NUM_THREADS"] = str(args.threads)
os.environ["OMP_NUM_THREADS"] = str(args.threads)

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "examples", "torch"))
import gacc.torch  # noqa: E402
from train_gpt import GPT, batch_of, loss_fn as gpt_loss  # noqa: E402

torch.set_num_threads(args.threads)


def mlp_case():
    torch.manual_seed(0)
    layers, d = [], 512
    for _ in range(4):
        layers += [nn.Linear(d, 512), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(512, 10))
    x = torch.randn(256, 512)
    y = torch.randint(0, 10, (256, ))
    loss = lambda m, x, y: F.cross_entropy(m(x), y)  # noqa: E731
    make_opt = lambda m: torch.optim.SGD(m.parameters(), lr=0.01,  # noqa
                                         momentum=0.9)
    return model, loss, (x, y), make_opt


def gpt_case():
    torch.manual_seed(0)
    model = GPT(256, 32, 128, 4)
    batch = batch_of(torch.Generator().manual_seed(0), 32, 32, 256)
    make_opt = lambda m: torch.optim.AdamW(m.parameters(), lr=1e-3)  # noqa
    return model, gpt_loss, batch, make_opt


def eager_step(model, loss_fn, batch, opt, m):
    B = batch[0].shape[0]
    sizes = [B // m + (1 if i < B % m else 0) for i in range(m)]
    off = 0
    for s in sizes:
        loss = loss_fn(model, *(b[off:off + s] for b in batch)) / m
        loss.backward()
        off += s
    opt.step()
    opt.zero_grad()


def main():
    cases = {"mlp": mlp_case, "gpt": gpt_case}
    print("threads %d, torch %s, median of %d steps after %d warm-up" %
          (args.threads, torch.__version__, args.steps, args.warmup))
    print("%-5s %3s %10s %12s %7s %10s" % ("model", "m", "gacc ms",
                                           "PyTorch ms", "ratio",
                                           "compile s"))
    for name in args.models.split(","):
        for m in [int(v) for v in args.m.split(",")]:
            model, loss_fn, batch, make_opt = cases[name]()
            import copy
            eager = copy.deepcopy(model)
            t0 = time.time()
            step = gacc.torch.compile(model, loss_fn, batch,
                                      micro_batches=m,
                                      optimizer=make_opt(model))
            compile_s = time.time() - t0
            eopt = make_opt(eager)
            tg, te = [], []
            for k in range(args.warmup + args.steps):
                t = time.perf_counter()
                step(*batch)
                tg.append(time.perf_counter() - t)
                t = time.perf_counter()
                eager_step(eager, loss_fn, batch, eopt, m)
                te.append(time.perf_counter() - t)
            g = statistics.median(tg[args.warmup:]) * 1e3
            e = statistics.median(te[args.warmup:]) * 1e3
            print("%-5s %3d %10.2f %12.2f %7.2f %10.1f" %
                  (name, m, g, e, g / e, compile_s))
            sys.stdout.flush()


if __name__ == "__main__":
    main()

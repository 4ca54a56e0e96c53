#!/usr/bin/env python3
"""PyTorch eager gradient accumulation of the bench GPT
(examples/torch/train_gpt.py's model), the baseline of gpu-check's GPT
table and of bench/torch_steps.py.

  torch_gpt.py --vocab V --seq T --dim D --heads H --batch B --micro-batches M
               [--device cuda] [--steps K] [--warmup W]

Per step: for each micro-batch forward, loss / m, backward; then AdamW's
step() and zero_grad(). Prints the median and mean step time
(CUDA-synchronized) and the peak memory allocated on the device.
"""

import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "examples", "torch"))
from train_gpt import GPT, batch_of, loss_fn  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    for name, default in [("vocab", 256), ("seq", 32), ("dim", 128),
                          ("heads", 4), ("batch", 32), ("micro-batches", 1),
                          ("steps", 20), ("warmup", 3)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    dev = torch.device(a.device)
    torch.manual_seed(0)
    model = GPT(a.vocab, a.seq, a.dim, a.heads).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tok, tgt = (t.to(dev) for t in batch_of(torch.Generator().manual_seed(0),
                                            a.batch, a.seq, a.vocab))
    m = a.micro_batches
    sizes = [a.batch // m + (1 if i < a.batch % m else 0) for i in range(m)]
    times = []
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for s in range(a.warmup + a.steps):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        off = 0
        for n in sizes:
            loss = loss_fn(model, tok[off:off + n], tgt[off:off + n]) / m
            loss.backward()
            off += n
        opt.step()
        opt.zero_grad()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        if s >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    peak = torch.cuda.max_memory_allocated() if dev.type == "cuda" else 0
    print(f"torch: time/step median {statistics.median(times):.3f} ms "
          f"(mean {statistics.mean(times):.3f} ms), peak device memory "
          f"{peak / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""PyTorch eager gradient accumulation of the bench/gen_mlp.py MLP.

  torch_mlp.py --batch B --dims D0,...,DL --micro-batches M [--device cuda]
               [--steps K] [--warmup W]

The standard recipe per step: for each micro-batch, forward, loss / m,
backward; then optimizer.step() and zero_grad(). Prints the median and mean
step time (CUDA-synchronized) and the peak memory allocated on the device.
Used by scripts/gpu-check.sh on a machine with a GPU and PyTorch.
"""

import argparse
import statistics
import time

import torch


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--dims", required=True)
    p.add_argument("--micro-batches", type=int, default=1)
    p.add_argument("--device", default="cuda")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    dims = [int(d) for d in a.dims.split(",")]
    dev = torch.device(a.device)
    layers = []
    for i, (k, n) in enumerate(zip(dims[:-1], dims[1:])):
        layers.append(torch.nn.Linear(k, n))
        if i + 2 < len(dims):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(a.batch, dims[0], device=dev)
    y = torch.randint(dims[-1], (a.batch,), device=dev)
    b = a.batch // a.micro_batches
    times = []
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    for s in range(a.warmup + a.steps):
        if dev.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for k in range(a.micro_batches):
            loss = torch.nn.functional.cross_entropy(
                model(x[k * b:(k + 1) * b]), y[k * b:(k + 1) * b]) / a.micro_batches
            loss.backward()
        opt.step()
        opt.zero_grad()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        if s >= a.warmup:
            times.append((time.perf_counter() - t0) * 1e3)
    peak = torch.cuda.max_memory_allocated() if dev.type == "cuda" else 0
    print(f"torch: time/step median {statistics.median(times):.3f} ms "
          f"(mean {statistics.mean(times):.3f} ms), peak device memory {peak / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()

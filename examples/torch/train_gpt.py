#!/usr/bin/python3
"""Trains a small GPT with gacc at m = 4 micro-batches and prints its loss
curve next to PyTorch's full-batch step on the same data.

    PYTHONPATH=build/python /usr/bin/python3 examples/torch/train_gpt.py [--steps 20] [--micro-batches 4]

The two runs stay together up to float32 rounding (PyTorch's step runs on
the whole batch; gacc's in m regions; both in float32). The model: token
embedding with learned positions, one block of causal
nn.MultiheadAttention and a GELU(tanh) MLP with LayerNorms, an LM head tied
to the embedding; cross-entropy with ignore_index = -100 over sequences of
unequal length (so the loss is normalized by the number of valid tokens of
the whole batch, which the eager ÷m recipe gets wrong); AdamW. The data is
a toy language: each sequence counts upwards modulo the vocabulary from a
random start, so the loss falls as the model learns to add one.
"""

import argparse
import copy
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F



class GPT(nn.Module):
    def __init__(self, V, T, D, H):
        super().__init__()
        self.wte = nn.Embedding(V, D)
        self.wpe = nn.Parameter(torch.randn(T, D) * 0.02)
        self.ln1 = nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, H, batch_first=True)
        self.ln2 = nn.LayerNorm(D)
        self.fc = nn.Linear(D, 4 * D)
        self.proj = nn.Linear(4 * D, D)
        self.lnf = nn.LayerNorm(D)
        self.head = nn.Linear(D, V, bias=False)
        self.head.weight = self.wte.weight
        self.register_buffer(
            "mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))
        nn.init.normal_(self.wte.weight, std=0.02)

    def forward(self, tok):
        x = self.wte(tok) + self.wpe
        h = self.ln1(x)
        a, _ = self.attn(h, h, h, attn_mask=self.mask, need_weights=False)
        x = x + a
        x = x + self.proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))
        return self.head(self.lnf(x))


def loss_fn(model, tok, tgt):
    logits = model(tok)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           tgt.reshape(-1), ignore_index=-100)


def batch_of(gen, B, T, V):
    start = torch.randint(0, V, (B, 1), generator=gen)
    seq = (start + torch.arange(T + 1)) % V
    tok, tgt = seq[:, :T].clone(), seq[:, 1:].clone()
    lengths = torch.randint(T // 2, T + 1, (B, ), generator=gen)
    for b in range(B):
        tgt[b, lengths[b]:] = -100
    return tok, tgt


def main():
    try:
        import gacc.torch
    except ImportError:
        sys.exit("train_gpt.py: cannot import gacc; run it with "
                 "PYTHONPATH=build/python /usr/bin/python3 (Debian's "
                 "python3-torch)")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--batch", type=int, default=16)
    args = ap.parse_args()
    V, T, D, H = 32, 12, 32, 4
    torch.manual_seed(0)
    model = GPT(V, T, D, H)
    ref = copy.deepcopy(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=3e-3, weight_decay=0.01)
    gen = torch.Generator().manual_seed(1)
    example = batch_of(gen, args.batch, T, V)
    t0 = time.time()
    step = gacc.torch.compile(model, loss_fn, example, optimizer=opt,
                              micro_batches=args.micro_batches)
    print("compiled the GPT step (B = %d, m = %d, %d parameters) in %.1f s"
          % (args.batch, args.micro_batches,
             sum(p.numel() for p in model.parameters()), time.time() - t0))
    print("%5s  %12s  %12s  %10s" % ("step", "gacc loss", "PyTorch loss",
                                     "rel diff"))
    for k in range(args.steps):
        tok, tgt = batch_of(gen, args.batch, T, V)
        loss = step(tok, tgt)
        ref_opt.zero_grad()
        ref_loss = loss_fn(ref, tok, tgt)
        ref_loss.backward()
        ref_opt.step()
        diff = abs(float(loss) - float(ref_loss)) / abs(float(ref_loss))
        print("%5d  %12.6f  %12.6f  %10.1e" % (k + 1, float(loss),
                                                 float(ref_loss), diff))


if __name__ == "__main__":
    main()

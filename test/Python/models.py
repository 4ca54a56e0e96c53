"""Small PyTorch models for gacc.torch's tests: each returns
(model, loss_fn, batch, optimizer or None)."""

import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "examples", "torch"))
import train_gpt  # noqa: E402


def mlp(loss="ce", act=nn.ReLU, B=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    m = nn.Sequential(nn.Linear(6, 16), act(), nn.Linear(16, 16), act(),
                      nn.Linear(16, 4))
    x = torch.randn(B, 6, generator=g)
    if loss == "ce":
        y = torch.randint(0, 4, (B, ), generator=g)
        return m, lambda m, x, y: F.cross_entropy(m(x), y), (x, y), None
    t = torch.randn(B, 4, generator=g)
    return m, lambda m, x, t: F.mse_loss(m(x), t), (x, t), None


def GPT(V=13, T=6, D=16, H=2):
    """examples/torch/train_gpt.py's model: embedding, learned positions,
    causal nn.MultiheadAttention, LayerNorm, GELU(tanh), an LM head tied to
    the embedding."""
    return train_gpt.GPT(V, T, D, H)


def gpt_loss(m, tok, tgt):
    logits = m(tok)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           tgt.reshape(-1), ignore_index=-100)


def gpt(B=4, seed=0, optimizer=True):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    m = GPT()
    tok = torch.randint(0, 13, (B, 6), generator=g)
    tgt = torch.randint(0, 13, (B, 6), generator=g)
    # unequal valid tokens per sample
    for b in range(B):
        tgt[b, 6 - (b % 4):] = -100
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1) \
        if optimizer else None
    return m, gpt_loss, (tok, tgt), opt


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 4, 3, padding=1)
        self.gn = nn.GroupNorm(2, 4)
        self.c2 = nn.Conv2d(4, 6, 3, stride=2, padding=1)
        self.fc = nn.Linear(6, 3)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.gn(self.c1(x))), 2)
        x = F.relu(self.c2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def cnn(B=4, seed=0):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    m = CNN()
    x = torch.randn(B, 2, 8, 8, generator=g)
    y = torch.randint(0, 3, (B, ), generator=g)
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    return m, lambda m, x, y: F.cross_entropy(m(x), y), (x, y), opt


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) \
            * self.weight


class LlamaBlock(nn.Module):
    def __init__(self, D=16, H=2, F_=32):
        super().__init__()
        self.H = H
        self.n1 = RMSNorm(D)
        self.wq = nn.Linear(D, D, bias=False)
        self.wk = nn.Linear(D, D, bias=False)
        self.wv = nn.Linear(D, D, bias=False)
        self.wo = nn.Linear(D, D, bias=False)
        self.n2 = RMSNorm(D)
        self.w1 = nn.Linear(D, F_, bias=False)
        self.w3 = nn.Linear(D, F_, bias=False)
        self.w2 = nn.Linear(F_, D, bias=False)

    def forward(self, x, mask):
        B, T, D = x.shape
        hd = D // self.H
        h = self.n1(x)
        q = self.wq(h).view(B, T, self.H, hd).transpose(1, 2)
        k = self.wk(h).view(B, T, self.H, hd).transpose(1, 2)
        v = self.wv(h).view(B, T, self.H, hd).transpose(1, 2)
        s = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        s = s.masked_fill(mask, float("-inf"))
        a = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(B, T, D)
        x = x + self.wo(a)
        h = self.n2(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class Llama(nn.Module):
    def __init__(self, V=11, T=5, D=16, L=2):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.blocks = nn.ModuleList(LlamaBlock(D) for _ in range(L))
        self.norm = RMSNorm(D)
        self.out = nn.Linear(D, V, bias=False)
        self.register_buffer(
            "mask", torch.triu(torch.ones(T, T, dtype=torch.bool), 1))

    def forward(self, tok):
        x = self.emb(tok)
        for b in self.blocks:
            x = b(x, self.mask)
        return self.out(self.norm(x))


def llama(B=4, seed=0):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    m = Llama()
    tok = torch.randint(0, 11, (B, 5), generator=g)
    tgt = torch.randint(0, 11, (B, 5), generator=g)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    return m, gpt_loss, (tok, tgt), opt


def batchnorm(train=True, B=4, seed=0):
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)
    m = nn.Sequential(nn.Linear(5, 8), nn.BatchNorm1d(8), nn.ReLU(),
                      nn.Linear(8, 2))
    m.train(train)
    x = torch.randn(B, 5, generator=g)
    t = torch.randn(B, 2, generator=g)
    return m, lambda m, x, t: F.mse_loss(m(x), t), (x, t), None


MODELS = {
    "mlp_relu_ce": lambda: mlp("ce", nn.ReLU),
    "mlp_silu_mse": lambda: mlp("mse", nn.SiLU),
    "gpt": gpt,
    "gpt_grads": lambda: gpt(optimizer=False),
    "cnn": cnn,
    "llama": llama,
    "batchnorm_eval": lambda: batchnorm(False),
}

#!/usr/bin/env python3
"""Random training steps written in TOSA, lowered by upstream's passes.

The TOSA counterpart of gen_step.py: a forward pass of random layers, a
loss, and the backward written in TOSA ops from each layer's vector-Jacobian
product, emitted with the `Tosa` builder of examples/frontend/gen_tosa.py
(TOSA 1.0: rank-3 `tosa.matmul` with zero points, `tosa.reshape` with
`tosa.const_shape`, keep-rank reductions, `tosa.mul` with a shift, size-1
broadcasts). The step is then lowered with upstream's passes only,

  mlir-opt --tosa-to-linalg-pipeline --tosa-to-tensor --tosa-to-arith

and that output is what gacc is given (`Step.mlir`; the TOSA source is
`Step.tosa`).

Layers: padded convolutions (`tosa.conv2d` NHWC, the weight gradient as a
convolution over the samples as channels, the input gradient with
`tosa.reverse`d weights or `tosa.transpose_conv2d`), depthwise
convolutions (`tosa.depthwise_conv2d`, the weight gradient from shifted
`tosa.slice` windows), 2x2 `tosa.avg_pool2d`, linear (with or without bias), ReLU (`tosa.clamp`), tanh, sigmoid,
erf GELU, RMS norm (`tosa.rsqrt`), a feature scale, softmax over the
features, GLU (`tosa.slice`), a padded branch (`tosa.pad` + `tosa.concat`),
residual blocks; token inputs: embedding (`tosa.gather`, gradient as a
one-hot matmul), per-sample token mixing (`tosa.tile` + batched
`tosa.matmul`), self-attention with the heads split into a [B*H, T, dh]
batch (rank-4 `tosa.transpose`, the sample dimension merged with the
heads) and the mean over the tokens. Losses: softmax cross-entropy
against class ids (one-hot by `tosa.equal` + `tosa.select`) or MSE, as a
mean over the samples or over all elements; an argmax accuracy metric
sometimes. Results: `gacc.grad` gradients, or an average all-reduce and SGD
in the step; 1 or 2 ranks; equal or random micro-batch splits.

Usage: gen_tosa_step.py --seed=S [-o STEP.mlir] [--tosa-output=STEP.tosa.mlir]
                        [--inputs=DIR]
Standard library only (plus mlir-opt, from PATH or /usr/lib/llvm-22/bin).
"""

import argparse
import os
import random
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "frontend"))
sys.path.insert(0, HERE)
from gen_tosa import Step as TosaStep  # noqa: E402
import gen_step  # noqa: E402

MAX_F32 = 3.4028234663852886e38
LOWERING = ["--tosa-to-linalg-pipeline", "--tosa-to-tensor", "--tosa-to-arith"]


def mlir_opt():
    for candidate in (shutil.which("mlir-opt"), shutil.which("mlir-opt-22"),
                      "/usr/lib/llvm-22/bin/mlir-opt"):
        if candidate and os.path.exists(candidate):
            return candidate
    raise RuntimeError("mlir-opt not found (PATH, /usr/lib/llvm-22/bin)")


class Gen:
    """Emits layers forward and records their backward (a tape)."""

    def __init__(self, rng, step):
        self.rng = rng
        self.s = step
        self.t = step.t
        self.tape = []
        self.params = []      # (Val, spec)
        self.grads = {}       # param name -> gradient Val
        self.families = []

    def param(self, name, shape, init, fan_in=None):
        v = self.s.arg("p_%s%d" % (name, len(self.params)), shape,
                       "gacc.param")
        spec = {"kind": "param", "init": init, "shape": list(shape),
                "dtype": "f32"}
        if fan_in:
            spec["fan_in"] = fan_in
        self.params.append((v, spec))
        return v

    def add_grad(self, p, g):
        if p.name in self.grads:
            g = self.t.add(self.grads[p.name], g)
        self.grads[p.name] = g

    # Helpers over [..., D] values: rows view [R, D].
    def rows(self, h):
        r = 1
        for d in h.shape[:-1]:
            r *= d
        return self.t.reshape(h, [r, h.shape[-1]]) if len(h.shape) != 2 else h

    def unrows(self, h2, shape):
        return self.t.reshape(h2, shape) if list(h2.shape) != list(shape) else h2

    def bcast(self, v, rank):
        """A [D] parameter viewed [1, ..., 1, D]."""
        return self.t.reshape(v, [1] * (rank - 1) + v.shape)

    def reduce_rows(self, x):
        """Sum over every dimension but the last -> [D]."""
        return self.t.reshape(self.t.reduce_sum(x, *range(len(x.shape) - 1)),
                              [x.shape[-1]])

    # Layers -----------------------------------------------------------------
    def linear(self, h, dout, bias):
        t = self.t
        din = h.shape[-1]
        W = self.param("W", [din, dout], "weight", fan_in=din)
        b = self.param("b", [dout], "bias") if bias else None
        shape = h.shape[:-1] + [dout]
        hr = self.rows(h)
        y = t.linear2d(hr, W)
        if b is not None:
            y = t.add(y, self.bcast(b, 2))
        out = self.unrows(y, shape)

        def back(dy):
            dyr = self.rows(dy)
            self.add_grad(W, t.matmul_tn(hr, dyr))
            if b is not None:
                self.add_grad(b, t.reshape(t.reduce_sum(dyr, 0), [dout]))
            return self.unrows(t.matmul_nt(dyr, W), h.shape)
        self.tape.append(back)
        self.families.append("linear" if bias else "linear-nobias")
        return out

    def act(self, h, kind):
        t = self.t
        one = t.const(1.0, [1] * len(h.shape))
        zero = t.const(0.0, [1] * len(h.shape))
        if kind == "relu":
            y = t.clamp(h, 0.0, MAX_F32)

            def back(dy):
                return t.select(t.compare("greater", h, zero), dy, zero)
        elif kind == "tanh":
            y = t.unary("tanh", h)

            def back(dy):
                return t.mul(dy, t.sub(one, t.mul(y, y)))
        elif kind == "sigmoid":
            y = t.unary("sigmoid", h)

            def back(dy):
                return t.mul(dy, t.mul(y, t.sub(one, y)))
        else:  # gelu (erf)
            phi = t.mul(t.const(0.5, [1] * len(h.shape)),
                        t.add(one, t.unary("erf",
                                           t.scale(h, 0.7071067811865476))))
            y = t.mul(h, phi)

            def back(dy):
                gauss = t.unary("exp", t.scale(t.mul(h, h), -0.5))
                dphi = t.mul(h, t.scale(gauss, 0.3989422804014327))
                return t.mul(dy, t.add(phi, dphi))
        self.tape.append(back)
        self.families.append(kind)
        return y

    def rmsnorm(self, h):
        t = self.t
        D = h.shape[-1]
        n = len(h.shape)
        g = self.param("g", [D], "scale")
        ms = t.scale(t.reduce_sum(t.mul(h, h), n - 1), 1.0 / D)
        r = t.unary("rsqrt", t.add(ms, t.const(1e-5, [1] * n)))
        hr = t.mul(h, r)
        gb = self.bcast(g, n)
        y = t.mul(hr, gb)

        def back(dy):
            self.add_grad(g, self.reduce_rows(t.mul(dy, hr)))
            dhr = t.mul(dy, gb)
            dot = t.reduce_sum(t.mul(dhr, h), n - 1)
            r3 = t.mul(t.mul(r, r), r)
            return t.sub(t.mul(dhr, r),
                         t.scale(t.mul(h, t.mul(r3, dot)), 1.0 / D))
        self.tape.append(back)
        self.families.append("rmsnorm")
        return y

    def feature_scale(self, h):
        t = self.t
        n = len(h.shape)
        a = self.param("a", [h.shape[-1]], "scale")
        ab = self.bcast(a, n)
        y = t.mul(h, ab)

        def back(dy):
            self.add_grad(a, self.reduce_rows(t.mul(dy, h)))
            return t.mul(dy, ab)
        self.tape.append(back)
        self.families.append("scale")
        return y

    def softmax(self, h):
        t = self.t
        n = len(h.shape)
        mx = t.reduce("reduce_max", h, n - 1)
        e = t.unary("exp", t.sub(h, mx))
        s = t.mul(e, t.unary("reciprocal", t.reduce_sum(e, n - 1)))

        def back(dy):
            return t.mul(s, t.sub(dy, t.reduce_sum(t.mul(dy, s), n - 1)))
        self.tape.append(back)
        self.families.append("softmax")
        return s

    def glu(self, h):
        t = self.t
        n = len(h.shape)
        D = h.shape[-1]
        half = D // 2
        lead = h.shape[:-1]
        a = t.slice(h, [0] * n, lead + [half])
        gt = t.slice(h, [0] * (n - 1) + [half], lead + [D - half])
        if D - half != half:
            gt = t.slice(gt, [0] * n, lead + [half])
        sg = t.unary("sigmoid", gt)
        y = t.mul(a, sg)

        def back(dy):
            one = t.const(1.0, [1] * n)
            da = t.mul(dy, sg)
            dgt = t.mul(t.mul(dy, a), t.mul(sg, t.sub(one, sg)))
            parts = [da, dgt]
            if D - half != half:
                parts.append(t.const(0.0, lead + [1]))
            return t.concat(parts, n - 1)
        self.tape.append(back)
        self.families.append("glu")
        return y

    def padded_branch(self, h):
        """concat(h, pad(h W, right by 1)) along the features."""
        t = self.t
        n = len(h.shape)
        D = h.shape[-1]
        k = self.rng.choice([1, 2])
        hr = self.rows(h)
        W = self.param("Wp", [D, k], "weight", fan_in=D)
        p = self.unrows(t.linear2d(hr, W), h.shape[:-1] + [k])
        padded = t.pad(p, [(0, 0)] * (n - 1) + [(0, 1)])
        y = t.concat([h, padded], n - 1)
        lead = h.shape[:-1]

        def back(dy):
            dh = t.slice(dy, [0] * n, lead + [D])
            dp = t.slice(dy, [0] * (n - 1) + [D], lead + [k])
            dpr = self.rows(dp)
            self.add_grad(W, t.matmul_tn(hr, dpr))
            return t.add(dh, self.unrows(t.matmul_nt(dpr, W), h.shape))
        self.tape.append(back)
        self.families.append("pad-concat")
        return y

    def residual(self, h):
        t = self.t
        start = len(self.tape)
        inner = self.linear(h, h.shape[-1], self.rng.random() < 0.5)
        inner = self.act(inner, self.rng.choice(["relu", "tanh", "gelu"]))
        y = t.add(h, inner)
        body = self.tape[start:]
        del self.tape[start:]

        def back(dy):
            d = dy
            for b in reversed(body):
                d = b(d)
            return t.add(dy, d)
        self.tape.append(back)
        self.families.append("residual")
        return y

    def token_mix(self, h):
        """mix[b] = Wm h[b] over the tokens: tosa.tile + batched matmul."""
        t = self.t
        B, T, D = h.shape
        Wm = self.param("Wm", [T, T], "weight", fan_in=T)
        Wm3 = t.reshape(Wm, [1, T, T])
        y = t.matmul(t.tile(Wm3, [B, 1, 1]), h)

        def back(dy):
            self.add_grad(Wm, t.reshape(t.reduce_sum(
                t.matmul(dy, t.transpose(h, [0, 2, 1])), 0), [T, T]))
            WmT = t.tile(t.transpose(Wm3, [0, 2, 1]), [B, 1, 1])
            return t.matmul(WmT, dy)
        self.tape.append(back)
        self.families.append("token-mix")
        return y

    def attention(self, h):
        """Causal-free self-attention over the tokens with H heads: q, k, v
        projections, the heads split off by reshape + tosa.transpose
        [0, 2, 1, 3] into a [B*H, T, dh] batch (the sample dimension merged
        with the heads), softmax(q k^T / sqrt(dh)) v by batched tosa.matmul,
        the heads merged back."""
        t = self.t
        B, T, D = h.shape
        H = 2 if D % 2 == 0 else 1
        dh = D // H
        Wq = self.param("Wq", [D, D], "weight", fan_in=D)
        Wk = self.param("Wk", [D, D], "weight", fan_in=D)
        Wv = self.param("Wv", [D, D], "weight", fan_in=D)
        hr = self.rows(h)

        def split(x):
            return t.reshape(t.transpose(t.reshape(x, [B, T, H, dh]),
                                         [0, 2, 1, 3]), [B * H, T, dh])

        def merge(x):
            return t.reshape(t.transpose(t.reshape(x, [B, H, T, dh]),
                                         [0, 2, 1, 3]), [B * T, D])

        q, k, v = (split(t.linear2d(hr, W)) for W in (Wq, Wk, Wv))
        scale = 1.0 / (dh ** 0.5)
        scores = t.scale(t.matmul(q, t.transpose(k, [0, 2, 1])), scale)
        mx = t.reduce("reduce_max", scores, 2)
        e = t.unary("exp", t.sub(scores, mx))
        p = t.mul(e, t.unary("reciprocal", t.reduce_sum(e, 2)))
        y = t.reshape(merge(t.matmul(p, v)), [B, T, D])

        def back(dy):
            do = split(dy)
            dp = t.matmul(do, t.transpose(v, [0, 2, 1]))
            dv = t.matmul(t.transpose(p, [0, 2, 1]), do)
            ds = t.scale(t.mul(p, t.sub(dp, t.reduce_sum(t.mul(dp, p), 2))),
                         scale)
            dq = t.matmul(ds, k)
            dk = t.matmul(t.transpose(ds, [0, 2, 1]), q)
            dh_total = None
            for W, d in ((Wq, dq), (Wk, dk), (Wv, dv)):
                d2 = merge(d)
                self.add_grad(W, t.matmul_tn(hr, d2))
                part = t.matmul_nt(d2, W)
                dh_total = part if dh_total is None else t.add(dh_total, part)
            return t.reshape(dh_total, [B, T, D])
        self.tape.append(back)
        self.families.append("attention")
        return y

    def token_mean(self, h):
        t = self.t
        B, T, D = h.shape
        y = t.reshape(t.scale(t.reduce_sum(h, 1), 1.0 / T), [B, D])

        def back(dy):
            return t.mul(t.reshape(dy, [B, 1, D]),
                         t.const(1.0 / T, [1, T, 1]))
        self.tape.append(back)
        self.families.append("token-mean")
        return y

    def conv(self, h, F, K, p):
        """tosa.conv2d NHWC, stride 1, padding p on every side, with bias;
        the input gradient convolves with the flipped, transposed weight,
        the weight gradient with the samples as the contracted channels."""
        t = self.t
        B, H, W_, C = h.shape
        Wc = self.param("Wc", [F, K, K, C], "weight", fan_in=K * K * C)
        bc = self.param("bc", [F], "bias")
        y = t.conv2d(h, Wc, bc, [p] * 4)

        def back(dy):
            self.add_grad(bc, t.reshape(t.reduce_sum(dy, 0, 1, 2), [F]))
            gw = t.conv2d(t.transpose(h, [3, 1, 2, 0]),
                          t.transpose(dy, [3, 1, 2, 0]), t.const(0.0, [F]),
                          [p] * 4)
            self.add_grad(Wc, t.transpose(gw, [3, 1, 2, 0]))
            if transpose:
                return t.transpose_conv2d(dy, t.transpose(Wc, [3, 1, 2, 0]),
                                          t.const(0.0, [C]), [-p] * 4)
            flipped = t.reverse(t.reverse(t.transpose(Wc, [3, 1, 2, 0]), 1),
                                2)
            return t.conv2d(dy, flipped, t.const(0.0, [C]), [K - 1 - p] * 4)
        transpose = self.rng.random() < 0.5
        self.tape.append(back)
        self.families.append("conv2d" + ("/transpose-conv" if transpose
                                         else ""))
        return y

    def depthwise(self, h, K, p):
        """tosa.depthwise_conv2d (multiplier 1) with bias; the weight
        gradient from K*K shifted tosa.slice windows of the padded input."""
        t = self.t
        B, H, W_, C = h.shape
        Wd = self.param("Wd", [K, K, C, 1], "weight", fan_in=K * K)
        bd = self.param("bd", [C], "bias")
        y = t.depthwise_conv2d(h, Wd, bd, [p] * 4)
        OH, OW = y.shape[1], y.shape[2]

        def back(dy):
            self.add_grad(bd, t.reshape(t.reduce_sum(dy, 0, 1, 2), [C]))
            hp = h
            if p:
                # A rank-4 tosa.pad needs a !tosa.shape<8>, over TOSA's
                # MAX_RANK of 6: pad H and W on the [B, H, W*C] view.
                hp = t.reshape(t.pad(t.reshape(h, [B, H, W_ * C]),
                                     [(0, 0), (p, p), (p * C, p * C)]),
                               [B, H + 2 * p, W_ + 2 * p, C])
            taps = []
            for kh in range(K):
                for kw in range(K):
                    window = t.slice(hp, [0, kh, kw, 0], [B, OH, OW, C])
                    taps.append(t.reduce_sum(t.mul(window, dy), 0, 1, 2))
            dW = t.reshape(t.concat(taps, 0) if len(taps) > 1 else taps[0],
                           [K, K, C, 1])
            self.add_grad(Wd, dW)
            flipped = t.reverse(t.reverse(Wd, 0), 1)
            return t.depthwise_conv2d(dy, flipped, t.const(0.0, [C]),
                                      [K - 1 - p] * 4)
        self.tape.append(back)
        self.families.append("depthwise")
        return y

    def avg_pool(self, h):
        """2x2 tosa.avg_pool2d; the gradient upsampled by tosa.tile."""
        t = self.t
        B, H, W_, F = h.shape
        y = t.avg_pool2d(h, 2)

        def back(dy):
            up = t.tile(t.reshape(dy, [B, H // 2, 1, W_ // 2, 1, F]),
                        [1, 1, 2, 1, 2, 1])
            return t.scale(t.reshape(up, [B, H, W_, F]), 0.25)
        self.tape.append(back)
        self.families.append("avg-pool")
        return y

    def flatten(self, h):
        t = self.t
        B = h.shape[0]
        n = 1
        for d in h.shape[1:]:
            n *= d
        y = t.reshape(h, [B, n])
        self.tape.append(lambda dy: t.reshape(dy, h.shape))
        return y

    def embedding(self, ids, vocab, D):
        t = self.t
        B, T = ids.shape
        E = self.param("E", [vocab, D], "normal")
        idx = t.reshape(ids, [1, B * T])
        y = t.reshape(t.gather(t.reshape(E, [1, vocab, D]), idx), [B, T, D])

        def back(dy):
            onehot = t.onehot(t.reshape(ids, [B * T, 1]), vocab)
            self.add_grad(E, t.matmul_tn(onehot, t.reshape(dy, [B * T, D])))
            return None
        self.tape.append(back)
        self.families.append("embedding")
        return y


def generate(seed):
    rng = random.Random(seed)
    B = rng.choice([2, 3, 4, 4, 6, 8])
    mode = rng.choice(["flat", "flat", "seq", "seq", "image"])
    seq = mode == "seq"
    T = rng.choice([2, 3]) if seq else None
    C = rng.choice([2, 3, 4])
    head = rng.choice(["ce", "ce", "mse"])
    norm = rng.choice(["mean", "all"])
    optimizer = rng.random() < 0.4
    ranks = 2 if rng.random() < 0.25 else 1
    metric = head == "ce" and rng.random() < 0.3

    s = TosaStep("Random TOSA training step, seed %d." % seed,
                 "Generated by scripts/difftest/gen_tosa_step.py.")
    g = Gen(rng, s)
    t = s.t
    args = []

    def batch_arg(name, shape, init, dtype="f32", bound=None):
        v = s.arg(name, shape, "gacc.batch = 0 : i64",
                  "i32" if dtype == "i32" else "f32")
        spec = {"kind": "batch", "init": init, "shape": list(shape),
                "dtype": dtype}
        if bound is not None:
            spec["bound"] = bound
        args.append((v, spec))
        return v

    embed = seq and rng.random() < 0.5
    if embed:
        vocab = rng.choice([3, 5, 7])
        D = rng.choice([2, 3, 4])
        ids = batch_arg("ids", [B, T], "index", "i32", bound=vocab)
    elif mode == "image":
        H = rng.choice([3, 4])
        x = batch_arg("x", [B, H, H, rng.choice([1, 2])], "normal")
    else:
        D = rng.choice([2, 3, 4, 5])
        x = batch_arg("x", [B, T, D] if seq else [B, D], "normal")
    if head == "mse":
        target = batch_arg("y", [B, C], "normal")
    else:
        labels = batch_arg("labels", [B], "index", "i32", bound=C)

    t.comment("forward")
    h = g.embedding(ids, vocab, D) if embed else x
    if mode == "image":
        for _ in range(rng.randint(1, 2)):
            K = rng.choice([1, 2, 3])
            p = rng.choice([0, K // 2]) if h.shape[1] + 1 > K else K // 2
            if rng.random() < 0.3:
                h = g.depthwise(h, K, p)
            else:
                h = g.conv(h, rng.choice([2, 3]), K, p)
            if rng.random() < 0.7:
                h = g.act(h, rng.choice(["relu", "tanh", "gelu"]))
        if h.shape[1] % 2 == 0 and h.shape[2] % 2 == 0 and rng.random() < 0.6:
            h = g.avg_pool(h)
        h = g.flatten(h)
    kinds = ["linear", "act", "act", "rmsnorm", "scale", "softmax", "glu",
             "pad", "residual"]
    if seq:
        kinds += ["mix", "mix"]
    mean_at = rng.randint(0, 2) if seq else None
    for i in range(rng.randint(1, 4)):
        if seq and i == mean_at:
            h = g.token_mean(h)
        kind = rng.choice(kinds if len(h.shape) == 3 else kinds[:9])
        if kind == "linear":
            h = g.linear(h, rng.choice([2, 3, 4, 5]), rng.random() < 0.7)
        elif kind == "act":
            h = g.act(h, rng.choice(["relu", "tanh", "sigmoid", "gelu"]))
        elif kind == "rmsnorm" and h.shape[-1] >= 2:
            h = g.rmsnorm(h)
        elif kind == "scale":
            h = g.feature_scale(h)
        elif kind == "softmax" and h.shape[-1] >= 2:
            h = g.softmax(h)
        elif kind == "glu" and h.shape[-1] >= 2:
            h = g.glu(h)
        elif kind == "pad":
            h = g.padded_branch(h)
        elif kind == "residual":
            h = g.residual(h)
        elif kind == "mix":
            h = g.token_mix(h) if rng.random() < 0.5 else g.attention(h)
    if len(h.shape) == 3:
        h = g.token_mean(h)
    logits = g.linear(h, C, rng.random() < 0.7)

    factor = 1.0 / B if norm == "mean" else 1.0 / (B * C)
    if head == "ce":
        # softmax_xent normalizes by its `batch` argument: 1/B, or 1/(B C)
        loss, dlogits = t.softmax_xent(logits, labels,
                                       B if norm == "mean" else B * C)
    else:
        t.comment("MSE")
        diff = t.sub(logits, target)
        loss = t.reshape(t.scale(t.reduce_sum(t.mul(diff, diff), 1, 0),
                                 factor), [])
        # 2 and the normalizer as separate constants: runtime-batch-size
        # takes a constant 1/B as the sample count, not a folded 2/B.
        dlogits = t.scale(t.scale(diff, 2.0), factor)
    acc = t.accuracy(logits, labels) if metric else None

    t.comment("backward")
    d = dlogits
    for back in reversed(g.tape):
        d = back(d)

    lr = None
    if optimizer:
        lr = s.arg("lr", [], "gacc.state")
    s.result(loss, "gacc.loss")
    if optimizer:
        t.comment("average all-reduce, SGD")
    position = {v.name: i for i, (v, _) in enumerate(s.args)}
    updates = [(p, position[p.name], g.grads[p.name]) for p, _ in g.params]
    if optimizer:
        s.sgd_results(updates, lr)
    else:
        for p, i, grad in updates:
            s.result(grad, "gacc.grad = %d : i64" % i)
    if acc is not None:
        s.result(acc, "gacc.metric")

    # Argument specs in the order of the function's arguments.
    by_name = {v.name: spec for v, spec in g.params + args}
    specs = []
    for v, role in s.args:
        if v.name in by_name:
            specs.append(by_name[v.name])
        else:  # lr
            specs.append({"kind": "state", "init": "lr", "shape": [],
                          "dtype": "f32"})

    step = gen_step.Step()
    step.tosa = s.render()
    p = subprocess.run([mlir_opt()] + LOWERING, input=step.tosa,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError("mlir-opt could not lower the TOSA step (seed %d):"
                           "\n%s" % (seed, p.stderr[-2000:]))
    step.mlir = p.stdout
    step.args = specs
    m = rng.randint(1, B)
    config = {"B": B, "ranks": ranks}
    if m > 1 and rng.random() < 0.4:
        config["micro_batch_sizes"] = gen_step.sizes_split(rng, B, m)
    else:
        config["micro_batches"] = m
    step.config = config
    fams = ["tosa"] + sorted(set(g.families)) + [head, norm] + (
        ["sgd"] if optimizer else ["grads"]) + (["argmax"] if metric else [])
    step.families = fams
    step.summary = "[%s] B=%d%s" % (" ".join(fams), B,
                                    " T=%d" % T if seq else "")
    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", help="write the lowered step here")
    ap.add_argument("--tosa-output", help="write the TOSA step here")
    ap.add_argument("--inputs", help="write the step's inputs to this folder")
    args = ap.parse_args()
    step = generate(args.seed)
    if args.tosa_output:
        with open(args.tosa_output, "w") as f:
            f.write(step.tosa)
    if args.output:
        with open(args.output, "w") as f:
            f.write(step.mlir)
    elif not args.tosa_output:
        sys.stdout.write(step.mlir)
    if args.inputs:
        gen_step.write_inputs(step, args.inputs, args.seed)
        print(" ".join(gen_step.check_flags(step) +
                       ["--input-dir=" + args.inputs]), file=sys.stderr)


if __name__ == "__main__":
    main()

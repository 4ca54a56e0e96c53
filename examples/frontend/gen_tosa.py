#!/usr/bin/env python3
"""Training steps written in TOSA, for the TOSA -> linalg frontend path.

TOSA has no autodiff, so a frontend that emits a TOSA training step (a
TF/TFLite-style legalization, TorchToTosa, or hand-written TOSA) spells the
backward in TOSA ops too.  Each step here is written that way: the forward
and a hand-derived backward in TOSA 1.0 ops (`tosa.matmul` on rank-3
tensors with zero points, `tosa.reshape` with `tosa.const_shape`,
keep-rank reductions, `tosa.mul` with a shift operand, broadcasting by
size-1 dimensions, `tosa.gather`, `tosa.tile`, `tosa.conv2d` NHWC,
`tosa.reverse`, `tosa.slice`, `tosa.concat`, `tosa.pad`), plus the
`shard.all_reduce` and the argument/result roles that gacc needs.  The
tests lower them with upstream's passes only:

  mlir-opt --tosa-to-linalg-pipeline --tosa-to-tensor --tosa-to-arith

and give the result to gacc-check (LibTorch reference, autograd check of
the `gacc.grad` results) and gacc-opt.

Usage: gen_tosa.py NAME [-o FILE]   (NAME: mlp, tokens, conv)
Standard library only.
"""

import argparse
import sys


class Val:
    def __init__(self, name, shape, dtype="f32"):
        self.name = name
        self.shape = list(shape)
        self.dtype = dtype

    @property
    def type(self):
        if not self.shape:
            return "tensor<%s>" % self.dtype
        return "tensor<%sx%s>" % ("x".join(str(d) for d in self.shape),
                                  self.dtype)


def fmt_float(v):
    text = repr(float(v))
    if "e" in text and "." not in text:
        text = text.replace("e", ".0e")
    return text


class Tosa:
    """Emits TOSA ops into a function body, tracking result types."""

    def __init__(self):
        self.lines = []
        self.counter = 0
        self.shapes = {}
        self.consts = {}

    def fresh(self, hint):
        self.counter += 1
        return "%%%s%d" % (hint, self.counter)

    def emit(self, line):
        self.lines.append("  " + line)

    def comment(self, text):
        self.lines.append("")
        self.lines.append("  // " + text)

    # Constants ------------------------------------------------------------
    def const_shape(self, dims):
        key = tuple(dims)
        if key not in self.shapes:
            name = "%%shape_%s" % ("x".join(str(d) for d in dims) or "scalar")
            dense = "[%s]" % ", ".join(str(d) for d in dims) if dims else ""
            self.emit("%s = tosa.const_shape {values = dense<%s> : "
                      "tensor<%dxindex>} : () -> !tosa.shape<%d>" %
                      (name, dense, len(dims), len(dims)))
            self.shapes[key] = name
        return self.shapes[key]

    def const(self, value, shape, dtype="f32"):
        key = (repr(value), tuple(shape), dtype)
        if key in self.consts:
            return self.consts[key]
        v = Val(self.fresh("cst"), shape, dtype)
        if isinstance(value, list):
            body = repr(value).replace("'", "")
        elif dtype.startswith("f"):
            body = fmt_float(value)
        else:
            body = str(value)
        self.emit('%s = "tosa.const"() {values = dense<%s> : %s} : () -> %s' %
                  (v.name, body, v.type, v.type))
        self.consts[key] = v
        return v

    def shift(self):
        return self.const(0, [1], "i8")

    def zp(self):
        return self.const(0.0, [1])

    # Ops ------------------------------------------------------------------
    def reshape(self, x, dims):
        s = self.const_shape(dims)
        r = Val(self.fresh("r"), dims, x.dtype)
        self.emit("%s = tosa.reshape %s, %s : (%s, !tosa.shape<%d>) -> %s" %
                  (r.name, x.name, s, x.type, len(dims), r.type))
        return r

    def matmul(self, a, b):
        assert a.shape[0] == b.shape[0] and a.shape[2] == b.shape[1], (
            a.shape, b.shape)
        r = Val(self.fresh("mm"), [a.shape[0], a.shape[1], b.shape[2]])
        z = self.zp()
        self.emit("%s = tosa.matmul %s, %s, %s, %s : (%s, %s, %s, %s) -> %s" %
                  (r.name, a.name, b.name, z.name, z.name, a.type, b.type,
                   z.type, z.type, r.type))
        return r

    def transpose(self, x, perms):
        r = Val(self.fresh("t"), [x.shape[p] for p in perms], x.dtype)
        self.emit("%s = tosa.transpose %s {perms = array<i32: %s>} : "
                  "(%s) -> %s" % (r.name, x.name,
                                  ", ".join(str(p) for p in perms), x.type,
                                  r.type))
        return r

    def unary(self, op, x):
        r = Val(self.fresh(op[:3]), x.shape, x.dtype)
        self.emit("%s = tosa.%s %s : (%s) -> %s" %
                  (r.name, op, x.name, x.type, r.type))
        return r

    def broadcast_shape(self, *vals):
        rank = len(vals[0].shape)
        assert all(len(v.shape) == rank for v in vals), [v.shape for v in vals]
        out = []
        for i in range(rank):
            dims = {v.shape[i] for v in vals} - {1}
            assert len(dims) <= 1, [v.shape for v in vals]
            out.append(dims.pop() if dims else 1)
        return out

    def binary(self, op, a, b, dtype=None):
        r = Val(self.fresh(op[:3]), self.broadcast_shape(a, b),
                dtype or a.dtype)
        if op == "mul":
            s = self.shift()
            self.emit("%s = tosa.mul %s, %s, %s : (%s, %s, %s) -> %s" %
                      (r.name, a.name, b.name, s.name, a.type, b.type, s.type,
                       r.type))
        else:
            self.emit("%s = tosa.%s %s, %s : (%s, %s) -> %s" %
                      (r.name, op, a.name, b.name, a.type, b.type, r.type))
        return r

    def add(self, a, b):
        return self.binary("add", a, b)

    def sub(self, a, b):
        return self.binary("sub", a, b)

    def mul(self, a, b):
        return self.binary("mul", a, b)

    def scale(self, a, factor):
        return self.mul(a, self.const(factor, [1] * len(a.shape)))

    def compare(self, op, a, b):
        return self.binary(op, a, b, dtype="i1")

    def select(self, c, a, b):
        r = Val(self.fresh("sel"), self.broadcast_shape(c, a, b), a.dtype)
        self.emit("%s = tosa.select %s, %s, %s : (%s, %s, %s) -> %s" %
                  (r.name, c.name, a.name, b.name, c.type, a.type, b.type,
                   r.type))
        return r

    def negate(self, x):
        z = self.zp()
        r = Val(self.fresh("neg"), x.shape, x.dtype)
        self.emit("%s = tosa.negate %s, %s, %s : (%s, %s, %s) -> %s" %
                  (r.name, x.name, z.name, z.name, x.type, z.type, z.type,
                   r.type))
        return r

    def clamp(self, x, lo, hi):
        r = Val(self.fresh("clamp"), x.shape, x.dtype)
        self.emit("%s = tosa.clamp %s {min_val = %s : f32, max_val = %s : "
                  "f32} : (%s) -> %s" % (r.name, x.name, fmt_float(lo),
                                         fmt_float(hi), x.type, r.type))
        return r

    def reduce(self, op, x, axis):
        shape = list(x.shape)
        shape[axis] = 1
        r = Val(self.fresh(op[7:10]), shape, x.dtype)
        self.emit("%s = tosa.%s %s {axis = %d : i32} : (%s) -> %s" %
                  (r.name, op, x.name, axis, x.type, r.type))
        return r

    def reduce_sum(self, x, *axes):
        for a in axes:
            x = self.reduce("reduce_sum", x, a)
        return x

    def gather(self, values, indices):
        n, _, c = values.shape
        r = Val(self.fresh("g"), [n, indices.shape[1], c], values.dtype)
        self.emit('%s = tosa.gather %s, %s : (%s, %s) -> %s' %
                  (r.name, values.name, indices.name, values.type,
                   indices.type, r.type))
        return r

    def tile(self, x, multiples):
        s = self.const_shape(multiples)
        r = Val(self.fresh("tile"), [d * k for d, k in zip(x.shape, multiples)],
                x.dtype)
        self.emit("%s = tosa.tile %s, %s : (%s, !tosa.shape<%d>) -> %s" %
                  (r.name, x.name, s, x.type, len(multiples), r.type))
        return r

    def reverse(self, x, axis):
        r = Val(self.fresh("rev"), x.shape, x.dtype)
        self.emit("%s = tosa.reverse %s {axis = %d : i32} : (%s) -> %s" %
                  (r.name, x.name, axis, x.type, r.type))
        return r

    def slice(self, x, start, size):
        s0 = self.const_shape(start)
        s1 = self.const_shape(size)
        r = Val(self.fresh("sl"), size, x.dtype)
        self.emit("%s = tosa.slice %s, %s, %s : (%s, !tosa.shape<%d>, "
                  "!tosa.shape<%d>) -> %s" % (r.name, x.name, s0, s1, x.type,
                                              len(start), len(size), r.type))
        return r

    def concat(self, vals, axis):
        shape = list(vals[0].shape)
        shape[axis] = sum(v.shape[axis] for v in vals)
        r = Val(self.fresh("cat"), shape, vals[0].dtype)
        self.emit("%s = tosa.concat %s {axis = %d : i32} : (%s) -> %s" %
                  (r.name, ", ".join(v.name for v in vals), axis,
                   ", ".join(v.type for v in vals), r.type))
        return r

    def pad(self, x, padding):
        flat = [p for lohi in padding for p in lohi]
        s = self.const_shape(flat)
        pc = self.const(0.0, [1])
        shape = [d + lo + hi for d, (lo, hi) in zip(x.shape, padding)]
        r = Val(self.fresh("pad"), shape, x.dtype)
        self.emit("%s = tosa.pad %s, %s, %s : (%s, !tosa.shape<%d>, %s) -> %s"
                  % (r.name, x.name, s, pc.name, x.type, len(flat), pc.type,
                     r.type))
        return r

    def _convolution(self, op, hint, x, w, bias, attrs, shape):
        """A tosa convolution op (input, weight, bias and two zero points)
        with the result shape and attributes (after acc_type) given."""
        r = Val(self.fresh(hint), shape)
        z = self.zp()
        self.emit('%s = tosa.%s %s, %s, %s, %s, %s {acc_type = f32, %s} : '
                  '(%s, %s, %s, %s, %s) -> %s' %
                  (r.name, op, x.name, w.name, bias.name, z.name, z.name,
                   attrs, x.type, w.type, bias.type, z.type, z.type, r.type))
        return r

    @staticmethod
    def _array(values):
        return "array<i64: %s>" % ", ".join(str(v) for v in values)

    def conv2d(self, x, w, bias, pad):
        n, h, wd, _ = x.shape
        f, kh, kw, _ = w.shape
        shape = [n, h + pad[0] + pad[1] - kh + 1,
                 wd + pad[2] + pad[3] - kw + 1, f]
        return self._convolution(
            "conv2d", "conv", x, w, bias,
            "dilation = array<i64: 1, 1>, pad = %s, stride = array<i64: 1, 1>"
            % self._array(pad), shape)

    def transpose_conv2d(self, x, w, bias, out_pad):
        n, h, wd, _ = x.shape
        f, kh, kw, _ = w.shape
        shape = [n, h - 1 + out_pad[0] + out_pad[1] + kh,
                 wd - 1 + out_pad[2] + out_pad[3] + kw, f]
        return self._convolution(
            "transpose_conv2d", "tconv", x, w, bias,
            "out_pad = %s, stride = array<i64: 1, 1>" % self._array(out_pad),
            shape)

    def depthwise_conv2d(self, x, w, bias, pad):
        n, h, wd, c = x.shape
        kh, kw, _, m = w.shape
        shape = [n, h + pad[0] + pad[1] - kh + 1,
                 wd + pad[2] + pad[3] - kw + 1, c * m]
        return self._convolution(
            "depthwise_conv2d", "dconv", x, w, bias,
            "dilation = array<i64: 1, 1>, pad = %s, stride = array<i64: 1, 1>"
            % self._array(pad), shape)

    def avg_pool2d(self, x, k):
        n, h, w, c = x.shape
        r = Val(self.fresh("pool"), [n, h // k, w // k, c])
        z = self.zp()
        self.emit("%s = tosa.avg_pool2d %s, %s, %s {acc_type = f32, kernel = "
                  "array<i64: %d, %d>, pad = array<i64: 0, 0, 0, 0>, stride = "
                  "array<i64: %d, %d>} : (%s, %s, %s) -> %s" %
                  (r.name, x.name, z.name, z.name, k, k, k, k, x.type, z.type,
                   z.type, r.type))
        return r

    # Composites -----------------------------------------------------------
    def onehot(self, ids, classes):
        """ids: [N, 1] i32 -> [N, classes] f32 by equal + select."""
        iota = self.const([list(range(classes))], [1, classes], "i32")
        eq = self.compare("equal", ids, iota)
        return self.select(eq, self.const(1.0, [1, 1]), self.const(0.0, [1, 1]))

    def accuracy(self, logits, labels):
        """The number of samples whose argmax over the classes (tosa.argmax)
        is their label, as a tensor<f32>."""
        b = logits.shape[0]
        am = Val(self.fresh("argmax"), [b], "i32")
        self.emit("%s = tosa.argmax %s {axis = 1 : i32} : (%s) -> %s" %
                  (am.name, logits.name, logits.type, am.type))
        hit = self.select(self.compare("equal", am, labels),
                          self.const(1.0, [1]), self.const(0.0, [1]))
        return self.reshape(self.reduce_sum(hit, 0), [])

    def linear2d(self, x, w):
        """x: [R, K], w: [K, N] -> [R, N] through rank-3 tosa.matmul."""
        x3 = self.reshape(x, [1] + x.shape)
        w3 = self.reshape(w, [1] + w.shape)
        return self.reshape(self.matmul(x3, w3), [x.shape[0], w.shape[1]])

    def matmul_tn(self, a, b):
        """a^T b for a: [R, K], b: [R, N] -> [K, N] (sum over the rows)."""
        a3 = self.transpose(self.reshape(a, [1] + a.shape), [0, 2, 1])
        b3 = self.reshape(b, [1] + b.shape)
        return self.reshape(self.matmul(a3, b3), [a.shape[1], b.shape[1]])

    def matmul_nt(self, a, b):
        """a b^T for a: [R, N], b: [K, N] -> [R, K]."""
        a3 = self.reshape(a, [1] + a.shape)
        b3 = self.transpose(self.reshape(b, [1] + b.shape), [0, 2, 1])
        return self.reshape(self.matmul(a3, b3), [a.shape[0], b.shape[0]])

    def softmax_xent(self, logits, labels, batch):
        """Mean cross-entropy of logits [B, C] against class ids [B] i32.
        Returns (loss tensor<f32>, dlogits [B, C])."""
        b, c = logits.shape
        self.comment("softmax cross-entropy, mean over the %d samples" % b)
        mx = self.reduce("reduce_max", logits, 1)
        s = self.sub(logits, mx)
        e = self.unary("exp", s)
        se = self.reduce_sum(e, 1)
        logp = self.sub(s, self.unary("log", se))
        onehot = self.onehot(self.reshape(labels, [b, 1]), c)
        nll = self.negate(self.reduce_sum(self.mul(onehot, logp), 1))
        loss = self.reshape(self.scale(self.reduce_sum(nll, 0), 1.0 / batch),
                            [])
        self.comment("d loss / d logits = (softmax - onehot) / %d" % batch)
        p = self.mul(e, self.unary("reciprocal", se))
        dlogits = self.scale(self.sub(p, onehot), 1.0 / batch)
        return loss, dlogits


class Step:
    def __init__(self, title, doc):
        self.title = title
        self.doc = doc
        self.args = []
        self.results = []
        self.t = Tosa()
        self.uses_grid = False

    def arg(self, name, shape, role, dtype="f32"):
        v = Val("%" + name, shape, dtype)
        self.args.append((v, role))
        return v

    def all_reduce(self, g):
        self.uses_grid = True
        r = Val(self.t.fresh("ar"), g.shape, g.dtype)
        self.t.emit("%s = shard.all_reduce %s on @dp grid_axes = [0] "
                    "reduction = average : %s -> %s" %
                    (r.name, g.name, g.type, r.type))
        return r

    def result(self, v, role):
        self.results.append((v, role))

    def sgd_results(self, updates, lr):
        """For each (parameter, its argument position, gradient): the
        gradient averaged over the ranks, then `p - lr * g` as its
        gacc.param_out result."""
        t = self.t
        for p, position, g in updates:
            g = self.all_reduce(g)
            if len(p.shape) == 1:
                g = t.reshape(g, [1] + p.shape)
            step = t.mul(g, t.reshape(lr, [1] * len(g.shape)))
            if len(p.shape) == 1:
                step = t.reshape(step, p.shape)
            self.result(t.sub(p, step), "gacc.param_out = %d : i64" % position)

    def render(self):
        out = ["// %s" % self.title, "//"]
        out += ["// " + l if l else "//" for l in self.doc.strip("\n").split("\n")]
        out += ["//", "// Generated by examples/frontend/gen_tosa.py; lower with",
                "//   mlir-opt --tosa-to-linalg-pipeline --tosa-to-tensor "
                "--tosa-to-arith", ""]
        if self.uses_grid:
            out.append('shard.grid @dp(shape = ?) {sym_visibility = "private"}')
            out.append("")
        args = ",\n    ".join("%s: %s {%s}" % (v.name, v.type, role)
                               for v, role in self.args)
        res = ",\n        ".join("%s {%s}" % (v.type, role)
                                 for v, role in self.results)
        out.append("func.func @train_step(\n    %s)\n    -> (%s) {" %
                   (args, res))
        out += self.t.lines
        out.append("  return %s : %s" % (
            ", ".join(v.name for v, _ in self.results),
            ", ".join(v.type for v, _ in self.results)))
        out.append("}")
        return "\n".join(out) + "\n"


def mlp():
    B, D, H, C = 8, 4, 8, 3
    s = Step("Two-layer MLP classifier in TOSA, one SGD step.", """
B = 8 samples of 4 features, 8 hidden units (ReLU as tosa.clamp), 3
classes, softmax cross-entropy against class ids (one-hot by tosa.equal
with a constant iota and tosa.select), mean over the samples (x 1/8).
Backward: weight gradients as tosa.matmul of transposed activations
(contraction over the samples), bias gradients as keep-rank reduce_sum
over the samples, the ReLU mask by tosa.greater + tosa.select. Gradients
are averaged across ranks with shard.all_reduce; SGD p - lr * g.""")
    t = s.t
    W1 = s.arg("W1", [D, H], "gacc.param")
    b1 = s.arg("b1", [H], "gacc.param")
    W2 = s.arg("W2", [H, C], "gacc.param")
    b2 = s.arg("b2", [C], "gacc.param")
    x = s.arg("x", [B, D], "gacc.batch = 0 : i64")
    labels = s.arg("labels", [B], "gacc.batch = 0 : i64", "i32")
    lr = s.arg("lr", [], "gacc.state")
    t.comment("forward: a1 = x W1 + b1, h = relu(a1), logits = h W2 + b2")
    a1 = t.add(t.linear2d(x, W1), t.reshape(b1, [1, H]))
    h = t.clamp(a1, 0.0, 3.4028234663852886e38)
    logits = t.add(t.linear2d(h, W2), t.reshape(b2, [1, C]))
    loss, dlogits = t.softmax_xent(logits, labels, B)
    t.comment("backward")
    dW2 = t.matmul_tn(h, dlogits)
    db2 = t.reshape(t.reduce_sum(dlogits, 0), [C])
    dh = t.matmul_nt(dlogits, W2)
    zero = t.const(0.0, [1, 1])
    da1 = t.select(t.compare("greater", a1, zero), dh, zero)
    dW1 = t.matmul_tn(x, da1)
    db1 = t.reshape(t.reduce_sum(da1, 0), [H])
    t.comment("data-parallel average, then SGD: p - lr * g")
    s.result(loss, "gacc.loss")
    s.sgd_results([(W1, 0, dW1), (b1, 1, db1), (W2, 2, dW2), (b2, 3, db2)],
                  lr)
    return s


def tokens():
    B, T, V, D = 4, 3, 5, 4
    s = Step("Token model in TOSA: embedding gather, token mixing, RMS norm.",
             """
B = 4 samples of T = 3 token ids from a vocabulary of V = 5, width D = 4.
  h0  = E[ids]                  tosa.gather on [1, V, D] with ids viewed [1, B*T]
  mix = Wm h0[b]  per sample    tosa.tile of Wm to [B, T, T], batched tosa.matmul
  z   = tanh(mix)
  n   = z * rsqrt(mean_d z^2 + eps) * g      (RMS norm, keep-rank reduce_sum)
  o   = n W                     over the [1, B*T, D] view
  y   = mean over the tokens    reduce_sum over axis 1, x 1/3
  loss = mean over samples and features of (y - target)^2
Backward in TOSA ops: the embedding gradient as one-hot^T dh0 (a
tosa.matmul contracting over the B*T tokens), dWm as a batched matmul
summed over the samples with reduce_sum on axis 0. The gradients are
returned as gacc.grad results (no all-reduce), so gacc-check compares
them with LibTorch autograd of the loss.""")
    t = s.t
    E = s.arg("E", [V, D], "gacc.param")
    Wm = s.arg("Wm", [T, T], "gacc.param")
    g = s.arg("g", [D], "gacc.param")
    W = s.arg("W", [D, D], "gacc.param")
    ids = s.arg("ids", [B, T], "gacc.batch = 0 : i64", "i32")
    target = s.arg("target", [B, D], "gacc.batch = 0 : i64")
    t.comment("h0 = E[ids]")
    idx = t.reshape(ids, [1, B * T])
    h0 = t.reshape(t.gather(t.reshape(E, [1, V, D]), idx), [B, T, D])
    t.comment("mix[b] = Wm h0[b], z = tanh(mix)")
    Wm_b = t.tile(t.reshape(Wm, [1, T, T]), [B, 1, 1])
    mix = t.matmul(Wm_b, h0)
    z = t.unary("tanh", mix)
    t.comment("RMS norm over the features")
    ms = t.scale(t.reduce_sum(t.mul(z, z), 2), 1.0 / D)
    r = t.unary("rsqrt", t.add(ms, t.const(1e-5, [1, 1, 1])))
    zr = t.mul(z, r)
    g3 = t.reshape(g, [1, 1, D])
    n = t.mul(zr, g3)
    t.comment("o = n W, y = mean over the tokens")
    o = t.reshape(t.matmul(t.reshape(n, [1, B * T, D]),
                           t.reshape(W, [1, D, D])), [B, T, D])
    y = t.reshape(t.scale(t.reduce_sum(o, 1), 1.0 / T), [B, D])
    t.comment("loss = mean (y - target)^2")
    diff = t.sub(y, target)
    loss = t.reshape(t.scale(t.reduce_sum(t.mul(diff, diff), 1, 0),
                             1.0 / (B * D)), [])
    t.comment("backward")
    dy = t.scale(diff, 2.0 / (B * D))
    do = t.mul(t.reshape(dy, [B, 1, D]), t.const(1.0 / T, [1, T, 1]))
    do2 = t.reshape(do, [B * T, D])
    dW = t.matmul_tn(t.reshape(n, [B * T, D]), do2)
    dn = t.reshape(t.matmul_nt(do2, W), [B, T, D])
    dg = t.reshape(t.reduce_sum(t.mul(dn, zr), 0, 1), [D])
    dzr = t.mul(dn, g3)
    dot = t.reduce_sum(t.mul(dzr, z), 2)
    r3 = t.mul(t.mul(r, r), r)
    dz = t.sub(t.mul(dzr, r), t.scale(t.mul(z, t.mul(r3, dot)), 1.0 / D))
    one = t.const(1.0, [1, 1, 1])
    dmix = t.mul(dz, t.sub(one, t.mul(z, z)))
    dWm = t.reshape(t.reduce_sum(t.matmul(dmix, t.transpose(h0, [0, 2, 1])),
                                 0), [T, T])
    WmT_b = t.tile(t.reshape(t.transpose(t.reshape(Wm, [1, T, T]), [0, 2, 1]),
                             [1, T, T]), [B, 1, 1])
    dh0 = t.matmul(WmT_b, dmix)
    onehot = t.onehot(t.reshape(ids, [B * T, 1]), V)
    dE = t.matmul_tn(onehot, t.reshape(dh0, [B * T, D]))
    s.result(loss, "gacc.loss")
    for i, gr in enumerate([dE, dWm, dg, dW]):
        s.result(gr, "gacc.grad = %d : i64" % i)
    return s


def conv():
    B, H, W, C, F1, F2, K = 3, 4, 4, 2, 3, 2, 3
    s = Step("Two padded 3x3 convolutions (NHWC) in TOSA, average pool, "
             "linear classifier.", """
B = 3 images 4x4 with 2 channels; tosa.conv2d (pad 1, bias) to 3 channels,
ReLU, tosa.conv2d to 2 channels, ReLU, 2x2 tosa.avg_pool2d, flattened to
8 features, linear to 3 classes, softmax cross-entropy.
Backward in TOSA ops, as a TOSA frontend must spell it:
  input gradient  conv2d of dy with the weight transposed [F,K,K,C] ->
                  [C,K,K,F] and reversed along both kernel axes (tosa.reverse)
  weight gradient conv2d with the samples as channels: x viewed [C,H,W,N]
                  (tosa.transpose) against dy viewed [F,OH,OW,N], result
                  [C,K,K,F] transposed back; the contraction runs over the
                  samples
  bias gradient   reduce_sum of dy over N, H and W
The gradients are gacc.grad results, checked against LibTorch autograd.""")
    t = s.t
    W1 = s.arg("W1", [F1, K, K, C], "gacc.param")
    c1 = s.arg("c1", [F1], "gacc.param")
    W2 = s.arg("W2", [F2, K, K, F1], "gacc.param")
    c2 = s.arg("c2", [F2], "gacc.param")
    Wl = s.arg("Wl", [(H // 2) * (W // 2) * F2, 3], "gacc.param")
    x = s.arg("x", [B, H, W, C], "gacc.batch = 0 : i64")
    labels = s.arg("labels", [B], "gacc.batch = 0 : i64", "i32")
    pad = [1, 1, 1, 1]
    t.comment("forward")
    a1 = t.conv2d(x, W1, c1, pad)
    h1 = t.clamp(a1, 0.0, 3.4028234663852886e38)
    a2 = t.conv2d(h1, W2, c2, pad)
    h2 = t.clamp(a2, 0.0, 3.4028234663852886e38)
    pooled = t.avg_pool2d(h2, 2)
    flat = t.reshape(pooled, [B, (H // 2) * (W // 2) * F2])
    logits = t.linear2d(flat, Wl)
    loss, dlogits = t.softmax_xent(logits, labels, B)
    t.comment("backward: linear, flatten, 2x2 average pool (upsampled by "
              "tosa.tile)")
    dWl = t.matmul_tn(flat, dlogits)
    dflat = t.matmul_nt(dlogits, Wl)
    up = t.tile(t.reshape(dflat, [B, H // 2, 1, W // 2, 1, F2]),
                [1, 1, 2, 1, 2, 1])
    dh2 = t.scale(t.reshape(up, [B, H, W, F2]), 0.25)
    zero = t.const(0.0, [1, 1, 1, 1])
    da2 = t.select(t.compare("greater", a2, zero), dh2, zero)
    nobias = t.const(0.0, [C])

    def weight_grad(inp, dy, fo, ci):
        t.comment("weight gradient: the samples as the contracted channels")
        xin = t.transpose(inp, [3, 1, 2, 0])
        dyw = t.transpose(dy, [3, 1, 2, 0])
        gw = t.conv2d(xin, dyw, t.const(0.0, [fo]), pad)
        return t.transpose(gw, [3, 1, 2, 0])

    dW2 = weight_grad(h1, da2, F2, F1)
    dc2 = t.reshape(t.reduce_sum(da2, 0, 1, 2), [F2])
    t.comment("input gradient: the flipped, transposed weight")
    W2f = t.reverse(t.reverse(t.transpose(W2, [3, 1, 2, 0]), 1), 2)
    dh1 = t.conv2d(da2, W2f, t.const(0.0, [F1]), pad)
    da1 = t.select(t.compare("greater", a1, zero), dh1, zero)
    dW1 = weight_grad(x, da1, F1, C)
    dc1 = t.reshape(t.reduce_sum(da1, 0, 1, 2), [F1])
    del nobias
    s.result(loss, "gacc.loss")
    for i, gr in enumerate([dW1, dc1, dW2, dc2, dWl]):
        s.result(gr, "gacc.grad = %d : i64" % i)
    return s


def blocks():
    B, D, U, P, C = 6, 6, 8, 2, 3
    s = Step("Gated MLP in TOSA: slice, concat, pad, sigmoid, erf GELU, "
             "argmax accuracy.", """
B = 6 samples of 6 features.
  u  = x W1                     [B, 8]
  v  = u[:, :4] * sigmoid(u[:, 4:])          (GLU; tosa.slice, tosa.sigmoid)
  p  = pad(x Wp, right by 1)    [B, 3]       (tosa.pad of the features)
  c  = concat(v, p)             [B, 7]       (tosa.concat on axis 1)
  q  = 0.5 c (1 + erf(c / sqrt 2))           (GELU, tosa.erf)
  logits = q W2, softmax cross-entropy, mean over the samples
  accuracy = sum (argmax logits == labels)   (tosa.argmax; a gacc.metric)
Backward in TOSA: the concat and pad gradients as tosa.slice, the GLU
gradient as tosa.concat of its two halves. Gradients are gacc.grad
results, checked against LibTorch autograd.""")
    t = s.t
    W1 = s.arg("W1", [D, U], "gacc.param")
    Wp = s.arg("Wp", [D, P], "gacc.param")
    W2 = s.arg("W2", [U // 2 + P + 1, C], "gacc.param")
    x = s.arg("x", [B, D], "gacc.batch = 0 : i64")
    labels = s.arg("labels", [B], "gacc.batch = 0 : i64", "i32")
    h = U // 2
    t.comment("forward")
    u = t.linear2d(x, W1)
    a = t.slice(u, [0, 0], [B, h])
    gt = t.slice(u, [0, h], [B, h])
    sg = t.unary("sigmoid", gt)
    v = t.mul(a, sg)
    p = t.pad(t.linear2d(x, Wp), [(0, 0), (0, 1)])
    c = t.concat([v, p], 1)
    half = t.const(0.5, [1, 1])
    ec = t.unary("erf", t.scale(c, 0.7071067811865476))
    phi = t.mul(half, t.add(t.const(1.0, [1, 1]), ec))
    q = t.mul(c, phi)
    logits = t.linear2d(q, W2)
    loss, dlogits = t.softmax_xent(logits, labels, B)
    t.comment("accuracy: argmax over the classes")
    acc = t.accuracy(logits, labels)
    t.comment("backward")
    dW2 = t.matmul_tn(q, dlogits)
    dq = t.matmul_nt(dlogits, W2)
    gauss = t.unary("exp", t.scale(t.mul(c, c), -0.5))
    dphi = t.mul(c, t.scale(gauss, 0.3989422804014327))
    dc = t.mul(dq, t.add(phi, dphi))
    dv = t.slice(dc, [0, 0], [B, h])
    dp = t.slice(dc, [0, h], [B, P])
    dWp = t.matmul_tn(x, dp)
    da = t.mul(dv, sg)
    one = t.const(1.0, [1, 1])
    dgt = t.mul(t.mul(dv, a), t.mul(sg, t.sub(one, sg)))
    du = t.concat([da, dgt], 1)
    dW1 = t.matmul_tn(x, du)
    s.result(loss, "gacc.loss")
    for i, gr in enumerate([dW1, dWp, dW2]):
        s.result(gr, "gacc.grad = %d : i64" % i)
    s.result(acc, "gacc.metric")
    return s


STEPS = {"mlp": mlp, "tokens": tokens, "conv": conv, "blocks": blocks}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", choices=sorted(STEPS))
    ap.add_argument("-o", "--output", default="-")
    args = ap.parse_args()
    text = STEPS[args.name]().render()
    if args.output == "-":
        sys.stdout.write(text)
    else:
        with open(args.output, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()

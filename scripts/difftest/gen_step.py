#!/usr/bin/env python3
"""Generates random valid gacc training steps for differential testing.

Each generated step is one `func.func @train_step` with gacc role attributes:
a forward pass made of random layers, a loss, a backward pass written op by op
from each layer's vector-Jacobian product (the generator knows every op's
VJP), optionally `shard.all_reduce` on the gradients and an SGD or AdamW update
in the step. The IR follows what torch-mlir's TorchToLinalg emits: named
`linalg.matmul` with `linalg.transpose`, `linalg.generic` contractions,
elementwise generics with broadcast maps, keepdim reductions with `(d0, 0)`
output maps (softmax, log_softmax, layer norm), `tensor.collapse_shape` /
`expand_shape` over the sample dimension, `linalg.index` position-dependent
code, gathers through `tensor.extract` in linalg bodies (embeddings from a
parameter table; with --gather, nll_loss from a captured per-sample tensor),
`tensor.concat` / `tensor.pad` / `extract_slice` / `insert_slice` on the
features, `linalg.batch_matmul` token mixing and 3-D x broadcast-weight
matmuls, and `linalg.conv_1d_ncw_fcw`. A quarter of the steps (all with
--dynamic) have a dynamic sample dimension: `tensor<?x...>` batch arguments,
the size read with `tensor.dim`, `tensor.empty(%n)`; they are compiled with
--batch-size. With --loops, some generics are written as the perfect scf.for
nests they stand for (tensor.extract / tensor.insert per element), as
hand-written steps compute them; gacc-prepare-step raises them back.

Only the Python standard library is needed (the inputs are written as .npy
files by a small writer here).

Usage:
  gen_step.py --seed=S [--gather] [--dynamic] [--loops] [-o STEP.mlir]
      [--inputs=DIR]
      prints (or writes) the step; with --inputs writes DIR/arg<i>.npy
      (DIR/rank<r>/arg<i>.npy for batch inputs when the step's config asks
      for 2 ranks) and prints the gacc-check flags to use.

`generate(seed, gather=False)` returns a Step: .mlir (text), .args (one spec
per argument, for the inputs), .config (B, micro-batch flags, ranks) and
.summary (one line naming the families used).
"""

import argparse
import array
import math
import os
import random
import re
import struct
import sys

# ----------------------------------------------------------------------------
# IR building helpers


class Dyn(int):
    """A dimension that is the batch size B times `factor` and is dynamic in
    the IR (`?`, sized by tensor.dim of a batch argument) in --dynamic steps,
    as torch.export with a symbolic batch dimension and TorchToLinalg emit
    them. Its int value is the size the step is specialized to."""

    def __new__(cls, value, factor=1):
        dim = int.__new__(cls, value)
        dim.factor = factor
        return dim

    def __mul__(self, other):
        return Dyn(int(self) * int(other), self.factor * int(other))

    __rmul__ = __mul__


def ttype(shape, et="f32"):
    if not shape:
        return "tensor<%s>" % et
    return "tensor<%sx%s>" % ("x".join("?" if isinstance(s, Dyn) else str(s)
                                       for s in shape), et)


def amap(nd, exprs):
    dims = ", ".join("d%d" % i for i in range(nd))
    return "affine_map<(%s) -> (%s)>" % (dims, ", ".join(exprs))


def fconst(x):
    """An f32 constant literal MLIR parses exactly as given."""
    return "%.9e" % x


class V:
    """An SSA tensor value."""

    def __init__(self, name, shape, et="f32"):
        self.name = name
        self.shape = tuple(shape)
        self.et = et

    @property
    def type(self):
        return ttype(self.shape, self.et)


class Builder:
    def __init__(self, rng, keepdim=True):
        self.rng = rng
        self.keepdim = keepdim
        self.lines = []
        self.counter = 0
        self.args = []      # (V, attr, spec)
        self.results = []   # (V, attr)
        self.uses_grid = False
        self.families = set()
        self.dyn_factors = set()   # the multiples of B used as sizes
        # Float constants other than the loss's sample-count normalizer: a
        # tail step (runtime-batch-size) takes one equal to B or 1/B as a
        # sample count too (README "Tail steps").
        self.float_consts = set()
        # --loops: a random.Random drawing which eligible generics are
        # written as scf.for nests (extract / insert per element), the way
        # a hand-written step computes them (issue 48).
        self.loops = None
        self.loop_nests = 0

    def size(self, d):
        """An index operand for dimension `d`: an SSA value for a dynamic
        one (defined at the function's entry), else the number."""
        if not isinstance(d, Dyn):
            return str(d)
        self.dyn_factors.add(d.factor)
        return "%nB" if d.factor == 1 else "%%nB_x%d" % d.factor

    def fresh(self, hint="v"):
        self.counter += 1
        return "%%%s%d" % (hint, self.counter)

    def emit(self, line, indent=2):
        self.lines.append(" " * indent + line)

    def comment(self, text):
        self.emit("// " + text)

    def arg(self, hint, shape, attr, spec, et="f32"):
        v = V("%%%s_%d" % (hint, len(self.args)), shape, et)
        self.args.append((v, attr, spec))
        return v

    # -- constants and fills -------------------------------------------------
    def scalar_const(self, x, et="f32"):
        n = self.fresh("c")
        if et == "index" or et.startswith("i"):
            self.emit("%s = arith.constant %d : %s" % (n, x, et))
        elif x == float("-inf"):
            self.emit("%s = arith.constant 0xFF800000 : %s" % (n, et))
        else:
            self.emit("%s = arith.constant %s : %s" % (n, fconst(x), et))
            self.float_consts.add(float(x))
        return n

    def tensor_const(self, x, count=False):
        """count: the loss's sample-count normalizer (B, 1/B)."""
        if not count:
            self.float_consts.add(float(x))
        n = self.fresh("ct")
        self.emit("%s = arith.constant dense<%s> : tensor<f32>" % (n, fconst(x)))
        return V(n, ())

    def empty(self, shape, et="f32"):
        n = self.fresh("e")
        sizes = ", ".join(self.size(d) for d in shape if isinstance(d, Dyn))
        self.emit("%s = tensor.empty(%s) : %s" % (n, sizes, ttype(shape, et)))
        return V(n, shape, et)

    def fill(self, shape, value, et="f32"):
        e = self.empty(shape, et)
        c = self.scalar_const(value, et)
        n = self.fresh("f")
        self.emit("%s = linalg.fill ins(%s : %s) outs(%s : %s) -> %s" %
                  (n, c, et, e.name, e.type, e.type))
        return V(n, shape, et)

    # -- structured ops ------------------------------------------------------
    def generic(self, ins, out_shape, out_map, iters, body, init=None,
                out_et="f32", hint="g"):
        """ins: list of (V, exprs). body(args, acc) -> result SSA name, where
        args are the block arguments of `ins` and acc the output's."""
        nd = len(iters)
        if init is None:
            init = self.empty(out_shape, out_et)
        maps = [amap(nd, ex) for _, ex in ins] + [amap(nd, out_map)]
        n = self.fresh(hint)
        header = len(self.lines)
        self.emit("%s = linalg.generic {" % n)
        self.emit("    indexing_maps = [%s]," % ", ".join(maps))
        self.emit("    iterator_types = [%s]}" %
                  ", ".join('"%s"' % it for it in iters))
        if ins:
            self.emit("    ins(%s : %s)" % (", ".join(v.name for v, _ in ins),
                                            ", ".join(v.type for v, _ in ins)))
        self.emit("    outs(%s : %s) {" % (init.name, init.type))
        bargs = [self.fresh("a") for _ in ins]
        acc = self.fresh("o")
        saved = self.lines
        self.lines = []
        res = body(bargs, acc)
        body_lines = self.lines
        self.lines = saved
        if self.loops is not None and self.loops.random() < 0.4:
            # The header lines emitted above belong to the generic form.
            head = self.lines[header:]
            del self.lines[header:]
            if self._loop_nest(ins, out_shape, out_map, iters, init, out_et,
                               bargs, acc, res, body_lines, n):
                return V(n, out_shape, out_et)
            self.lines.extend(head)
        sig = ", ".join("%s: %s" % (a, v.et) for a, (v, _) in zip(bargs, ins))
        sig = (sig + ", " if sig else "") + "%s: %s" % (acc, out_et)
        self.emit("^bb0(%s):" % sig)
        for line in body_lines:
            self.lines.append("  " + line)
        self.emit("  linalg.yield %s : %s" % (res, out_et))
        self.emit("} -> %s" % ttype(out_shape, out_et))
        return V(n, out_shape, out_et)

    def _loop_nest(self, ins, out_shape, out_map, iters, init, out_et, bargs,
                   acc, res, body_lines, name):
        """Emits the generic as the perfect scf.for nest it stands for (loops
        d0, d1, ... in order; each input element read with tensor.extract,
        the output's with tensor.extract / tensor.insert at its loops), if
        its maps are plain loop dimensions (or the constant 0 on an input)
        and its payload does not read linalg.index. Returns False (emitting
        nothing) otherwise."""
        nd = len(iters)
        plain = re.compile(r"^d(\d+)$")
        if nd == 0 or any("linalg.index" in line for line in body_lines):
            return False
        if len(set(out_map)) != len(out_map) or \
                not all(plain.match(e) for e in out_map):
            return False
        sizes = [None] * nd
        for v, exprs in list(ins) + [(V("", out_shape), out_map)]:
            for pos, e in enumerate(exprs):
                m = plain.match(e)
                if m:
                    sizes[int(m.group(1))] = v.shape[pos]
                elif e != "0":
                    return False
        if any(size is None for size in sizes):
            return False
        if init is None:
            init = self.empty(out_shape, out_et)
        self.loop_nests += 1
        self.families.add("loops")
        c0, c1 = self.fresh("c"), self.fresh("c")
        self.emit("%s = arith.constant 0 : index" % c0)
        self.emit("%s = arith.constant 1 : index" % c1)
        bounds = []
        for size in sizes:
            if isinstance(size, Dyn):
                bounds.append(self.size(size))
            else:
                b = self.fresh("c")
                self.emit("%s = arith.constant %d : index" % (b, size))
                bounds.append(b)
        ivs = [self.fresh("i") for _ in range(nd)]
        carried = [self.fresh("t") for _ in range(nd)]
        results = [name] + [self.fresh("lp") for _ in range(nd - 1)]
        ttype_ = ttype(out_shape, out_et)
        for k in range(nd):
            src = init.name if k == 0 else carried[k - 1]
            self.emit("%s = scf.for %s = %s to %s step %s iter_args(%s = %s) "
                      "-> (%s) {" % (results[k], ivs[k], c0, bounds[k], c1,
                                     carried[k], src, ttype_), 2 + 2 * k)
        inner = 2 + 2 * nd

        def index(exprs):
            return ", ".join(ivs[int(e[1:])] if e != "0" else c0
                             for e in exprs)
        for a, (v, exprs) in zip(bargs, ins):
            self.emit("%s = tensor.extract %s[%s] : %s" % (a, v.name,
                                                          index(exprs),
                                                          v.type), inner)
        text = "\n".join(body_lines)
        if re.search(re.escape(acc) + r"\b", text):
            self.emit("%s = tensor.extract %s[%s] : %s" % (
                acc, carried[-1], index(out_map), ttype_), inner)
        for line in body_lines:
            self.lines.append(" " * (2 * nd) + line)
        put = self.fresh("put")
        self.emit("%s = tensor.insert %s into %s[%s] : %s" % (
            put, res, carried[-1], index(out_map), ttype_), inner)
        self.emit("scf.yield %s : %s" % (put, ttype_), inner)
        for k in reversed(range(nd)):
            if k < nd - 1:
                self.emit("scf.yield %s : %s" % (results[k + 1], ttype_),
                          2 + 2 * (k + 1))
            self.emit("}", 2 + 2 * k)
        return True

    def op(self, text, et="f32"):
        """Emits `%n = text : et` inside a body and returns %n."""
        n = self.fresh("s")
        self.emit("%s = %s : %s" % (n, text, et))
        return n

    def matmul(self, a, b):
        out = self.fill((a.shape[0], b.shape[1]), 0.0)
        n = self.fresh("mm")
        self.emit("%s = linalg.matmul ins(%s, %s : %s, %s) outs(%s : %s) -> %s" %
                  (n, a.name, b.name, a.type, b.type, out.name, out.type,
                   out.type))
        return V(n, out.shape)

    def transpose(self, a):
        e = self.empty((a.shape[1], a.shape[0]))
        n = self.fresh("tr")
        self.emit("%s = linalg.transpose ins(%s : %s) outs(%s : %s) "
                  "permutation = [1, 0]" % (n, a.name, a.type, e.name, e.type))
        return V(n, e.shape)

    def collapse(self, a):
        """[B, T, D] -> [B*T, D]."""
        shape = (a.shape[0] * a.shape[1],) + a.shape[2:]
        groups = "[[0, 1]%s]" % "".join(", [%d]" % (i + 1)
                                        for i in range(1, len(a.shape) - 1))
        n = self.fresh("cl")
        self.emit("%s = tensor.collapse_shape %s %s : %s into %s" %
                  (n, a.name, groups, a.type, ttype(shape, a.et)))
        return V(n, shape, a.et)

    def expand(self, a, b, t):
        """[B*T, ...] -> [B, T, ...]."""
        shape = (b, t) + a.shape[1:]
        groups = "[[0, 1]%s]" % "".join(", [%d]" % (i + 1)
                                        for i in range(1, len(a.shape)))
        n = self.fresh("ex")
        self.emit("%s = tensor.expand_shape %s %s output_shape [%s] : %s into %s"
                  % (n, a.name, groups, ", ".join(self.size(s) for s in shape),
                     a.type, ttype(shape, a.et)))
        return V(n, shape, a.et)

    def reduce_sum(self, a, dims, named=None):
        """Sum of `a` over `dims` (linalg.reduce or a generic)."""
        shape = tuple(s for i, s in enumerate(a.shape) if i not in dims)
        init = self.fill(shape, 0.0)
        if named is None:
            named = self.rng.random() < 0.5
        if named:
            n = self.fresh("rd")
            i1, i2 = self.fresh("in"), self.fresh("ac")
            self.emit("%s = linalg.reduce ins(%s : %s) outs(%s : %s) "
                      "dimensions = [%s]" % (n, a.name, a.type, init.name,
                                             init.type,
                                             ", ".join(map(str, dims))))
            self.emit("  (%s: f32, %s: f32) {" % (i1, i2))
            r = self.fresh("s")
            self.emit("    %s = arith.addf %s, %s : f32" % (r, i2, i1))
            self.emit("    linalg.yield %s : f32" % r)
            self.emit("  }")
            return V(n, shape)
        nd = len(a.shape)
        ids = ["d%d" % i for i in range(nd)]
        iters = ["reduction" if i in dims else "parallel" for i in range(nd)]
        outm = [ids[i] for i in range(nd) if i not in dims]
        return self.generic([(a, ids)], shape, outm, iters,
                            lambda ar, acc: self.op(
                                "arith.addf %s, %s" % (acc, ar[0])),
                            init=init)

    def ew(self, ins, body, shape=None):
        """Elementwise generic over `shape` (default: the first input's).
        ins: list of (V, kind) with kind in id | feat | keep | scalar."""
        shape = shape or ins[0][0].shape
        nd = len(shape)
        ids = ["d%d" % i for i in range(nd)]
        lst = []
        for v, kind in ins:
            if kind == "id":
                ex = ids
            elif kind == "feat":
                ex = [ids[-1]]
            elif kind == "keep":
                ex = ids[:-1] + (["0"] if self.keepdim else [])
            elif kind == "lead":
                ex = ids[:-1]
            elif kind == "scalar":
                ex = []
            else:
                ex = kind
            lst.append((v, ex))
        return self.generic(lst, shape, ids, ["parallel"] * nd, body)

    def keep_reduce(self, ins, body_fn, init_value, combiner):
        """Reduction over the last dim. With keepdim (torch-mlir's form): output
        [..., 1] with map (d0, ..., 0), read back through the same map;
        without: output [...] with map (d0, ...). body_fn(args) -> value to
        combine."""
        shape = ins[0][0].shape
        nd = len(shape)
        ids = ["d%d" % i for i in range(nd)]
        kept = ["0"] if self.keepdim else []
        out_shape = shape[:-1] + ((1,) if self.keepdim else ())
        init = self.fill(out_shape, init_value)
        lst = [(v, ids if k == "id" else ids[:-1] + kept) for v, k in ins]

        def body(ar, acc):
            val = body_fn(ar)
            return self.op("arith.%s %s, %s" % (combiner, acc, val))
        return self.generic(lst, out_shape, ids[:-1] + kept,
                            ["parallel"] * (nd - 1) + ["reduction"], body,
                            init=init)

    def transpose_last2(self, a):
        """[B, T, D] -> [B, D, T] (linalg.transpose, permutation [0, 2, 1])."""
        shape = (a.shape[0], a.shape[2], a.shape[1])
        e = self.empty(shape)
        n = self.fresh("tr")
        self.emit("%s = linalg.transpose ins(%s : %s) outs(%s : %s) "
                  "permutation = [0, 2, 1]" % (n, a.name, a.type, e.name,
                                               e.type))
        return V(n, shape)

    def broadcast_batch(self, a, n):
        """[K, N] -> [n, K, N]: torch-mlir's broadcastToGivenShape (a
        generic) before a batch_matmul of a 3-D by a 2-D operand."""
        shape = (n,) + a.shape
        return self.generic([(a, ["d1", "d2"])], shape, ["d0", "d1", "d2"],
                            ["parallel"] * 3, lambda ar, o: ar[0], hint="bc")

    def batch_matmul(self, a, b):
        """[B, M, K] x [B, K, N] (aten.bmm: linalg.batch_matmul)."""
        out = self.fill((a.shape[0], a.shape[1], b.shape[2]), 0.0)
        n = self.fresh("bmm")
        self.emit("%s = linalg.batch_matmul ins(%s, %s : %s, %s) outs(%s : %s)"
                  " -> %s" % (n, a.name, b.name, a.type, b.type, out.name,
                              out.type, out.type))
        return V(n, out.shape)

    def concat_last(self, parts):
        """torch.cat(parts, dim=-1): tensor.concat."""
        dim = len(parts[0].shape) - 1
        shape = parts[0].shape[:-1] + (sum(p.shape[-1] for p in parts),)
        n = self.fresh("cat")
        self.emit("%s = tensor.concat dim(%d) %s : (%s) -> %s" % (
            n, dim, ", ".join(p.name for p in parts),
            ", ".join(p.type for p in parts), ttype(shape)))
        return V(n, shape)

    def slice_last(self, a, start, size, stride=1):
        """a[..., start : start + stride * size : stride] (aten.slice:
        tensor.extract_slice)."""
        nd = len(a.shape)
        shape = a.shape[:-1] + (size,)
        n = self.fresh("sl")
        self.emit("%s = tensor.extract_slice %s[%s] [%s] [%s] : %s to %s" % (
            n, a.name, ", ".join(["0"] * (nd - 1) + [str(start)]),
            ", ".join(self.size(x) for x in shape),
            ", ".join(["1"] * (nd - 1) + [str(stride)]), a.type,
            ttype(shape)))
        return V(n, shape)

    def unslice_last(self, a, width, start, stride=1):
        """slice_backward: a inserted into zeros of width `width` at
        start::stride along the last dim (tensor.insert_slice)."""
        nd = len(a.shape)
        z = self.fill(a.shape[:-1] + (width,), 0.0)
        n = self.fresh("us")
        self.emit("%s = tensor.insert_slice %s into %s[%s] [%s] [%s] : %s "
                  "into %s" % (
                      n, a.name, z.name,
                      ", ".join(["0"] * (nd - 1) + [str(start)]),
                      ", ".join(self.size(x) for x in a.shape),
                      ", ".join(["1"] * (nd - 1) + [str(stride)]), a.type,
                      z.type))
        return V(n, z.shape)

    def pad_last(self, a, lo, hi, value=0.0):
        """F.pad(a, (lo, hi), value=value): tensor.pad of the last dim."""
        nd = len(a.shape)
        shape = a.shape[:-1] + (a.shape[-1] + lo + hi,)
        c = self.scalar_const(value)
        n = self.fresh("pad")
        self.emit("%s = tensor.pad %s low[%s] high[%s] {" % (
            n, a.name, ", ".join(["0"] * (nd - 1) + [str(lo)]),
            ", ".join(["0"] * (nd - 1) + [str(hi)])))
        self.emit("^bb0(%s):" % ", ".join(
            "%s: index" % self.fresh("i") for _ in range(nd)))
        self.emit("  tensor.yield %s : f32" % c)
        self.emit("} : %s to %s" % (a.type, ttype(shape)))
        return V(n, shape)

    def conv1d(self, xp, w, init):
        """aten.convolution, 1-D: linalg.conv_1d_ncw_fcw on the padded
        input."""
        n = self.fresh("conv")
        self.emit("%s = linalg.conv_1d_ncw_fcw {dilations = dense<1> : "
                  "vector<1xi64>, strides = dense<1> : vector<1xi64>} "
                  "ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
                      n, xp.name, w.name, xp.type, w.type, init.name,
                      init.type, init.type))
        return V(n, init.shape)

    def tensor_op(self, opname, a, b=None):
        n = self.fresh("t")
        if b is None:
            self.emit("%s = %s %s : %s" % (n, opname, a.name, a.type))
        else:
            self.emit("%s = %s %s, %s : %s" % (n, opname, a.name, b.name,
                                                a.type))
        return V(n, a.shape)

    def add(self, a, b):
        if self.rng.random() < 0.5:
            return self.tensor_op("arith.addf", a, b)
        return self.ew([(a, "id"), (b, "id")],
                       lambda ar, o: self.op("arith.addf %s, %s" % tuple(ar)))


# ----------------------------------------------------------------------------
# Layers: fwd(b, x) -> y; bwd(b, dy) -> dx (and param grads into b.grads)


class Param:
    def __init__(self, v, kind, fan_in=1):
        self.v = v
        self.kind = kind      # weight | bias | scale | table | pos
        self.fan_in = fan_in
        self.grads = []       # gradient contributions (V), summed


class Layer:
    params = ()


class Linear(Layer):
    def __init__(self, g, din, dout, tied=None, rank3=False):
        """tied: an existing [dout, din] parameter (an embedding table used
        as the output projection) instead of a new weight. rank3: the input
        is [B, T, din], which allows the "bmm" form: aten.matmul of a 3-D
        input with a 2-D weight as TorchToLinalg lowers it (the weight
        broadcast over the samples by a generic, linalg.batch_matmul), the
        weight gradient a batch_matmul summed over the samples."""
        self.din, self.dout = din, dout
        self.form = g.rng.choice(["mm", "mmT", "gen"])
        if rank3 and tied is None and g.alt.random() < 0.3:
            self.form = "bmm"
        self.bias = g.rng.random() < 0.6
        if tied is not None:
            self.form = "mmT"
            self.w = tied
            g.families.add("tied-weights")
        shape = (dout, din) if self.form == "mmT" else (din, dout)
        if tied is None:
            self.w = Param(g.arg("W", shape, "{gacc.param}", {
                "kind": "param", "init": "weight", "fan_in": din}), "weight")
        self.params = [self.w]
        if self.bias:
            self.b = Param(g.arg("b", (dout,), "{gacc.param}",
                                 {"kind": "param", "init": "bias"}), "bias")
            self.params.append(self.b)

    def fwd(self, g, x):
        g.families.add("linear-" + self.form)
        self.x = x
        lead = x.shape[:-1]
        if self.form == "bmm":
            y = g.batch_matmul(x, g.broadcast_batch(self.w.v, lead[0]))
        elif self.form == "gen":
            nl = len(lead)
            ids = ["d%d" % i for i in range(nl + 2)]
            o, k = ids[nl], ids[nl + 1]
            init = g.fill(lead + (self.dout,), 0.0)
            y = g.generic([(x, ids[:nl] + [k]), (self.w.v, [k, o])],
                          lead + (self.dout,), ids[:nl] + [o],
                          ["parallel"] * (nl + 1) + ["reduction"],
                          lambda ar, acc: g.op("arith.addf %s, %s" % (
                              acc, g.op("arith.mulf %s, %s" % tuple(ar)))),
                          init=init)
        else:
            x2 = g.collapse(x) if len(lead) == 2 else x
            w = g.transpose(self.w.v) if self.form == "mmT" else self.w.v
            y = g.matmul(x2, w)
            if len(lead) == 2:
                y = g.expand(y, lead[0], lead[1])
        if self.bias:
            y = g.ew([(y, "id"), (self.b.v, "feat")],
                     lambda ar, o: g.op("arith.addf %s, %s" % tuple(ar)))
        return y

    def bwd(self, g, dy):
        x = self.x
        lead = x.shape[:-1]
        nl = len(lead)
        if self.bias:
            self.b.grads.append(g.reduce_sum(dy, list(range(nl))))
        if self.form == "gen":
            ids = ["d%d" % i for i in range(nl + 2)]
            # dW[k, o] = sum_lead x[lead, k] dy[lead, o]; loop order random:
            # reductions first (as in lm_head_masked) or last.
            if g.rng.random() < 0.5:
                red, k, o = ids[:nl], ids[nl], ids[nl + 1]
                iters = ["reduction"] * nl + ["parallel"] * 2
            else:
                k, o, red = ids[0], ids[1], ids[2:]
                iters = ["parallel"] * 2 + ["reduction"] * nl
            init = g.fill(self.w.v.shape, 0.0)
            dw = g.generic([(x, red + [k]), (dy, red + [o])],
                           self.w.v.shape, [k, o], iters,
                           lambda ar, acc: g.op("arith.addf %s, %s" % (
                               acc, g.op("arith.mulf %s, %s" % tuple(ar)))),
                           init=init)
            self.w.grads.append(dw)
            # dx[lead, k] = sum_o dy[lead, o] W[k, o]
            init = g.fill(lead + (self.din,), 0.0)
            k, o = ids[nl], ids[nl + 1]
            return g.generic([(dy, ids[:nl] + [o]), (self.w.v, [k, o])],
                             lead + (self.din,), ids[:nl] + [k],
                             ["parallel"] * (nl + 1) + ["reduction"],
                             lambda ar, acc: g.op("arith.addf %s, %s" % (
                                 acc, g.op("arith.mulf %s, %s" % tuple(ar)))),
                             init=init)
        if self.form == "bmm":
            # autograd of matmul: grad_other = self^T @ grad summed to the
            # weight's shape, grad_self = grad @ other^T (broadcast again)
            dwb = g.batch_matmul(g.transpose_last2(x), dy)
            self.w.grads.append(g.reduce_sum(dwb, [0]))
            return g.batch_matmul(
                dy, g.broadcast_batch(g.transpose(self.w.v), lead[0]))
        x2 = g.collapse(x) if nl == 2 else x
        dy2 = g.collapse(dy) if nl == 2 else dy
        if self.form == "mm":
            self.w.grads.append(g.matmul(g.transpose(x2), dy2))
            dx = g.matmul(dy2, g.transpose(self.w.v))
        else:  # W stored [dout, din]
            self.w.grads.append(g.matmul(g.transpose(dy2), x2))
            dx = g.matmul(dy2, self.w.v)
        if nl == 2:
            dx = g.expand(dx, lead[0], lead[1])
        return dx


class Act(Layer):
    KINDS = ["tanh", "relu_max", "relu_sel", "sigmoid", "exp_tanh",
             "tanh_tensor"]

    def __init__(self, g, kind=None):
        self.kind = kind or g.rng.choice(self.KINDS)
        if kind is None and g.alt.random() < 0.15:
            # nn.GELU(): torch-mlir's aten.gelu with approximate="none",
            # x * 0.5 * (1 + erf(x / sqrt(2)))
            self.kind = "gelu_erf"

    def fwd(self, g, x):
        g.families.add("act-" + self.kind)
        self.x = x
        k = self.kind
        if k == "tanh_tensor":
            self.y = g.tensor_op("math.tanh", x)
            return self.y

        def body(ar, o):
            a = ar[0]
            if k == "tanh":
                return g.op("math.tanh %s" % a)
            if k == "relu_max":
                return g.op("arith.maximumf %s, %s" % (a, g.scalar_const(0.0)))
            if k == "relu_sel":
                z = g.scalar_const(0.0)
                c = g.op("arith.cmpf ogt, %s, %s" % (a, z), "f32")
                # cmpf's type is its operand type; the result is i1
                return g.op("arith.select %s, %s, %s" % (c, a, z))
            if k == "sigmoid":
                one = g.scalar_const(1.0)
                e = g.op("math.exp %s" % g.op("arith.negf %s" % a))
                return g.op("arith.divf %s, %s" % (
                    one, g.op("arith.addf %s, %s" % (one, e))))
            if k == "exp_tanh":
                return g.op("math.exp %s" % g.op("math.tanh %s" % a))
            if k == "gelu_erf":
                e = g.op("math.erf %s" % g.op("arith.mulf %s, %s" % (
                    a, g.scalar_const(1.0 / math.sqrt(2.0)))))
                h = g.op("arith.mulf %s, %s" % (a, g.scalar_const(0.5)))
                return g.op("arith.mulf %s, %s" % (
                    h, g.op("arith.addf %s, %s" % (g.scalar_const(1.0), e))))
            raise AssertionError(k)
        self.y = g.ew([(x, "id")], body)
        return self.y

    def bwd(self, g, dy):
        k = self.kind
        one = None
        if k in ("tanh", "tanh_tensor"):
            def body(ar, o):
                d, y = ar
                y2 = g.op("arith.mulf %s, %s" % (y, y))
                return g.op("arith.mulf %s, %s" % (
                    d, g.op("arith.subf %s, %s" % (g.scalar_const(1.0), y2))))
            return g.ew([(dy, "id"), (self.y, "id")], body)
        if k in ("relu_max", "relu_sel"):
            def body(ar, o):
                d, x = ar
                z = g.scalar_const(0.0)
                c = g.op("arith.cmpf ogt, %s, %s" % (x, z), "f32")
                if k == "relu_sel":
                    return g.op("arith.select %s, %s, %s" % (c, d, z))
                # torch.maximum splits the gradient between tied operands:
                # at x == 0 the input gets half of it.
                e = g.op("arith.cmpf oeq, %s, %s" % (x, z), "f32")
                h = g.op("arith.mulf %s, %s" % (d, g.scalar_const(0.5)))
                tie = g.op("arith.select %s, %s, %s" % (e, h, z))
                return g.op("arith.select %s, %s, %s" % (c, d, tie))
            return g.ew([(dy, "id"), (self.x, "id")], body)
        if k == "sigmoid":
            def body(ar, o):
                d, y = ar
                om = g.op("arith.subf %s, %s" % (g.scalar_const(1.0), y))
                return g.op("arith.mulf %s, %s" % (
                    d, g.op("arith.mulf %s, %s" % (y, om))))
            return g.ew([(dy, "id"), (self.y, "id")], body)
        if k == "exp_tanh":
            def body(ar, o):
                d, x, y = ar
                t = g.op("math.tanh %s" % x)
                t2 = g.op("arith.mulf %s, %s" % (t, t))
                om = g.op("arith.subf %s, %s" % (g.scalar_const(1.0), t2))
                return g.op("arith.mulf %s, %s" % (
                    d, g.op("arith.mulf %s, %s" % (y, om))))
            return g.ew([(dy, "id"), (self.x, "id"), (self.y, "id")], body)
        if k == "gelu_erf":
            # d/dx = 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
            def body(ar, o):
                d, x = ar
                e = g.op("math.erf %s" % g.op("arith.mulf %s, %s" % (
                    x, g.scalar_const(1.0 / math.sqrt(2.0)))))
                cdf = g.op("arith.mulf %s, %s" % (
                    g.op("arith.addf %s, %s" % (g.scalar_const(1.0), e)),
                    g.scalar_const(0.5)))
                x2 = g.op("arith.mulf %s, %s" % (x, x))
                pdf = g.op("arith.mulf %s, %s" % (
                    g.op("math.exp %s" % g.op("arith.mulf %s, %s" % (
                        x2, g.scalar_const(-0.5)))),
                    g.scalar_const(1.0 / math.sqrt(2.0 * math.pi))))
                return g.op("arith.mulf %s, %s" % (d, g.op(
                    "arith.addf %s, %s" % (cdf, g.op("arith.mulf %s, %s" % (
                        x, pdf))))))
            return g.ew([(dy, "id"), (self.x, "id")], body)
        raise AssertionError(k)


class Scale(Layer):
    """y = x * s (s a per-feature parameter, broadcast over samples)."""

    def __init__(self, g, d):
        self.s = Param(g.arg("s", (d,), "{gacc.param}",
                             {"kind": "param", "init": "scale"}), "scale")
        self.params = [self.s]

    def fwd(self, g, x):
        g.families.add("scale")
        self.x = x
        return g.ew([(x, "id"), (self.s.v, "feat")],
                    lambda ar, o: g.op("arith.mulf %s, %s" % tuple(ar)))

    def bwd(self, g, dy):
        x = self.x
        nd = len(x.shape)
        ids = ["d%d" % i for i in range(nd)]
        init = g.fill(self.s.v.shape, 0.0)
        # ds[d] = sum_lead dy * x: feature loop first or last
        if g.rng.random() < 0.5:
            perm = ids
            iters = ["reduction"] * (nd - 1) + ["parallel"]
            f, lead = ids[-1], ids[:-1]
        else:
            f, lead = ids[0], ids[1:]
            iters = ["parallel"] + ["reduction"] * (nd - 1)
        ds = g.generic([(dy, lead + [f]), (x, lead + [f])], self.s.v.shape,
                       [f], iters,
                       lambda ar, acc: g.op("arith.addf %s, %s" % (
                           acc, g.op("arith.mulf %s, %s" % tuple(ar)))),
                       init=init)
        self.s.grads.append(ds)
        return g.ew([(dy, "id"), (self.s.v, "feat")],
                    lambda ar, o: g.op("arith.mulf %s, %s" % tuple(ar)))


class PosScale(Layer):
    """y = x * c(i), c(i) = 1 + 0.25 * (i mod 3), i = linalg.index of a loop
    (the sample loop: global positions; the token loop; the feature loop)."""

    def __init__(self, g, nd):
        self.dim = g.rng.randrange(nd)

    def coef(self, g):
        i = g.fresh("ix")
        g.emit("%s = linalg.index %d : index" % (i, self.dim))
        three = g.scalar_const(3, "index")
        r = g.op("arith.remui %s, %s" % (i, three), "index")
        ri = g.fresh("s")
        g.emit("%s = arith.index_cast %s : index to i64" % (ri, r))
        rf = g.fresh("s")
        g.emit("%s = arith.sitofp %s : i64 to f32" % (rf, ri))
        q = g.op("arith.mulf %s, %s" % (rf, g.scalar_const(0.25)))
        return g.op("arith.addf %s, %s" % (q, g.scalar_const(1.0)))

    def fwd(self, g, x):
        g.families.add("index-d%d" % self.dim)
        return g.ew([(x, "id")], lambda ar, o: g.op(
            "arith.mulf %s, %s" % (ar[0], self.coef(g))))

    def bwd(self, g, dy):
        return g.ew([(dy, "id")], lambda ar, o: g.op(
            "arith.mulf %s, %s" % (ar[0], self.coef(g))))


class PosEmbed(Layer):
    """y[b, t, d] = x[b, t, d] + P[t, d] (3-D activations only)."""

    def __init__(self, g, t, d):
        self.p = Param(g.arg("P", (t, d), "{gacc.param}",
                             {"kind": "param", "init": "bias"}), "pos")
        self.params = [self.p]

    def fwd(self, g, x):
        g.families.add("pos-embed")
        return g.ew([(x, "id"), (self.p.v, ["d1", "d2"])],
                    lambda ar, o: g.op("arith.addf %s, %s" % tuple(ar)))

    def bwd(self, g, dy):
        self.p.grads.append(g.reduce_sum(dy, [0]))
        return dy


class Softmax(Layer):
    """softmax or log_softmax over the features, keepdim (d0, 0) maps."""

    def __init__(self, g, log=None):
        self.log = g.rng.random() < 0.5 if log is None else log

    def fwd(self, g, x):
        g.families.add("log_softmax" if self.log else "softmax")
        mx = g.keep_reduce([(x, "id")], lambda ar: ar[0], float("-inf"),
                           "maximumf")
        e = g.ew([(x, "id"), (mx, "keep")], lambda ar, o: g.op(
            "math.exp %s" % g.op("arith.subf %s, %s" % tuple(ar))))
        s = g.keep_reduce([(e, "id")], lambda ar: ar[0], 0.0, "addf")
        if self.log:
            def body(ar, o):
                xv, m, sv = ar
                return g.op("arith.subf %s, %s" % (
                    g.op("arith.subf %s, %s" % (xv, m)),
                    g.op("math.log %s" % sv)))
            self.y = g.ew([(x, "id"), (mx, "keep"), (s, "keep")], body)
        else:
            self.y = g.ew([(e, "id"), (s, "keep")], lambda ar, o: g.op(
                "arith.divf %s, %s" % tuple(ar)))
        return self.y

    def bwd(self, g, dy):
        if self.log:
            t = g.keep_reduce([(dy, "id")], lambda ar: ar[0], 0.0, "addf")

            def body(ar, o):
                d, y, tv = ar
                p = g.op("math.exp %s" % y)
                return g.op("arith.subf %s, %s" % (
                    d, g.op("arith.mulf %s, %s" % (p, tv))))
            return g.ew([(dy, "id"), (self.y, "id"), (t, "keep")], body)
        t = g.keep_reduce([(dy, "id"), (self.y, "id")],
                          lambda ar: g.op("arith.mulf %s, %s" % tuple(ar)),
                          0.0, "addf")

        def body(ar, o):
            d, y, tv = ar
            return g.op("arith.mulf %s, %s" % (
                y, g.op("arith.subf %s, %s" % (d, tv))))
        return g.ew([(dy, "id"), (self.y, "id"), (t, "keep")], body)


class LayerNorm(Layer):
    """y = (x - mean) * rsqrt(var + eps) over the features (no affine)."""

    def fwd(self, g, x):
        g.families.add("layer_norm")
        d = x.shape[-1]
        s = g.keep_reduce([(x, "id")], lambda ar: ar[0], 0.0, "addf")
        inv_d = 1.0 / d

        def center(ar, o):
            return g.op("arith.subf %s, %s" % (ar[0], g.op(
                "arith.mulf %s, %s" % (ar[1], g.scalar_const(inv_d)))))
        xc = g.ew([(x, "id"), (s, "keep")], center)
        q = g.keep_reduce([(xc, "id")], lambda ar: g.op(
            "arith.mulf %s, %s" % (ar[0], ar[0])), 0.0, "addf")

        def rstd(ar, o):
            var = g.op("arith.mulf %s, %s" % (ar[0], g.scalar_const(inv_d)))
            return g.op("math.rsqrt %s" % g.op(
                "arith.addf %s, %s" % (var, g.scalar_const(1e-5))))
        self.r = g.ew([(q, "id")], rstd)
        self.y = g.ew([(xc, "id"), (self.r, "keep")], lambda ar, o: g.op(
            "arith.mulf %s, %s" % tuple(ar)))
        return self.y

    def bwd(self, g, dy):
        d = dy.shape[-1]
        g1 = g.keep_reduce([(dy, "id")], lambda ar: ar[0], 0.0, "addf")
        g2 = g.keep_reduce([(dy, "id"), (self.y, "id")], lambda ar: g.op(
            "arith.mulf %s, %s" % tuple(ar)), 0.0, "addf")

        def body(ar, o):
            dv, y, r, a, b = ar
            inv_d = g.scalar_const(1.0 / d)
            t = g.op("arith.subf %s, %s" % (dv, g.op(
                "arith.mulf %s, %s" % (a, inv_d))))
            u = g.op("arith.mulf %s, %s" % (y, g.op(
                "arith.mulf %s, %s" % (b, inv_d))))
            return g.op("arith.mulf %s, %s" % (r, g.op(
                "arith.subf %s, %s" % (t, u))))
        return g.ew([(dy, "id"), (self.y, "id"), (self.r, "keep"),
                     (g1, "keep"), (g2, "keep")], body)


class Residual(Layer):
    """y = x + f(x), f a short stack of width-preserving layers."""

    def __init__(self, g, d, inner):
        self.inner = inner
        self.params = [p for l in inner for p in l.params]

    def fwd(self, g, x):
        g.families.add("residual")
        h = x
        for l in self.inner:
            h = l.fwd(g, h)
        return g.add(x, h)

    def bwd(self, g, dy):
        d = dy
        for l in reversed(self.inner):
            d = l.bwd(g, d)
        return g.add(dy, d)


class Roll(Layer):
    """A gather of a captured per-sample tensor through tensor.extract with
    computed indices (the issue's upsample/concat-style gathers):
      "feature":  y[.., d] = a x[.., d] + b x[.., (d + s) mod D]
      "captured": y[.., d] = x[.., (d + s) mod D], a generic whose only
                  per-sample value is captured (no per-sample operand)
      "sample":   y[i, ..] = x[i, ..] + b x[(i + 1) mod N, ..], a cross-sample
                  gather: the pipeline must refuse it at m >= 2
    The VJP is the inverse shift of dy, read the same way."""

    def __init__(self, g, kind=None):
        self.kind = kind or g.rng.choice(["feature", "feature", "captured",
                                          "sample"])
        self.a = 0.0 if self.kind == "captured" else 1.0
        self.b = 0.5 if self.kind != "captured" else 1.0

    def shifted(self, g, src, shift):
        """Emits the generic y = a src + b src[shifted index]."""
        nd = len(src.shape)
        dim = 0 if self.kind == "sample" else nd - 1
        size = src.shape[dim]
        shift %= size

        def body(ar, o):
            idx = []
            for k in range(nd):
                i = g.fresh("ix")
                g.emit("%s = linalg.index %d : index" % (i, k))
                idx.append(i)
            sh = g.scalar_const(shift, "index")
            n = g.scalar_const(size, "index")
            t = g.op("arith.addi %s, %s" % (idx[dim], sh), "index")
            idx[dim] = g.op("arith.remui %s, %s" % (t, n), "index")
            v = g.fresh("s")
            g.emit("%s = tensor.extract %s[%s] : %s" % (
                v, src.name, ", ".join(idx), src.type))
            r = g.op("arith.mulf %s, %s" % (v, g.scalar_const(self.b)))
            if ar:
                r = g.op("arith.addf %s, %s" % (ar[0], r))
            return r
        if self.kind == "captured":
            return g.ew([], body, shape=src.shape)
        return g.ew([(src, "id")], body)

    def fwd(self, g, x):
        g.families.add("roll-" + self.kind)
        self.s = 1
        return self.shifted(g, x, self.s)

    def bwd(self, g, dy):
        dim = 0 if self.kind == "sample" else len(dy.shape) - 1
        return self.shifted(g, dy, dy.shape[dim] - self.s)


class Concat(Layer):
    """y = torch.cat([x, tanh(x)], dim=-1) (tensor.concat); the VJP splits dy
    with tensor.extract_slice (aten.slice)."""

    def fwd(self, g, x):
        g.families.add("concat")
        self.d = x.shape[-1]
        self.h = g.ew([(x, "id")], lambda ar, o: g.op("math.tanh %s" % ar[0]))
        return g.concat_last([x, self.h])

    def bwd(self, g, dy):
        d1 = g.slice_last(dy, 0, self.d)
        d2 = g.slice_last(dy, self.d, self.d)
        one = g.scalar_const(1.0)

        def body(ar, o):
            sq = g.op("arith.mulf %s, %s" % (ar[1], ar[1]))
            return g.op("arith.mulf %s, %s" % (
                ar[0], g.op("arith.subf %s, %s" % (one, sq))))
        dh = g.ew([(d2, "id"), (self.h, "id")], body)
        return g.add(d1, dh)


class PadSlice(Layer):
    """Feature-dimension data movement as torch-mlir lowers it:
      "pad":    F.pad(x, (lo, hi), value=v)  tensor.pad; VJP extract_slice
      "narrow": x[..., a : a + w]            extract_slice; VJP slice_backward
                                             (insert_slice into zeros)
      "step":   x[..., a::2]                 strided extract_slice; VJP a
                                             strided insert_slice"""

    def __init__(self, g, d):
        kinds = ["pad"] + (["narrow", "step"] if d >= 2 else [])
        self.kind = g.rng.choice(kinds)
        self.d = d
        if self.kind == "pad":
            self.lo = g.rng.randint(0, 2)
            self.hi = g.rng.randint(0 if self.lo else 1, 2)
            self.value = g.rng.choice([0.0, 0.0, 0.5])
            self.out = d + self.lo + self.hi
        elif self.kind == "narrow":
            self.w = g.rng.randint(1, d - 1)
            self.a = g.rng.randint(0, d - self.w)
            self.out = self.w
        else:
            self.a = g.rng.randint(0, 1)
            self.out = (d - self.a + 1) // 2

    def fwd(self, g, x):
        g.families.add("slice-" + self.kind)
        if self.kind == "pad":
            return g.pad_last(x, self.lo, self.hi, self.value)
        if self.kind == "narrow":
            return g.slice_last(x, self.a, self.w)
        return g.slice_last(x, self.a, self.out, 2)

    def bwd(self, g, dy):
        if self.kind == "pad":
            return g.slice_last(dy, self.lo, self.d)
        if self.kind == "narrow":
            return g.unslice_last(dy, self.d, self.a)
        return g.unslice_last(dy, self.d, self.a, 2)


class TokenMix(Layer):
    """Attention-like mixing of a sample's tokens with aten.bmm
    (linalg.batch_matmul) and aten.transpose(-1, -2) (linalg.transpose
    [0, 2, 1]) on [B, T, D]: A = c x x^T, y = A x. VJP: dA = dy x^T,
    dx = A^T dy + c (dA + dA^T) x."""

    C = 0.25

    def fwd(self, g, x):
        g.families.add("bmm")
        self.x = x
        a0 = g.batch_matmul(x, g.transpose_last2(x))
        c = g.scalar_const(self.C)
        self.a = g.ew([(a0, "id")], lambda ar, o: g.op(
            "arith.mulf %s, %s" % (ar[0], c)))
        return g.batch_matmul(self.a, x)

    def bwd(self, g, dy):
        x = self.x
        da = g.batch_matmul(dy, g.transpose_last2(x))
        dx1 = g.batch_matmul(g.transpose_last2(self.a), dy)
        dat = g.transpose_last2(da)
        c = g.scalar_const(self.C)
        s = g.ew([(da, "id"), (dat, "id")], lambda ar, o: g.op(
            "arith.mulf %s, %s" % (g.op("arith.addf %s, %s" % tuple(ar)), c)))
        return g.add(dx1, g.batch_matmul(s, x))


class Conv1d(Layer):
    """nn.Conv1d(T, T, 3, padding=1) on [B, T, D] read as NCW (channels =
    tokens), as torch-mlir lowers aten.convolution: tensor.pad of the input,
    the bias broadcast into the init, linalg.conv_1d_ncw_fcw. VJP
    (aten.convolution_backward): the weight gradient as a generic with the
    input map (n, c, k + w), the input gradient as a convolution of the
    padded output gradient with the flipped, transposed weight (a generic
    reading the weight through tensor.extract), the bias gradient a sum over
    (n, w)."""

    K = 3

    def __init__(self, g, t):
        self.t = t
        self.w = Param(g.arg("Wc", (t, t, self.K), "{gacc.param}", {
            "kind": "param", "init": "weight", "fan_in": t * self.K}),
            "weight")
        self.params = [self.w]
        self.bias = g.rng.random() < 0.6
        if self.bias:
            self.b = Param(g.arg("bc", (t,), "{gacc.param}",
                                 {"kind": "param", "init": "bias"}), "bias")
            self.params.append(self.b)

    def fwd(self, g, x):
        g.families.add("conv1d")
        self.xp = g.pad_last(x, 1, 1)
        if self.bias:
            init = g.generic([(self.b.v, ["d1"])], x.shape, ["d0", "d1", "d2"],
                             ["parallel"] * 3, lambda ar, o: ar[0])
        else:
            init = g.fill(x.shape, 0.0)
        return g.conv1d(self.xp, self.w.v, init)

    def bwd(self, g, dy):
        if self.bias:
            self.b.grads.append(g.reduce_sum(dy, [0, 2]))
        dw = g.generic([(self.xp, ["d3", "d1", "d2 + d4"]),
                        (dy, ["d3", "d0", "d4"])],
                       self.w.v.shape, ["d0", "d1", "d2"],
                       ["parallel"] * 3 + ["reduction"] * 2,
                       lambda ar, acc: g.op("arith.addf %s, %s" % (
                           g.op("arith.mulf %s, %s" % tuple(ar)), acc)),
                       init=g.fill(self.w.v.shape, 0.0))
        self.w.grads.append(dw)
        gp = g.pad_last(dy, self.K - 2, self.K - 2)
        w = self.w.v

        def flip(ar, o):
            idx = []
            for k in range(3):
                i = g.fresh("ix")
                g.emit("%s = linalg.index %d : index" % (i, k))
                idx.append(i)
            r = g.op("arith.subi %s, %s" % (
                g.scalar_const(self.K - 1, "index"), idx[2]), "index")
            v = g.fresh("s")
            g.emit("%s = tensor.extract %s[%s, %s, %s] : %s" % (
                v, w.name, idx[1], idx[0], r, w.type))
            return v
        wf = g.generic([], w.shape, ["d0", "d1", "d2"], ["parallel"] * 3, flip)
        return g.conv1d(gp, wf, g.fill(dy.shape, 0.0))


class FeatureMax(Layer):
    """y = x - amax(x, dim=-1, keepdim=True) (a max reduction with -inf as
    its init and torch-mlir's keepdim map); VJP dx = dy - [x == max] sum(dy)
    / count(x == max) over the features: torch's amax splits the gradient
    evenly among tied maxima (a padded constant can be the maximum several
    times in deep steps)."""

    def fwd(self, g, x):
        g.families.add("amax")
        self.x = x
        self.m = g.keep_reduce([(x, "id")], lambda ar: ar[0], float("-inf"),
                               "maximumf")
        return g.ew([(x, "id"), (self.m, "keep")], lambda ar, o: g.op(
            "arith.subf %s, %s" % tuple(ar)))

    def bwd(self, g, dy):
        total = g.keep_reduce([(dy, "id")], lambda ar: ar[0], 0.0, "addf")

        def is_max(ar):
            eq = g.fresh("s")
            g.emit("%s = arith.cmpf oeq, %s, %s : f32" % (eq, ar[0], ar[1]))
            return g.op("arith.select %s, %s, %s" % (
                eq, g.scalar_const(1.0), g.scalar_const(0.0)))
        count = g.keep_reduce([(self.x, "id"), (self.m, "keep")], is_max, 0.0,
                              "addf")

        def body(ar, o):
            d, x, m, t, c = ar
            eq = g.fresh("s")
            g.emit("%s = arith.cmpf oeq, %s, %s : f32" % (eq, x, m))
            share = g.op("arith.divf %s, %s" % (t, c))
            hit = g.op("arith.select %s, %s, %s" % (eq, share,
                                                     g.scalar_const(0.0)))
            return g.op("arith.subf %s, %s" % (d, hit))
        return g.ew([(dy, "id"), (self.x, "id"), (self.m, "keep"),
                     (total, "keep"), (count, "keep")], body)


class TokenMean(Layer):
    """y = x + x.mean(dim=1, keepdim=True) on [B, T, D]: a reduction over
    the tokens of each sample (output map (d0, 0, d2), or (d0, d2) without
    keepdim); VJP dx = dy + sum_t(dy) / T."""

    def reduce_tokens(self, g, v):
        b, t, d = v.shape
        kept = ["d0", "0", "d2"] if g.keepdim else ["d0", "d2"]
        shape = (b, 1, d) if g.keepdim else (b, d)
        init = g.fill(shape, 0.0)
        return g.generic([(v, ["d0", "d1", "d2"])], shape, kept,
                         ["parallel", "reduction", "parallel"],
                         lambda ar, acc: g.op("arith.addf %s, %s" % (
                             acc, ar[0])), init=init), kept

    def add_mean(self, g, v):
        total, kept = self.reduce_tokens(g, v)
        inv = g.scalar_const(1.0 / v.shape[1])
        return g.ew([(v, "id"), (total, kept)], lambda ar, o: g.op(
            "arith.addf %s, %s" % (ar[0], g.op("arith.mulf %s, %s" % (
                ar[1], inv)))))

    def fwd(self, g, x):
        g.families.add("token-mean")
        return self.add_mean(g, x)

    def bwd(self, g, dy):
        return self.add_mean(g, dy)


class Collapse(Layer):
    """[B, T, D] -> [B*T, D] (the sample dimension merged with tokens)."""

    def fwd(self, g, x):
        g.families.add("collapse")
        self.b, self.t = x.shape[0], x.shape[1]
        return g.collapse(x)

    def bwd(self, g, dy):
        return g.expand(dy, self.b, self.t)


class Expand(Layer):
    def __init__(self, b, t):
        self.b, self.t = b, t

    def fwd(self, g, x):
        g.families.add("expand")
        return g.expand(x, self.b, self.t)

    def bwd(self, g, dy):
        return g.collapse(dy)


class Embedding(Layer):
    """y[lead, d] = table[ids[lead], d] via tensor.extract in the body
    (torch-mlir's aten.embedding lowering); the gradient is a one-hot
    scatter-add written as a reduction over the samples."""

    def __init__(self, g, ids, vocab, d):
        self.ids, self.vocab, self.d = ids, vocab, d
        self.t = Param(g.arg("T", (vocab, d), "{gacc.param}",
                             {"kind": "param", "init": "bias"}), "table")
        self.params = [self.t]

    def fwd(self, g, _x):
        g.families.add("embedding")
        lead = self.ids.shape
        nl = len(lead)
        ids = ["d%d" % i for i in range(nl + 1)]

        def body(ar, o):
            i = g.fresh("s")
            g.emit("%s = arith.index_cast %s : i64 to index" % (i, ar[0]))
            j = g.fresh("ix")
            g.emit("%s = linalg.index %d : index" % (j, nl))
            v = g.fresh("s")
            g.emit("%s = tensor.extract %s[%s, %s] : %s" %
                   (v, self.t.v.name, i, j, self.t.v.type))
            return v
        return g.generic([(self.ids, ids[:nl])], lead + (self.d,), ids,
                         ["parallel"] * (nl + 1), body)

    def bwd(self, g, dy):
        nl = len(self.ids.shape)
        ids = ["d%d" % i for i in range(nl + 2)]
        lead = ids[2:]
        init = g.fill((self.vocab, self.d), 0.0)

        def body(ar, acc):
            idv, dv = ar
            v = g.fresh("ix")
            g.emit("%s = linalg.index 0 : index" % v)
            vi = g.fresh("s")
            g.emit("%s = arith.index_cast %s : index to i64" % (vi, v))
            c = g.fresh("s")
            g.emit("%s = arith.cmpi eq, %s, %s : i64" % (c, vi, idv))
            sel = g.op("arith.select %s, %s, %s" % (c, dv,
                                                     g.scalar_const(0.0)))
            return g.op("arith.addf %s, %s" % (acc, sel))
        self.t.grads.append(g.generic(
            [(self.ids, lead), (dy, lead + ["d1"])], (self.vocab, self.d),
            ["d0", "d1"], ["parallel", "parallel"] + ["reduction"] * nl, body,
            init=init))
        return None


# ----------------------------------------------------------------------------
# The step


class Step:
    pass


def sizes_split(rng, b, m):
    """A random split of b into m positive sizes."""
    cuts = sorted(rng.sample(range(1, b), m - 1))
    return [e - s for s, e in zip([0] + cuts, cuts + [b])]


def generate(seed, gather=False, keepdim=True, dynamic=None, depth=None,
             loops=False):
    """dynamic: the sample dimension is dynamic (`?`) in the IR and the step
    is compiled with --batch-size; None draws it (a quarter of the steps).
    depth: the number of layers drawn (default: 1 to 4), for deep steps
    (bench/compile_time.py --graph random)."""
    rng = random.Random(seed)
    g = Builder(rng, keepdim)
    # Draws added after the generator's first release come from generators
    # of their own, so that the steps of existing seeds stay as they were.
    g.alt = random.Random(seed * 131 + 3)
    if loops:
        g.loops = random.Random(seed * 613 + 5)
    extra_layers = random.Random(seed * 257 + 9)
    if dynamic is None:
        dynamic = random.Random(seed * 977 + 11).random() < 0.25
    B = rng.choice([2, 3, 4, 4, 6, 8])
    if dynamic:
        B = Dyn(B)
    seq = rng.random() < 0.4
    T = rng.choice([2, 3]) if seq else None
    D0 = rng.choice([2, 3, 4, 5])
    lead = (B, T) if seq else (B,)
    nl = len(lead)

    head = rng.choice(["mse", "ce", "ce"] + (["gather", "gather"]
                                             if gather else []))
    norm = rng.choice(["mean", "sumB", "dim", "token"])
    if head in ("ce", "gather") and rng.random() < 0.3:
        norm = "valid"   # mean over targets != ignore_index (torch-mlir)
    C = rng.choice([2, 3, 4, 5])

    # -- inputs ----------------------------------------------------------------
    embed = rng.random() < 0.25
    tie = embed and rng.random() < 0.4
    if embed:
        vocab = C if tie else rng.choice([3, 5, 7])
        tokens = g.arg("tok", lead, "{gacc.batch = 0 : i64}",
                       {"kind": "batch", "init": "index", "bound": vocab},
                       et="i64")
    else:
        x = g.arg("x", lead + (D0,), "{gacc.batch = 0 : i64}",
                  {"kind": "batch", "init": "normal"})
    if head == "mse":
        target = g.arg("y", lead + (C,), "{gacc.batch = 0 : i64}",
                       {"kind": "batch", "init": "normal"})
    else:
        labels = g.arg("lab", lead, "{gacc.batch = 0 : i64}",
                       {"kind": "batch", "init": "index", "bound": C,
                        "ignore": -100 if norm == "valid" else None},
                       et="i64")
    if norm == "token":
        mask = g.arg("mask", lead, "{gacc.batch = 0 : i64}",
                     {"kind": "batch", "init": "mask"})

    # -- layers ------------------------------------------------------------------
    layers = []
    if embed:
        emb = Embedding(g, tokens, vocab, D0)
        layers.append(emb)
    d = D0
    collapsed = False
    nlayers = rng.randint(1, 4)
    if depth is not None:
        nlayers = depth
    for i in range(nlayers):
        last = i == nlayers - 1
        choices = ["linear", "linear", "act", "scale", "pos", "softmax",
                   "layernorm", "residual"]
        if gather:
            choices += ["roll"]
        if d <= 4:
            choices += ["concat"]
        choices += ["padslice"]
        if seq and not collapsed:
            choices += ["collapse", "posembed", "bmm", "conv1d"]
        if seq and collapsed:
            choices += ["expand"]
        kind = rng.choice(choices)
        if last and kind != "linear" and d != C:
            kind = "linear"
        cur_nd = (1 if collapsed else nl) + 1
        if kind == "linear":
            dout = C if last else rng.choice([2, 3, 4, 5, 6])
            layers.append(Linear(g, d, dout, rank3=seq and not collapsed))
            d = dout
        elif kind == "act":
            layers.append(Act(g))
        elif kind == "scale":
            layers.append(Scale(g, d))
        elif kind == "pos":
            layers.append(PosScale(g, cur_nd))
        elif kind == "softmax":
            layers.append(Softmax(g))
        elif kind == "layernorm":
            if d < 2:
                layers.append(Act(g))
            elif d == 2:
                # Over two features layer norm is degenerate (x_hat = +-1 up
                # to eps): the gradients below it are rounding noise, and the
                # backward check compares noise. tanh draws nothing, so the
                # seeds' other draws stay as they were.
                layers.append(Act(g, "tanh"))
            else:
                layers.append(LayerNorm())
        elif kind == "residual":
            inner = [Linear(g, d, d)]
            if rng.random() < 0.7:
                inner.append(Act(g, rng.choice(["tanh", "relu_max",
                                                "sigmoid"])))
            layers.append(Residual(g, d, inner))
        elif kind == "roll":
            layers.append(Roll(g))
        elif kind == "collapse":
            layers.append(Collapse())
            collapsed = True
        elif kind == "expand":
            layers.append(Expand(B, T))
            collapsed = False
        elif kind == "posembed":
            layers.append(PosEmbed(g, T, d))
        elif kind == "concat":
            layers.append(Concat())
            d *= 2
        elif kind == "padslice":
            layers.append(PadSlice(g, d))
            d = layers[-1].out
        elif kind == "bmm":
            layers.append(TokenMix())
        elif kind == "conv1d":
            layers.append(Conv1d(g, T))
        # Shape-preserving layers added after the first release, drawn apart
        # so that the other draws stay as they were.
        extra = extra_layers.random()
        if extra < 0.08:
            layers.append(FeatureMax())
        elif extra < 0.16 and seq and not collapsed:
            layers.append(TokenMean())
    if not any(l.params for l in layers):
        layers.append(Linear(g, d, C))
        d = C
    if tie:
        # the embedding table [C, D0] is also the output projection
        if d != D0:
            layers.append(Linear(g, d, D0))
        layers.append(Linear(g, D0, C, tied=emb.t))
        d = C
    elif d != C:
        layers.append(Linear(g, d, C))
        d = C
    # the head works on [lead..., C] (expanded back) or on [B*T, C] with the
    # batch inputs it reads collapsed as well
    head_collapsed = False
    if collapsed:
        if rng.random() < 0.5:
            layers.append(Expand(B, T))
        else:
            head_collapsed = True

    # state (optimizer) arguments come after the batch inputs
    opt = rng.choice(["none", "none", "sgd", "adamw"])
    clip = opt != "none" and rng.random() < 0.4
    allreduce = rng.random() < 0.5
    ar_kind = rng.choice(["sum", "average"])
    ranks = 2 if rng.random() < 0.25 else 1

    # -- config -------------------------------------------------------------------
    m = 1 if rng.random() < 0.1 else rng.randint(2, min(B, 4))
    cfg = {"B": int(B), "ranks": ranks, "dynamic": dynamic}
    r = rng.random()
    if m > 1 and r < 0.3:
        cfg["micro_batch_sizes"] = sizes_split(rng, B, m)
    else:
        cfg["micro_batches"] = m
    # Interleaved sizes a, b, b, a: the b regions become a loop between
    # regions of the other size (gacc-outline-micro-batches). Drawn from a
    # generator of its own, so that the other draws stay as they were.
    alt = random.Random(seed * 31 + 7)
    if B in (6, 8) and alt.random() < 0.15:
        edge = alt.choice([1, B // 2 - 1])
        cfg.pop("micro_batches", None)
        cfg["micro_batch_sizes"] = [edge, B // 2 - edge, B // 2 - edge, edge]

    # -- emit the forward ---------------------------------------------------------
    g.comment("================= forward =================")
    h = None if embed else x
    for l in layers:
        h = l.fwd(g, h)

    def headin(v):
        return g.collapse(v) if head_collapsed else v
    hl = h.shape[:-1]
    hnl = len(hl)
    ids = ["d%d" % i for i in range(hnl + 1)]
    g.comment("================= loss (%s, %s) =================" % (head, norm))
    one = None
    if head == "mse":
        tg = headin(target)
        r = g.ew([(h, "id"), (tg, "id")], lambda ar, o: g.op(
            "arith.subf %s, %s" % tuple(ar)))
        init = g.fill(hl, 0.0)
        rowloss = g.generic([(r, ids)], hl, ids[:-1],
                            ["parallel"] * hnl + ["reduction"],
                            lambda ar, acc: g.op("arith.addf %s, %s" % (
                                acc, g.op("arith.mulf %s, %s" % (ar[0],
                                                                 ar[0])))),
                            init=init)
        g.families.add("mse")
    else:
        lab = headin(labels)
        sm = Softmax(g, log=True)
        logp = sm.fwd(g, h)
        ignore = -100 if norm == "valid" else None
        if head == "ce":
            g.families.add("nll-onehot")
            init = g.fill(hl, 0.0)

            def body(ar, acc):
                lp, lb = ar
                c = g.fresh("ix")
                g.emit("%s = linalg.index %d : index" % (c, hnl))
                ci = g.fresh("s")
                g.emit("%s = arith.index_cast %s : index to i64" % (ci, c))
                eq = g.fresh("s")
                g.emit("%s = arith.cmpi eq, %s, %s : i64" % (eq, ci, lb))
                sel = g.op("arith.select %s, %s, %s" % (
                    eq, lp, g.scalar_const(0.0)))
                return g.op("arith.addf %s, %s" % (
                    acc, g.op("arith.negf %s" % sel)))
            rowloss = g.generic([(logp, ids), (lab, ids[:-1])], hl, ids[:-1],
                                ["parallel"] * hnl + ["reduction"], body,
                                init=init)
        else:
            g.families.add("nll-gather")

            def body(ar, o):
                lb = ar[0]
                idx = []
                for k in range(hnl):
                    i = g.fresh("ix")
                    g.emit("%s = linalg.index %d : index" % (i, k))
                    idx.append(i)
                lbv = lb
                if ignore is not None:
                    valid = g.fresh("s")
                    ig = g.fresh("c")
                    g.emit("%s = arith.constant %d : i64" % (ig, ignore))
                    g.emit("%s = arith.cmpi ne, %s, %s : i64" % (valid, lb, ig))
                    z = g.fresh("c")
                    g.emit("%s = arith.constant 0 : i64" % z)
                    lbv = g.fresh("s")
                    g.emit("%s = arith.select %s, %s, %s : i64" %
                           (lbv, valid, lb, z))
                ti = g.fresh("s")
                g.emit("%s = arith.index_cast %s : i64 to index" % (ti, lbv))
                v = g.fresh("s")
                g.emit("%s = tensor.extract %s[%s] : %s" %
                       (v, logp.name, ", ".join(idx + [ti]), logp.type))
                n = g.op("arith.negf %s" % v)
                if ignore is not None:
                    n = g.op("arith.select %s, %s, %s" % (
                        valid, n, g.scalar_const(0.0)))
                return n
            rowloss = g.generic([(lab, ids[:-1])], hl, ids[:-1],
                                ["parallel"] * hnl, body)

    # the loss and the per-row seed of the backward (dL/drowloss)
    red_dims = list(range(hnl))
    count = 1
    for s in hl:
        count *= s
    count_metric = None
    if norm in ("mean", "sumB"):
        total = g.reduce_sum(rowloss, red_dims)
        den = count if norm == "mean" else B
        if rng.random() < 0.5:
            inv = g.tensor_const(1.0 / den, count=True)
            loss = g.tensor_op("arith.mulf", total, inv)
        else:
            inv = g.tensor_op("arith.divf", g.tensor_const(1.0),
                              g.tensor_const(float(den), count=True))
            loss = g.tensor_op("arith.divf", total,
                               g.tensor_const(float(den), count=True))
        seed_scalar = inv
        seed_row = None
    elif norm == "dim":
        src = tokens if embed else x
        c0 = g.scalar_const(0, "index")
        n = g.fresh("dim")
        g.emit("%s = tensor.dim %s, %s : %s" % (n, src.name, c0, src.type))
        ni = g.fresh("s")
        g.emit("%s = arith.index_cast %s : index to i64" % (ni, n))
        nf = g.fresh("s")
        g.emit("%s = arith.sitofp %s : i64 to f32" % (nf, ni))
        e = g.empty(())
        nt = g.fresh("f")
        g.emit("%s = linalg.fill ins(%s : f32) outs(%s : tensor<f32>) -> "
               "tensor<f32>" % (nt, nf, e.name))
        nt = V(nt, ())
        total = g.reduce_sum(rowloss, red_dims)
        loss = g.tensor_op("arith.divf", total, nt)
        seed_scalar = g.tensor_op("arith.divf", g.tensor_const(1.0), nt)
        seed_row = None
    elif norm == "token":
        mk = headin(mask)
        cnt = g.reduce_sum(mk, list(range(len(mk.shape))))
        init = g.fill((), 0.0)
        nd = len(hl)
        wsum = g.generic([(mk, ids[:-1]), (rowloss, ids[:-1])], (), [],
                         ["reduction"] * nd,
                         lambda ar, acc: g.op("arith.addf %s, %s" % (
                             acc, g.op("arith.mulf %s, %s" % tuple(ar)))),
                         init=init)
        loss = g.tensor_op("arith.divf", wsum, cnt)
        inv = g.tensor_op("arith.divf", g.tensor_const(1.0), cnt)
        seed_row = g.ew([(mk, "id"), (inv, "scalar")], lambda ar, o: g.op(
            "arith.mulf %s, %s" % tuple(ar)), shape=hl)
        seed_scalar = None
        count_metric = cnt
        g.families.add("token-count")
    elif norm == "valid":
        # torch-mlir: count of targets != ignore_index as i32, extracted and
        # converted, divided inside the sum's body
        nd = len(hl)
        cinit = g.fill((), 0, "i32")

        def cbody(ar, acc):
            ig = g.fresh("c")
            g.emit("%s = arith.constant -100 : i64" % ig)
            ne = g.fresh("s")
            g.emit("%s = arith.cmpi ne, %s, %s : i64" % (ne, ar[0], ig))
            ext = g.fresh("s")
            g.emit("%s = arith.extui %s : i1 to i32" % (ext, ne))
            return g.op("arith.addi %s, %s" % (acc, ext), "i32")
        cnt_i = g.generic([(lab, ids[:-1])], (), [], ["reduction"] * nd, cbody,
                          init=cinit, out_et="i32")
        ci = g.fresh("s")
        g.emit("%s = tensor.extract %s[] : tensor<i32>" % (ci, cnt_i.name))
        cf = g.fresh("s")
        g.emit("%s = arith.sitofp %s : i32 to f32" % (cf, ci))
        init = g.fill((), 0.0)
        loss = g.generic([(rowloss, ids[:-1])], (), [], ["reduction"] * nd,
                         lambda ar, acc: g.op("arith.addf %s, %s" % (
                             g.op("arith.divf %s, %s" % (ar[0], cf)), acc)),
                         init=init)
        e = g.empty(())
        tw = g.fresh("f")
        g.emit("%s = linalg.fill ins(%s : f32) outs(%s : tensor<f32>) -> "
               "tensor<f32>" % (tw, cf, e.name))
        tw = V(tw, ())
        seed_scalar = None
        seed_row = None
        g.families.add("ignore-index")

    # -- backward -----------------------------------------------------------------
    g.comment("================= backward =================")
    if head == "mse":
        def body(ar, o):
            rv = ar[0]
            two = g.op("arith.mulf %s, %s" % (rv, g.scalar_const(2.0)))
            return g.op("arith.mulf %s, %s" % (two, ar[1]))
        if seed_row is not None:
            dh = g.ew([(r, "id"), (seed_row, "lead")], body)
        else:
            dh = g.ew([(r, "id"), (seed_scalar, "scalar")], body)
    else:
        # torch-mlir's nll_loss_backward: d logp = -(c == label) * seed
        def gbody(ar, o):
            lb, sv = ar
            c = g.fresh("ix")
            g.emit("%s = linalg.index %d : index" % (c, hnl))
            ci = g.fresh("s")
            g.emit("%s = arith.index_cast %s : index to i64" % (ci, c))
            eq = g.fresh("s")
            g.emit("%s = arith.cmpi eq, %s, %s : i64" % (eq, ci, lb))
            if norm == "valid":
                # labels equal to ignore_index never match a class index
                ng = g.op("arith.negf %s" % g.op(
                    "arith.divf %s, %s" % (g.scalar_const(1.0), sv)))
            else:
                ng = g.op("arith.negf %s" % sv)
            return g.op("arith.select %s, %s, %s" % (eq, ng,
                                                      g.scalar_const(0.0)))
        if norm == "valid":
            glogp = g.ew([(lab, "lead"), (tw, "scalar")], gbody, shape=h.shape)
        elif seed_row is not None:
            glogp = g.ew([(lab, "lead"), (seed_row, "lead")], gbody,
                         shape=h.shape)
        else:
            glogp = g.ew([(lab, "lead"), (seed_scalar, "scalar")], gbody,
                         shape=h.shape)
        dh = sm.bwd(g, glogp)
    if head_collapsed:
        pass  # the layers' activations are already [B*T, C]
    dy = dh
    for l in reversed(layers):
        dy = l.bwd(g, dy)

    # -- gradients, collectives, optimizer ----------------------------------------
    params = []
    for l in layers:
        for p in l.params:
            if all(p is not q for q in params):
                params.append(p)
    g.comment("================= gradients =================")
    grads = []
    for p in params:
        gv = p.grads[0]
        for extra in p.grads[1:]:
            gv = g.add(gv, extra)
        if allreduce:
            n = g.fresh("ar")
            g.emit("%s = shard.all_reduce %s on @dp grid_axes = [0] "
                   "reduction = %s : %s -> %s" % (n, gv.name, ar_kind, gv.type,
                                                  gv.type))
            gv = V(n, gv.shape)
            g.uses_grid = True
        grads.append(gv)
    if allreduce:
        g.families.add("all_reduce-" + ar_kind)

    class ArgIndex:
        def __getitem__(self, key):
            for i, a in enumerate(g.args):
                if id(a[0]) == key:
                    return i
            raise KeyError(key)
    arg_index = ArgIndex()
    results = [(loss, "{gacc.loss}")]
    for p, gv in zip(params, grads):
        results.append((gv, "{gacc.grad = %d : i64}" % arg_index[id(p.v)]))
    if opt != "none":
        g.families.add(opt)
        g.comment("================= %s =================" % opt)
    ograds = grads
    if clip:
        # global-norm clipping (torch.nn.utils.clip_grad_norm_, max_norm 0.5)
        g.families.add("clip")
        total = None
        for gv in grads:
            nd = len(gv.shape)
            ids = ["d%d" % i for i in range(nd)]
            sq = g.generic([(gv, ids)], (), [], ["reduction"] * nd,
                           lambda ar, acc: g.op("arith.addf %s, %s" % (
                               acc, g.op("arith.mulf %s, %s" % (ar[0],
                                                                ar[0])))),
                           init=g.fill((), 0.0))
            total = sq if total is None else g.tensor_op("arith.addf", total,
                                                         sq)
        gnorm = g.tensor_op("math.sqrt", total)
        den = g.tensor_op("arith.addf", gnorm, g.tensor_const(1e-6))
        coef = g.tensor_op("arith.divf", g.tensor_const(0.5), den)
        scale = g.tensor_op("arith.minimumf", coef, g.tensor_const(1.0))
        ograds = [g.ew([(gv, "id"), (scale, "scalar")], lambda ar, o: g.op(
            "arith.mulf %s, %s" % tuple(ar))) for gv in grads]
    if opt == "sgd":
        lr = g.arg("lr", (), "{gacc.state}", {"kind": "state", "init": "lr"})
        for p, gv in zip(params, ograds):
            nd = len(p.v.shape)
            po = g.ew([(p.v, "id"), (gv, "id"), (lr, "scalar")],
                      lambda ar, o: g.op("arith.subf %s, %s" % (
                          ar[0], g.op("arith.mulf %s, %s" % (ar[2], ar[1])))))
            results.append((po, "{gacc.param_out = %d : i64}" %
                            arg_index[id(p.v)]))
    elif opt == "adamw":
        step = g.arg("step", (), "{gacc.state}", {"kind": "state",
                                                  "init": "zeros"})
        one_t = g.tensor_const(1.0)
        t = g.tensor_op("arith.addf", step, one_t)
        b1t = g.tensor_op("math.powf", g.tensor_const(0.9), t)
        b2t = g.tensor_op("math.powf", g.tensor_const(0.999), t)
        bc1 = g.tensor_op("arith.subf", one_t, b1t)
        bc2 = g.tensor_op("arith.subf", one_t, b2t)
        ss = g.tensor_op("arith.divf", g.tensor_const(0.01), bc1)
        bs = g.tensor_op("math.sqrt", bc2)
        for p, gv in zip(params, ograds):
            idx = arg_index[id(p.v)]
            mm = g.arg("m", p.v.shape, "{gacc.state}", {"kind": "state",
                                                        "init": "zeros"})
            vv = g.arg("v", p.v.shape, "{gacc.state}", {"kind": "state",
                                                        "init": "zeros"})

            def mbody(ar, o):
                a = g.op("arith.mulf %s, %s" % (g.scalar_const(0.9), ar[0]))
                b = g.op("arith.mulf %s, %s" % (g.scalar_const(0.1), ar[1]))
                return g.op("arith.addf %s, %s" % (a, b))
            mo = g.ew([(mm, "id"), (gv, "id")], mbody)

            def vbody(ar, o):
                a = g.op("arith.mulf %s, %s" % (g.scalar_const(0.999), ar[0]))
                q = g.op("arith.mulf %s, %s" % (ar[1], ar[1]))
                b = g.op("arith.mulf %s, %s" % (g.scalar_const(0.001), q))
                return g.op("arith.addf %s, %s" % (a, b))
            vo = g.ew([(vv, "id"), (gv, "id")], vbody)

            def wbody(ar, o):
                w, mv, vvv, s1, s2 = ar
                wd = g.op("arith.mulf %s, %s" % (w, g.scalar_const(0.9999)))
                sv = g.op("math.sqrt %s" % vvv)
                dv = g.op("arith.divf %s, %s" % (sv, s2))
                den = g.op("arith.addf %s, %s" % (dv, g.scalar_const(1e-8)))
                up = g.op("arith.divf %s, %s" % (mv, den))
                us = g.op("arith.mulf %s, %s" % (s1, up))
                return g.op("arith.subf %s, %s" % (wd, us))
            wo = g.ew([(p.v, "id"), (mo, "id"), (vo, "id"), (ss, "scalar"),
                       (bs, "scalar")], wbody)
            results.append((wo, "{gacc.param_out = %d : i64}" % idx))
            results.append((mo, "{gacc.state_out = %d : i64}" %
                            arg_index[id(mm)]))
            results.append((vo, "{gacc.state_out = %d : i64}" %
                            arg_index[id(vv)]))
        results.append((t, "{gacc.state_out = %d : i64}" % arg_index[id(step)]))
    if count_metric is not None and rng.random() < 0.5:
        results.append((count_metric, "{gacc.metric}"))
    if rng.random() < 0.2:
        g.families.add("per-sample-metric")
        results.append((rowloss, "{gacc.metric}"))

    g.emit("return %s : %s" % (", ".join(v.name for v, _ in results),
                               ", ".join(v.type for v, _ in results)))

    # -- assemble -----------------------------------------------------------------
    out = []
    fam = sorted(g.families)
    summary = "B=%d%s%s head=%s norm=%s opt=%s layers=%d families=%s" % (
        B, " (dynamic)" if dynamic else "", " T=%d" % T if seq else "", head,
        norm, opt, len(layers), ",".join(fam))
    out.append("// Generated by scripts/difftest/gen_step.py --seed=%d%s%s%s%s"
               % (seed, " --gather" if gather else "",
                "" if keepdim else " --no-keepdim",
                " --loops" if loops else "",
                " (dynamic batch: --batch-size=%d)" % int(B) if dynamic
                else ""))
    out.append("// " + summary)
    if g.uses_grid:
        out.append('shard.grid @dp(shape = ?) {sym_visibility = "private"}')
    out.append("func.func @train_step(")
    for i, (v, attr, _) in enumerate(g.args):
        sep = "," if i + 1 < len(g.args) else ")"
        out.append("    %s: %s %s%s" % (v.name, v.type, attr, sep))
    out.append("    -> (%s) {" % ", ".join("%s %s" % (v.type, a)
                                           for v, a in results))
    if g.dyn_factors:
        # The batch size as TorchToLinalg reads it: tensor.dim of a batch
        # argument, and its multiples for merged [B*T] dimensions.
        first = next(v for v, _, spec in g.args if spec["kind"] == "batch")
        out.append("  %c0_dyn = arith.constant 0 : index")
        out.append("  %%nB = tensor.dim %s, %%c0_dyn : %s" % (first.name,
                                                            first.type))
        for f in sorted(g.dyn_factors - {1}):
            out.append("  %%cB_%d = arith.constant %d : index" % (f, f))
            out.append("  %%nB_x%d = arith.muli %%nB, %%cB_%d : index" % (f, f))
    out.extend(g.lines)
    out.append("}")
    step = Step()
    step.mlir = "\n".join(out) + "\n"
    step.args = [dict(spec, shape=list(v.shape), dtype=v.et)
                 for v, _, spec in g.args]
    step.config = cfg
    step.summary = summary
    step.families = fam
    step.float_consts = g.float_consts
    return step


# ----------------------------------------------------------------------------
# Inputs


def save_npy(path, shape, values, dtype):
    """Writes a NumPy .npy file (format 1.0, little-endian, C order) with the
    standard library only. dtype: 'f32', 'i64' or 'i32'."""
    code, fmt = {"f32": ("<f4", "f"), "i64": ("<i8", "q"),
                 "i32": ("<i4", "i")}[dtype]
    shp = "(%s)" % ("".join("%d," % s for s in shape) if len(shape) == 1
                    else ", ".join(str(s) for s in shape))
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (
        code, shp)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)))
        f.write(header.encode("latin1"))
        f.write(array.array(fmt, values).tobytes()
                if sys.byteorder == "little" else
                struct.pack("<%d%s" % (len(values), fmt), *values))


def write_inputs(step, directory, seed, samples=None):
    """Writes DIR/arg<i>.npy (and DIR/rank<r>/arg<i>.npy for batch inputs
    when the step runs on several ranks). samples: keep only the first
    `samples` samples of each batch input (a tail step's batch for
    --runtime-batch-size); the values are those of the full batch."""
    rng = random.Random(seed * 7919 + 1)
    ranks = step.config["ranks"]
    os.makedirs(directory, exist_ok=True)

    def make(spec):
        shape = tuple(spec["shape"])
        size = 1
        for s in shape:
            size *= s
        init = spec["init"]
        normal = [rng.gauss(0.0, 1.0) for _ in range(size)]
        if init == "weight":
            return [v / math.sqrt(spec["fan_in"]) for v in normal]
        if init == "bias":
            return [0.3 * v for v in normal]
        if init == "scale":
            return [1.0 + 0.2 * v for v in normal]
        if init == "normal":
            return normal
        if init == "lr":
            return [0.1]
        if init == "zeros":
            return [0.0] * size
        if init == "index":
            v = [rng.randrange(spec["bound"]) for _ in range(size)]
            if spec.get("ignore") is not None:
                keep = rng.randrange(size)  # at least one valid target
                v = [spec["ignore"] if k != keep and rng.random() < 0.3 else x
                     for k, x in enumerate(v)]
            return v
        if init == "mask":
            keep = rng.randrange(size)  # at least one real token
            return [1.0 if k == keep or rng.random() < 0.7 else 0.0
                    for k in range(size)]
        raise AssertionError(init)

    def batch_values(spec):
        values = make(spec)
        if samples is None:
            return spec["shape"], values
        shape = [samples] + list(spec["shape"][1:])   # sample dim 0
        return shape, values[:len(values) // spec["shape"][0] * samples]

    for i, spec in enumerate(step.args):
        dtype = spec["dtype"]
        if spec["kind"] == "batch" and ranks > 1:
            for r in range(ranks):
                os.makedirs(os.path.join(directory, "rank%d" % r),
                            exist_ok=True)
                shape, values = batch_values(spec)
                save_npy(os.path.join(directory, "rank%d" % r, "arg%d.npy" % i),
                         shape, values, dtype)
        elif spec["kind"] == "batch":
            shape, values = batch_values(spec)
            save_npy(os.path.join(directory, "arg%d.npy" % i), shape, values,
                     dtype)
        else:
            save_npy(os.path.join(directory, "arg%d.npy" % i), spec["shape"],
                     make(spec), dtype)


def check_flags(step):
    cfg = step.config
    flags = []
    if "micro_batch_sizes" in cfg:
        flags.append("--micro-batch-sizes=" +
                     ",".join(str(s) for s in cfg["micro_batch_sizes"]))
    else:
        flags.append("--micro-batches=%d" % cfg["micro_batches"])
    if cfg["ranks"] > 1:
        flags.append("--ranks=%d" % cfg["ranks"])
    if cfg.get("dynamic"):
        flags.append("--batch-size=%d" % cfg["B"])
    return flags


def pipeline_options(step):
    cfg = step.config
    size = "batch-size=%d " % cfg["B"] if cfg.get("dynamic") else ""
    if "micro_batch_sizes" in cfg:
        return size + "micro-batch-sizes=" + ",".join(
            str(s) for s in cfg["micro_batch_sizes"])
    return size + "micro-batches=%d" % cfg["micro_batches"]


def add_generation_arguments(ap):
    """The options that choose what the steps contain (this script's and
    run.py's)."""
    ap.add_argument("--gather", action="store_true",
                    help="also generate nll_loss gathers via tensor.extract "
                    "of the captured per-sample log-probabilities")
    ap.add_argument("--no-keepdim", action="store_true",
                    help="reductions over the features (softmax, layer norm) "
                    "drop the reduced dimension instead of torch-mlir's "
                    "keepdim [..., 1] with (d0, 0) maps")
    ap.add_argument("--dynamic", action="store_true",
                    help="make the sample dimension dynamic (otherwise a "
                    "quarter of the seeds draw it)")
    ap.add_argument("--depth", type=int,
                    help="layers drawn (default 1 to 4): deep steps")
    ap.add_argument("--loops", action="store_true",
                    help="write some linalg.generic ops as the perfect "
                    "scf.for nests they stand for (tensor.extract / "
                    "tensor.insert per element), as hand-written steps do")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=0)
    add_generation_arguments(ap)
    ap.add_argument("-o", "--output", help="write the step here")
    ap.add_argument("--inputs", help="write the step's inputs to this folder")
    args = ap.parse_args()
    step = generate(args.seed, args.gather, not args.no_keepdim,
                    True if args.dynamic else None, args.depth, args.loops)
    if args.output:
        with open(args.output, "w") as f:
            f.write(step.mlir)
    else:
        sys.stdout.write(step.mlir)
    if args.inputs:
        write_inputs(step, args.inputs, args.seed)
        print(" ".join(check_flags(step) + ["--input-dir=" + args.inputs]),
              file=sys.stderr)


if __name__ == "__main__":
    main()

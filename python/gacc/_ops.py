"""Tensor operations on the emitter's logical tensors: elementwise with
broadcasting, reductions, contractions, views, slices and concatenation.

Each function emits linalg-on-tensors in the forms torch-mlir's TorchToLinalg
writes (generics with broadcast and keepdim maps, linalg.matmul /
batch_matmul on zero fills, tensor.expand_shape / collapse_shape /
extract_slice / concat) and returns a `Tensor`.
"""

import math

from ._emitter import (F32, F64, FLOATS, I1, EmitError, Tensor,
                       common_refinement, ttype)


class Ops:
    def __init__(self, emitter):
        self.e = emitter

    # ------------------------------------------------------------ helpers
    @staticmethod
    def nonunit(t, g):
        return [t.fshape[d] for d in g if t.fshape[d] != 1]

    def broadcast_shape(self, shapes):
        rank = max((len(s) for s in shapes), default=0)
        out = [1] * rank
        for s in shapes:
            for i, n in enumerate(s):
                j = rank - len(s) + i
                if n != 1:
                    if out[j] != 1 and out[j] != n:
                        raise EmitError("shapes %s do not broadcast" %
                                        (shapes, ))
                    out[j] = n
        return out

    # -------------------------------------------------------- elementwise
    def ew(self, ins, body, out_et, out_shape=None):
        """`ins`: Tensors and Python numbers; `body(b, vals)` gets one SSA
        name per input (numbers as constants of the first tensor's type or
        their own) and returns the yielded name."""
        tens = [x for x in ins if isinstance(x, Tensor)]
        shape = self.broadcast_shape([t.shape for t in tens] +
                                     ([out_shape] if out_shape else []))
        if out_shape is not None:
            shape = list(out_shape)
        rank = len(shape)
        # Common refinement per logical dim over the tensors that span it.
        seqs = []
        for j in range(rank):
            cands = []
            for t in tens:
                k = j - (rank - t.rank)
                if k >= 0 and t.shape[k] == shape[j] and shape[j] != 1:
                    cands.append(self.nonunit(t, t.groups[k]))
            if shape[j] == 1:
                seqs.append([])
                continue
            if not cands:
                seqs.append([shape[j]])
                continue
            r = common_refinement(cands)
            if r is None:
                r = [shape[j]]
                # materialize the tensors whose factorization conflicts
            seqs.append(r)
        tens2 = {}
        for t in tens:
            per = []
            for k in range(t.rank):
                j = k + rank - t.rank
                if t.shape[k] == shape[j] and shape[j] != 1:
                    per.append(seqs[j])
                else:
                    per.append(None)
            if any(p is not None and common_refinement(
                    [p, self.nonunit(t, t.groups[k])]) != p
                   for k, p in enumerate(per)):
                # A factorization that cannot be refined to the common one:
                # materialize this tensor in logical order.
                name, _ = self.e.materialize_ordered(t, t.groups)
                t2 = self.e.leaf(name, t.shape, t.et)
                t2.sample = None
                if t.sample is not None:
                    for k, g in enumerate(t.groups):
                        if t.sample in g:
                            t2.sample = k
                tens2[id(t)] = self.e.refine(t2, per)
            else:
                tens2[id(t)] = self.e.refine(t, per)
        # Output fine dims: (j, k) for each part of seqs[j] (one unit for a
        # size-1 dim). Order them like the first full-shaped tensor's
        # physical dims.
        outf = []
        for j in range(rank):
            if not seqs[j]:
                outf.append((j, 0, 1))
            for k, s in enumerate(seqs[j]):
                outf.append((j, k, s))
        lead = next((tens2[id(t)] for t in tens if t.shape == shape), None)

        def fine_of(t, j, k):
            """The fine dim of refined tensor t for output part (j, k)."""
            kk = j - (rank - t.rank)
            if kk < 0:
                return None
            g = t.groups[kk]
            if t.shape[kk] != shape[j] or shape[j] == 1:
                return None
            nu = [d for d in g if t.fshape[d] != 1]
            return nu[k]

        if lead is not None:
            def key(f):
                j, k, s = f
                d = fine_of(lead, j, k) if shape[j] != 1 else \
                    lead.groups[j][0]
                return d
            outf.sort(key=key)
        pos = {(j, k): i for i, (j, k, s) in enumerate(outf)}
        n = len(outf)
        ins_p, maps = [], []
        sample = None
        for x in ins:
            if not isinstance(x, Tensor):
                continue
            t = tens2[id(x)]
            exprs = []
            for kk, g in enumerate(t.groups):
                j = kk + rank - t.rank
                nu_i = 0
                for d in g:
                    if t.fshape[d] == 1 or t.shape[kk] != shape[j]:
                        exprs.append((d, "0"))
                    else:
                        exprs.append((d, "d%d" % pos[(j, nu_i)]))
                        if d == t.sample and sample is None:
                            sample = pos[(j, nu_i)]
                        nu_i += 1
            exprs.sort()
            ins_p.append((t.name, t.ptype, t.et))
            maps.append([ex for _, ex in exprs])
        fshape = [s for _, _, s in outf]

        def bodyfn(b, args, outs):
            vals, it = [], iter(args)
            ref_et = tens[0].et if tens else out_et
            for x in ins:
                if isinstance(x, Tensor):
                    vals.append(next(it))
                elif isinstance(x, tuple):  # (value, et)
                    vals.append(b.const(x[0], x[1]))
                else:
                    et = ref_et
                    if isinstance(x, float) and et not in FLOATS:
                        et = F32
                    vals.append(b.const(x, et))
            return body(b, vals)

        names = self.e.generic(ins_p, maps, fshape,
                               [["d%d" % i for i in range(n)]],
                               ["parallel"] * n, bodyfn, [out_et])
        groups = [[] for _ in range(rank)]
        for i, (j, k, s) in enumerate(outf):
            groups[j].append((k, i))
        groups = [[i for _, i in sorted(g)] for g in groups]
        return Tensor(names[0], fshape, groups, out_et, sample)

    def unary(self, x, fmt, et=None):
        et = et or x.et
        return self.ew([x], lambda b, v: b.op(fmt, v[0]), et)

    def binary(self, x, y, fmt, et=None):
        et = et or (x.et if isinstance(x, Tensor) else y.et)
        return self.ew([x, y], lambda b, v: b.op(fmt, v[0], v[1]), et)

    def add(self, x, y):
        return self.binary(x, y, "arith.addf %s, %s : " + self._fet(x, y))

    def sub(self, x, y):
        return self.binary(x, y, "arith.subf %s, %s : " + self._fet(x, y))

    def mul(self, x, y):
        return self.binary(x, y, "arith.mulf %s, %s : " + self._fet(x, y))

    def div(self, x, y):
        return self.binary(x, y, "arith.divf %s, %s : " + self._fet(x, y))

    @staticmethod
    def _fet(x, y):
        return x.et if isinstance(x, Tensor) else y.et

    def cast(self, x, et):
        if x.et == et:
            return x
        return self.ew([x], lambda b, v: convert(b, v[0], x.et, et), et)

    def copy(self, x, shape=None):
        return self.ew([x], lambda b, v: v[0], x.et, out_shape=shape)

    # --------------------------------------------------------- reductions
    def reduce(self, x, dims, keepdim, combine, init, et=None, pre=None):
        """Reduces the logical `dims` of `x`: `combine(b, value, acc)`;
        `pre(b, value)` maps each element first."""
        et = et or x.et
        dims = sorted(set(d % x.rank for d in dims)) if x.rank else []
        red_f = {d for k in dims for d in x.groups[k]}
        n = len(x.fshape)
        iters = ["reduction" if d in red_f else "parallel" for d in range(n)]
        # output fine dims: x's kept fine dims (physical order), plus a unit
        # per reduced logical dim with keepdim (placed at its first fine dim)
        outdims = []
        for d in range(n):
            if d not in red_f:
                outdims.append(("d%d" % d, d, x.fshape[d]))
        keep_units = {}
        if keepdim:
            for k in dims:
                first = min(x.groups[k])
                keep_units[k] = first
                outdims.append(("0", first, 1))
            outdims.sort(key=lambda o: (o[1], o[0] == "0"))
        fshape = [s for _, _, s in outdims]
        init_t = self.e.full(fshape, init, et)
        idx_of = {}
        for i, (ex, d, s) in enumerate(outdims):
            if ex != "0":
                idx_of[d] = i
        groups = []
        for k, g in enumerate(x.groups):
            if k in dims:
                if keepdim:
                    groups.append([next(i for i, o in enumerate(outdims)
                                        if o[0] == "0" and o[1] ==
                                        keep_units[k])])
            else:
                groups.append([idx_of[d] for d in g])

        def body(b, args, outs):
            v = args[0]
            if pre is not None:
                v = pre(b, v)
            return combine(b, v, outs[0])

        names = self.e.generic([(x.name, x.ptype, x.et)],
                               [["d%d" % d for d in range(n)]], fshape,
                               [[o[0] for o in outdims]], iters, body, [et],
                               inits=[(init_t.name, init_t.ptype)])
        sample = idx_of.get(x.sample) if x.sample is not None else None
        if not groups:
            # rank-0 result: fshape is [] or units only
            if fshape:
                raise EmitError("internal: keepdim of rank-0")
        return Tensor(names[0], fshape, groups, et, sample)

    def sum(self, x, dims, keepdim=False, et=None):
        et = et or x.et
        return self.reduce(
            x, dims, keepdim,
            lambda b, v, a: b.op("arith.addf %s, %s : %s", v, a, et), 0.0,
            et, pre=(None if et == x.et else
                     (lambda b, v: convert(b, v, x.et, et))))

    def amax(self, x, dims, keepdim=False):
        return self.reduce(
            x, dims, keepdim,
            lambda b, v, a: b.op("arith.maximumf %s, %s : %s", v, a, x.et),
            float("-inf"))

    def mean(self, x, dims, keepdim=False):
        n = math.prod(x.shape[d % x.rank] for d in dims) if x.rank else 1
        s = self.sum(x, dims, keepdim)
        return self.mul(s, 1.0 / n)

    # ------------------------------------------------------- contractions
    def matmul(self, a, b, batch=False, init=None):
        """a [(Bt,) M, K] x b [(Bt,) K, N] -> [(Bt,) M, N] as linalg.matmul
        or linalg.batch_matmul."""
        e = self.e
        ka, kb = (2, 1) if batch else (1, 0)
        # Refine K (and the batch dim) alike in both operands.
        pairs = [(ka, kb)] + ([(0, 0)] if batch else [])
        ra, rb = [None] * a.rank, [None] * b.rank
        for ia, ib in pairs:
            r = common_refinement([self.nonunit(a, a.groups[ia]),
                                   self.nonunit(b, b.groups[ib])])
            if r is None:
                raise EmitError("matmul operands factor their shared "
                                "dimension differently")
            ra[ia], rb[ib] = r, r
        a = e.refine(a, ra)
        b = e.refine(b, rb)

        def shared_order(ga, gb):
            # positions (in logical order) of the non-unit fine dims; the
            # sample dim of either goes first, the same position in both.
            na = [d for d in ga if a.fshape[d] != 1]
            nb = [d for d in gb if b.fshape[d] != 1]
            perm = list(range(len(na)))
            for i in range(len(na)):
                if na[i] == a.sample or nb[i] == b.sample:
                    perm.remove(i)
                    perm.insert(0, i)
                    break
            ua = [d for d in ga if a.fshape[d] == 1]
            ub = [d for d in gb if b.fshape[d] == 1]
            return [na[i] for i in perm] + ua, [nb[i] for i in perm] + ub

        def free_order(t, g):
            g = list(g)
            if t.sample in g:
                g.remove(t.sample)
                g.insert(0, t.sample)
            return g

        oa, ob = [None] * a.rank, [None] * b.rank
        oa[ka], ob[kb] = shared_order(a.groups[ka], b.groups[kb])
        if batch:
            oa[0], ob[0] = shared_order(a.groups[0], b.groups[0])
        ma, nb_ = ka - 1, kb + 1
        oa[ma] = free_order(a, a.groups[ma])
        ob[nb_] = free_order(b, b.groups[nb_])
        an, at = e.materialize_ordered(a, oa)
        bn, bt = e.materialize_ordered(b, ob)
        shape = ([a.shape[0]] if batch else []) + [a.shape[ma], b.shape[nb_]]
        if init is None:
            z = e.full(shape, 0.0, a.et)
            zn, zt = z.name, z.ptype
        else:
            zn, zt = init
        name = e.fresh("mm")
        opname = "linalg.batch_matmul" if batch else "linalg.matmul"
        e.emit("%s = %s ins(%s, %s : %s, %s) outs(%s : %s) -> %s" %
               (name, opname, an, bn, at, bt, zn, zt, zt))
        # Back to fine dims: parts in the materialized order, groups in the
        # logical order.
        parts, groups, sample = [], [], None
        srcs = ([(a, oa[0], a.groups[0])] if batch else []) + [
            (a, oa[ma], a.groups[ma]), (b, ob[nb_], b.groups[nb_])]
        for i, (t, order, logical) in enumerate(srcs):
            parts.append([t.fshape[d] for d in order])
            groups.append([order.index(d) for d in logical])
            if t.sample in order and sample is None:
                sample = (i, order.index(t.sample))
        if batch and sample is None and b.sample in ob[0]:
            sample = (0, ob[0].index(b.sample))
        return e.unmaterialize(name, a.et, parts, groups, sample)

    # -------------------------------------------------------------- views
    def permute(self, x, perm):
        perm = [p % x.rank for p in perm]
        return Tensor(x.name, x.fshape, [x.groups[p] for p in perm], x.et,
                      x.sample)

    def transpose(self, x, d0, d1):
        perm = list(range(x.rank))
        d0, d1 = d0 % x.rank, d1 % x.rank
        perm[d0], perm[d1] = perm[d1], perm[d0]
        return self.permute(x, perm)

    def view(self, x, shape):
        e = self.e
        shape = list(shape)
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape[shape.index(-1)] = x.numel() // known if known else 0
        if math.prod(shape) != x.numel():
            raise EmitError("view of %s as %s" % (x.shape, shape))
        if shape == x.shape:
            return x
        flat = [d for g in x.groups for d in g]
        sizes = [x.fshape[d] for d in flat if x.fshape[d] != 1]
        target = [s for s in shape if s != 1]
        r = common_refinement([sizes, target]) if sizes or target else []
        if r is None or r != common_refinement([r, sizes]):
            # The fine dims cannot be regrouped: move the data.
            name, _ = e.materialize_ordered(x, [flat])
            t = Tensor(name, [x.numel()], [[0]], x.et,
                       0 if x.sample is not None else None)
            return self.view(t, shape)
        # refine fine dims along the flat order
        splits, k = {}, 0
        for d in flat:
            s = x.fshape[d]
            if s == 1:
                continue
            parts = []
            while s > 1:
                parts.append(r[k])
                s //= r[k]
                k += 1
            if len(parts) > 1:
                splits[d] = parts
        x = e.expand_fine(x, splits)
        flat = [d for g in x.groups for d in g]
        # Assign fine dims to the new logical dims.
        groups, i = [], 0
        for s in shape:
            g, p = [], 1
            if s == 1:
                while i < len(flat) and x.fshape[flat[i]] == 1:
                    g.append(flat[i])
                    i += 1
                    break
            else:
                while p < s:
                    g.append(flat[i])
                    p *= x.fshape[flat[i]]
                    i += 1
            groups.append(g)
        rest = flat[i:]
        # Units left over join the last group; a size-1 dim without a fine
        # dim gets a new unit.
        if rest:
            if groups:
                groups[-1].extend(rest)
            elif all(x.fshape[d] == 1 for d in rest):
                name = e.fresh("cl")
                e.emit("%s = tensor.collapse_shape %s [] : %s into %s" %
                       (name, x.name, x.ptype, ttype([], x.et)))
                return Tensor(name, [], [], x.et, None)
        if any(not g for g in groups):
            return self._add_units(x, groups)
        return Tensor(x.name, x.fshape, groups, x.et, x.sample)

    def _add_units(self, x, groups):
        """Gives every empty group of `groups` a new unit fine dim."""
        e = self.e
        extra = sum(1 for g in groups if not g)
        if not x.fshape:
            fshape = [1] * extra
            name = e.fresh("x")
            e.emit("%s = tensor.expand_shape %s [] output_shape [%s] : %s "
                   "into %s" % (name, x.name, ", ".join("1" for _ in fshape),
                                x.ptype, ttype(fshape, x.et)))
            it = iter(range(extra))
            return Tensor(name, fshape, [[next(it)] for g in groups], x.et,
                          None)
        # append the units after the last physical dim
        reassoc = [[d] for d in range(len(x.fshape))]
        base = len(x.fshape)
        reassoc[-1].extend(range(base, base + extra))
        fshape = x.fshape + [1] * extra
        name = e.fresh("x")
        e.emit("%s = tensor.expand_shape %s %s output_shape [%s] : %s into %s"
               % (name, x.name, "[%s]" % ", ".join(
                   "[%s]" % ", ".join(str(d) for d in r) for r in reassoc),
                  ", ".join(str(s) for s in fshape), x.ptype,
                  ttype(fshape, x.et)))
        it = iter(range(base, base + extra))
        groups = [g if g else [next(it)] for g in groups]
        return Tensor(name, fshape, groups, x.et, x.sample)

    def unsqueeze(self, x, dim):
        dim = dim % (x.rank + 1)
        groups = [list(g) for g in x.groups]
        groups.insert(dim, [])
        return self._add_units(x, groups)

    def squeeze(self, x, dims=None):
        dims = range(x.rank) if dims is None else [d % x.rank for d in dims]
        shape = [s for i, s in enumerate(x.shape)
                 if not (i in dims and s == 1)]
        return self.view(x, shape)

    def materialize(self, x):
        """`x` with physical = logical (one fine dim per logical dim)."""
        if all(len(g) == 1 for g in x.groups) and \
                [g[0] for g in x.groups] == list(range(x.rank)):
            return x
        name, _ = self.e.materialize_ordered(x, x.groups)
        sample = None
        for k, g in enumerate(x.groups):
            if x.sample in g:
                sample = k
        return Tensor(name, x.shape, [[i] for i in range(x.rank)], x.et,
                      sample)

    # ----------------------------------------------------- slices, concat
    def slice(self, x, dim, start, end, step=1):
        dim = dim % x.rank
        n = x.shape[dim]
        start = max(0, min(n, start + n if start < 0 else start))
        end = max(start, min(n, end + n if end < 0 else end))
        if start == 0 and end == n and step == 1:
            return x
        g = x.groups[dim]
        if x.sample in g:
            raise EmitError("a slice of the sample dimension")
        nu = [d for d in g if x.fshape[d] != 1]
        if len(nu) != 1:
            x = self.materialize(x)
            g = x.groups[dim]
            nu = g
        f = nu[0]
        size = (end - start + step - 1) // step
        offs = ["0"] * len(x.fshape)
        sizes = [str(s) for s in x.fshape]
        strides = ["1"] * len(x.fshape)
        offs[f], sizes[f], strides[f] = str(start), str(size), str(step)
        fshape = list(x.fshape)
        fshape[f] = size
        name = self.e.fresh("sl")
        self.e.emit("%s = tensor.extract_slice %s[%s] [%s] [%s] : %s to %s" %
                    (name, x.name, ", ".join(offs), ", ".join(sizes),
                     ", ".join(strides), x.ptype, ttype(fshape, x.et)))
        return Tensor(name, fshape, x.groups, x.et, x.sample)

    def cat(self, xs, dim):
        dim = dim % xs[0].rank
        xs = [x for x in xs if x.shape[dim] != 0]
        if len(xs) == 1:
            return xs[0]
        ms = [self.materialize(x) for x in xs]
        shape = list(ms[0].shape)
        shape[dim] = sum(m.shape[dim] for m in ms)
        name = self.e.fresh("cat")
        self.e.emit("%s = tensor.concat dim(%d) %s : (%s) -> %s" %
                    (name, dim, ", ".join(m.name for m in ms), ", ".join(
                        m.ptype for m in ms), ttype(shape, xs[0].et)))
        sample = next((m.sample for m in ms if m.sample is not None), None)
        return Tensor(name, shape, [[i] for i in range(len(shape))],
                      xs[0].et, sample)


def convert(b, v, src, dst):
    """Converts scalar `v` of type `src` to `dst` in a body."""
    if src == dst:
        return v
    fl = (F32, F64, "bf16", "f16")
    width = {"f64": 64, "f32": 32, "bf16": 16, "f16": 16, "i64": 64,
             "i32": 32, "i1": 1}
    if src in fl and dst in fl:
        op = "arith.extf" if width[dst] > width[src] else "arith.truncf"
        return b.op("%s %s : %s to %s", op, v, src, dst)
    if src in fl:
        if dst == I1:
            z = b.const(0.0, src)
            return b.op("arith.cmpf une, %s, %s : %s", v, z, src)
        return b.op("arith.fptosi %s : %s to %s", v, src, dst)
    if dst in fl:
        if src == I1:
            return b.op("arith.uitofp %s : %s to %s", v, src, dst)
        return b.op("arith.sitofp %s : %s to %s", v, src, dst)
    if dst == I1:
        z = b.const(0, src)
        return b.op("arith.cmpi ne, %s, %s : %s", v, z, src)
    if width[dst] > width[src]:
        op = "arith.extui" if src == I1 else "arith.extsi"
        return b.op("%s %s : %s to %s", op, v, src, dst)
    return b.op("arith.trunci %s : %s to %s", v, src, dst)

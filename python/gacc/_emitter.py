"""MLIR text for a training step: linalg on tensors, built value by value.

A `Tensor` is a logical tensor (the shape PyTorch sees) over a physical MLIR
value. The physical value has "fine" dimensions; each logical dimension is a
group of fine dimensions, listed from major to minor. Transposes only permute
the groups and views only regroup (or split) fine dimensions, so no data moves
for them, and a view that PyTorch takes of a transposed tensor (the
sequence-first views inside nn.MultiheadAttention, which merge the sample
dimension into an inner position) never has to be materialized with the
sample dimension inside a merged dimension: gacc's batch analysis only
accepts the sample dimension as the outermost of a collapsed group.

Ops that need a tensor of a given rank (named linalg ops, tensor.concat)
materialize their operands: the fine dimensions are transposed into the order
the op needs and collapsed group by group, with the sample dimension first in
any group whose order does not matter to the op (the rows of a matmul, a
contracted dimension whose operands are ordered alike).

Standard library only.
"""

import math

F32, F64, I64, I32, I1 = "f32", "f64", "i64", "i32", "i1"
FLOATS = (F32, F64, "bf16", "f16")


class EmitError(Exception):
    """An input the emitter cannot express exactly."""


def ttype(shape, et):
    if not shape:
        return "tensor<%s>" % et
    return "tensor<%sx%s>" % ("x".join(str(s) for s in shape), et)


def amap(n, exprs):
    dims = ", ".join("d%d" % i for i in range(n))
    return "affine_map<(%s) -> (%s)>" % (dims, ", ".join(exprs))


def float_literal(x, et=F32):
    if math.isnan(x):
        return "0x7FC00000" if et == F32 else "0x7FF8000000000000"
    if math.isinf(x):
        if et == F32:
            return "0x7F800000" if x > 0 else "0xFF800000"
        return "0x7FF0000000000000" if x > 0 else "0xFFF0000000000000"
    return "%.17e" % x


def literal(x, et):
    if et in FLOATS:
        return float_literal(float(x), et)
    if et == I1:
        return "true" if x else "false"
    return str(int(x))


class Tensor:
    """A logical tensor over a physical value (see the module comment)."""

    def __init__(self, name, fshape, groups, et, sample=None):
        self.name = name
        self.fshape = list(fshape)
        self.groups = [list(g) for g in groups]
        self.et = et
        # The fine dimension that carries the samples, if any (only used to
        # order fine dimensions when materializing).
        self.sample = sample
        assert sorted(d for g in self.groups for d in g) == list(
            range(len(self.fshape))), (self.fshape, self.groups)

    @property
    def shape(self):
        return [self.gsize(g) for g in self.groups]

    @property
    def rank(self):
        return len(self.groups)

    def gsize(self, g):
        return math.prod(self.fshape[d] for d in g)

    @property
    def ptype(self):
        return ttype(self.fshape, self.et)

    def numel(self):
        return math.prod(self.fshape)


class Body:
    """The payload of a linalg op: `b.op('arith.addf %s, %s : f32', x, y)`."""

    def __init__(self, emitter):
        self.e = emitter
        self.lines = []
        self.consts = {}

    def op(self, fmt, *args):
        name = self.e.fresh("v")
        self.lines.append("%s = %s" % (name, fmt % args))
        return name

    def const(self, x, et):
        key = (repr(x), et)
        if key not in self.consts:
            self.consts[key] = self.op("arith.constant %s : %s",
                                       literal(x, et), et)
        return self.consts[key]

    def index(self, d):
        return self.op("linalg.index %d : index", d)


class Emitter:
    """Collects the ops of one function."""

    def __init__(self):
        self.lines = []
        self.counter = 0
        self.loc = None  # the location string of the ops being emitted
        self.scalars = {}

    def fresh(self, prefix="t"):
        self.counter += 1
        return "%%%s%d" % (prefix, self.counter)

    def emit(self, text, indent="    "):
        loc = ""
        if self.loc is not None and not text.endswith("{"):
            loc = " loc(%s)" % self.loc
        self.lines.append(indent + text + loc)

    def raw(self, text):
        self.lines.append(text)

    # ----------------------------------------------------------- creation
    def leaf(self, name, shape, et, sample_dim=None):
        """A function argument or other value in logical = physical order."""
        return Tensor(name, shape, [[i] for i in range(len(shape))], et,
                      sample=sample_dim)

    def empty(self, fshape, et):
        name = self.fresh("e")
        self.emit("%s = tensor.empty() : %s" % (name, ttype(fshape, et)))
        return name

    def scalar_const(self, x, et):
        key = (repr(x), et)
        if key not in self.scalars:
            name = self.fresh("c")
            self.emit("%s = arith.constant %s : %s" % (name, literal(x, et),
                                                       et))
            self.scalars[key] = name
        return self.scalars[key]

    def full(self, shape, x, et):
        e = self.empty(shape, et)
        c = self.scalar_const(x, et)
        name = self.fresh("f")
        t = ttype(shape, et)
        self.emit("%s = linalg.fill ins(%s : %s) outs(%s : %s) -> %s" %
                  (name, c, et, e, t, t))
        return self.leaf(name, shape, et)

    def constant(self, values, shape, et):
        """A dense constant from a flat list."""
        name = self.fresh("k")
        if len(set(values)) == 1:
            body = literal(values[0], et)
        else:
            body = "[%s]" % ", ".join(literal(v, et) for v in values)
            if shape:
                # dense<[...]> of a flat list: reshape via nesting
                body = _nest([literal(v, et) for v in values], shape)
        t = ttype(shape, et)
        self.emit("%s = arith.constant dense<%s> : %s" % (name, body, t))
        return self.leaf(name, shape, et)

    # -------------------------------------------------------- generic op
    def generic(self, ins, in_maps, out_fshape, out_maps, iters, body_fn,
                out_ets, inits=None):
        """Emits a linalg.generic over `len(iters)` loops. `ins`: physical
        (name, ptype, et) triples; `body_fn(b, args, outs)` returns the yielded
        names. Returns the result names."""
        n = len(iters)
        if inits is None:
            inits = [(self.empty(out_fshape, et), ttype(out_fshape, et))
                     for et in out_ets]
        maps = [amap(n, m) for m in in_maps] + [amap(n, m) for m in out_maps]
        b = Body(self)
        args = [self.fresh("a") for _ in ins]
        outs = [self.fresh("o") for _ in inits]
        ys = body_fn(b, args, outs)
        if isinstance(ys, str):
            ys = [ys]
        names = [self.fresh("g") for _ in inits]
        res = names[0] if len(names) == 1 else "%s:%d" % (names[0],
                                                           len(names))
        ins_txt = ""
        if ins:
            ins_txt = "ins(%s : %s) " % (", ".join(i[0] for i in ins),
                                         ", ".join(i[1] for i in ins))
        self.emit(
            "%s = linalg.generic {indexing_maps = [%s], iterator_types = [%s]}"
            " %souts(%s : %s) {" %
            (res, ", ".join(maps), ", ".join('"%s"' % i for i in iters),
             ins_txt, ", ".join(i[0] for i in inits), ", ".join(
                 i[1] for i in inits)))
        bbargs = ["%s: %s" % (a, i[2]) for a, i in zip(args, ins)]
        bbargs += ["%s: %s" % (o, et) for o, et in zip(outs, out_ets)]
        self.raw("    ^bb0(%s):" % ", ".join(bbargs))
        for l in b.lines:
            self.raw("      " + l)
        self.raw("      linalg.yield %s : %s" % (", ".join(ys), ", ".join(
            out_ets)))
        tys = ", ".join(ttype(out_fshape, et) for et in out_ets)
        tail = "    } -> %s" % (tys if len(out_ets) == 1 else "(%s)" % tys)
        if self.loc is not None:
            tail += " loc(%s)" % self.loc
        self.raw(tail)
        if len(names) == 1:
            return [names[0]]
        return ["%s#%d" % (names[0], i) for i in range(len(names))]

    # ---------------------------------------------------- physical edits
    def expand_fine(self, t, splits):
        """Splits fine dims: `splits[d]` = sizes replacing fine dim d (major
        to minor). Returns a new Tensor; groups keep their logical order."""
        if all(len(splits.get(d, [t.fshape[d]])) == 1
               for d in range(len(t.fshape))):
            return t
        new_fshape, reassoc, newidx = [], [], {}
        for d, s in enumerate(t.fshape):
            parts = splits.get(d, [s])
            assert math.prod(parts) == s
            newidx[d] = list(range(len(new_fshape),
                                   len(new_fshape) + len(parts)))
            reassoc.append(newidx[d])
            new_fshape.extend(parts)
        name = self.fresh("x")
        self.emit("%s = tensor.expand_shape %s %s output_shape [%s] : %s into %s"
                  % (name, t.name, _reassoc(reassoc), ", ".join(
                      str(s) for s in new_fshape), t.ptype,
                     ttype(new_fshape, t.et)))
        groups = [[i for d in g for i in newidx[d]] for g in t.groups]
        sample = None
        if t.sample is not None:
            # The samples are in the outermost part that is not a unit.
            parts = newidx[t.sample]
            sample = next((p for p in parts if new_fshape[p] != 1), parts[0])
        return Tensor(name, new_fshape, groups, t.et, sample)

    def refine(self, t, seqs):
        """Refines `t`'s fine dims so that logical dim i's fine sizes (major to
        minor, units dropped) are `seqs[i]` (a refinement of them)."""
        splits = {}
        for g, seq in zip(t.groups, seqs):
            if seq is None:
                continue
            dims = [d for d in g if t.fshape[d] != 1]
            k = 0
            for d in dims:
                s, parts = t.fshape[d], []
                while s > 1:
                    parts.append(seq[k])
                    if s % seq[k]:
                        raise EmitError("internal: bad refinement")
                    s //= seq[k]
                    k += 1
                if len(parts) > 1:
                    splits[d] = parts
        return self.expand_fine(t, splits)

    def permute_physical(self, t, order):
        """Transposes the physical value so that new fine dim i is old
        fine dim order[i]."""
        if list(order) == list(range(len(order))):
            return t
        new_fshape = [t.fshape[d] for d in order]
        e = self.empty(new_fshape, t.et)
        name = self.fresh("tr")
        self.emit("%s = linalg.transpose ins(%s : %s) outs(%s : %s) "
                  "permutation = [%s]" %
                  (name, t.name, t.ptype, e, ttype(new_fshape, t.et),
                   ", ".join(str(d) for d in order)))
        pos = {d: i for i, d in enumerate(order)}
        groups = [[pos[d] for d in g] for g in t.groups]
        sample = pos[t.sample] if t.sample is not None else None
        return Tensor(name, new_fshape, groups, t.et, sample)

    def materialize_ordered(self, t, orders):
        for g in orders:
            if t.sample in g:
                lead = [d for d in g[:g.index(t.sample)] if t.fshape[d] != 1]
                if lead:
                    raise EmitError(
                        "a view merges the sample dimension into an inner "
                        "position of a dimension, which gacc cannot split "
                        "into micro-batches")
        flat = [d for g in orders for d in g]
        p = self.permute_physical(t, flat)
        shape = [t.gsize(g) for g in orders]
        if len(p.fshape) == len(shape):
            return p.name, p.ptype
        reassoc, k = [], 0
        for g in orders:
            reassoc.append(list(range(k, k + len(g))))
            k += len(g)
        name = self.fresh("cl")
        self.emit("%s = tensor.collapse_shape %s %s : %s into %s" %
                  (name, p.name, _reassoc(reassoc), p.ptype,
                   ttype(shape, t.et)))
        return name, ttype(shape, t.et)

    def unmaterialize(self, name, et, parts, groups, sample=None):
        """The inverse of materialize: `name` has one dim per entry of
        `parts`; dim i is made of fine dims of sizes `parts[i]` (physical
        order, major to minor). `groups[i]` lists, in logical order, the
        positions within parts[i] (a permutation of range(len(parts[i])));
        `sample` is (i, position) of the sample fine dim or None."""
        shape = [math.prod(p) for p in parts]
        fshape, reassoc = [], []
        for p in parts:
            reassoc.append(list(range(len(fshape), len(fshape) + len(p))))
            fshape.extend(p)
        if len(fshape) != len(shape):
            x = self.fresh("x")
            self.emit("%s = tensor.expand_shape %s %s output_shape [%s] : "
                      "%s into %s" % (x, name, _reassoc(reassoc), ", ".join(
                          str(s) for s in fshape), ttype(shape, et),
                                      ttype(fshape, et)))
            name = x
        new_groups = [[reassoc[i][j] for j in g] for i, g in enumerate(groups)]
        s = reassoc[sample[0]][sample[1]] if sample is not None else None
        return Tensor(name, fshape, new_groups, et, s)


def _reassoc(groups):
    return "[%s]" % ", ".join("[%s]" % ", ".join(str(d) for d in g)
                              for g in groups)


def _nest(flat, shape):
    if len(shape) == 1:
        return "[%s]" % ", ".join(flat)
    step = len(flat) // shape[0]
    return "[%s]" % ", ".join(
        _nest(flat[i * step:(i + 1) * step], shape[1:])
        for i in range(shape[0]))


def common_refinement(seqs):
    """The coarsest sequence that refines every sequence of `seqs` (fine
    sizes, major to minor, same product), or None."""
    total = math.prod(seqs[0]) if seqs else 1
    cuts = set()
    for s in seqs:
        p = 1
        for x in s:
            p *= x
            cuts.add(p)
    cuts = sorted(cuts)
    out, prev = [], 1
    for c in cuts:
        if c % prev:
            return None
        if c != prev:
            out.append(c // prev)
        prev = c
    if prev != total:
        return None
    return out

"""Emit training steps in the forms torch-mlir's TorchToLinalg produces.

Standard library only. A `Graph` emits the forward ops of a step as MLIR text
(linalg on tensors, the way TorchToLinalg lowers the PyTorch ops named in each
emitter) and records, for every op, its vector-Jacobian product. `backward`
walks that tape in reverse and emits the backward ops, so the gradients are
derived mechanically rather than written by hand. `write_npy` writes NumPy
`.npy` files (for `gacc-check --input-dir`).

Used by gen_gpt_block.py and gen_fixtures.py in this folder.
"""

import math
import os
import random

NEG_INF = "0xFF800000"


def ttype(shape, et="f32"):
    if not shape:
        return "tensor<%s>" % et
    return "tensor<%sx%s>" % ("x".join(str(s) for s in shape), et)


def amap(n, exprs):
    dims = ", ".join("d%d" % i for i in range(n))
    return "affine_map<(%s) -> (%s)>" % (dims, ", ".join(exprs))


def ident(n):
    return tuple("d%d" % i for i in range(n))


def fconst(x):
    """An f32 literal MLIR accepts."""
    if isinstance(x, str):
        return x
    return "%.9e" % x


class Value:
    def __init__(self, name, shape, et="f32", grad=False):
        self.name = name
        self.shape = tuple(shape)
        self.et = et
        self.requires_grad = grad

    @property
    def type(self):
        return ttype(self.shape, self.et)


class Body:
    """Builds a linalg payload: `b('arith.addf {0}, {1} : f32', x, y)`."""

    def __init__(self, graph):
        self.g = graph
        self.lines = []

    def __call__(self, fmt, *args):
        name = self.g.fresh("v")
        self.lines.append("%s = %s" % (name, fmt.format(*args)))
        return name

    def const(self, x, et="f32"):
        return self("arith.constant %s : %s" % (fconst(x) if et == "f32" else x, et))

    def index(self, d):
        return self("linalg.index %d : index" % d)


class Graph:
    def __init__(self):
        self.lines = []
        self.counter = 0
        self.tape = []
        self.args = []
        self.consts = {}
        # keepdim=False drops the size-1 dimension of keepdim reductions (maps
        # (d0, d1) instead of (d0, 0)): a variant for evaluators without
        # constant-index output maps; the numbers are the same.
        self.keepdim = True
        # size1_zero: elementwise maps index static size-1 dimensions with 0.
        self.size1_zero = False

    def kd(self, shape):
        """(map, shape) of a keepdim reduction over the last dimension."""
        n = len(shape)
        if self.keepdim:
            return ident(n)[:-1] + ("0",), tuple(shape[:-1]) + (1,)
        return ident(n)[:-1], tuple(shape[:-1])

    # ---------------------------------------------------------------- text
    def fresh(self, prefix="t"):
        self.counter += 1
        return "%%%s%d" % (prefix, self.counter)

    def emit(self, text):
        self.lines.append("  " + text)

    def comment(self, text):
        self.lines.append("")
        self.lines.append("  // ---- " + text)

    def arg(self, name, shape, et="f32", attr="", grad=False):
        v = Value("%" + name, shape, et, grad)
        self.args.append((v, attr))
        return v

    def scalar(self, x, et="f32"):
        key = (x, et)
        if key not in self.consts:
            name = self.fresh("cst")
            lit = fconst(x) if et == "f32" else str(x)
            self.emit("%s = arith.constant %s : %s" % (name, lit, et))
            self.consts[key] = name
        return self.consts[key]

    # ------------------------------------------------------------ tensors
    def empty(self, shape, et="f32"):
        name = self.fresh("e")
        self.emit("%s = tensor.empty() : %s" % (name, ttype(shape, et)))
        return Value(name, shape, et)

    def full(self, shape, x, et="f32"):
        """tensor.empty + linalg.fill (createZeroInitTensor / createInitTensor)."""
        e = self.empty(shape, et)
        c = self.scalar(x, et)
        name = self.fresh("f")
        self.emit("%s = linalg.fill ins(%s : %s) outs(%s : %s) -> %s"
                  % (name, c, et, e.name, e.type, e.type))
        return Value(name, shape, et)

    def generic(self, ins, out_shape, out_map, iters, body, init=None,
                et="f32", n=None):
        """ins: [(Value, map exprs)]; body(b, args, out) -> yielded name."""
        n = n if n is not None else len(iters)
        if init is None:
            init = self.empty(out_shape, et)
        maps = [amap(n, m) for _, m in ins] + [amap(n, out_map)]
        b = Body(self)
        args = [self.fresh("in") for _ in ins]
        out = self.fresh("out")
        y = body(b, args, out)
        name = self.fresh("g")
        ins_txt = ""
        if ins:
            ins_txt = "ins(%s : %s) " % (", ".join(v.name for v, _ in ins),
                                         ", ".join(v.type for v, _ in ins))
        self.emit("%s = linalg.generic {indexing_maps = [%s], iterator_types = [%s]} %souts(%s : %s) {"
                  % (name, ", ".join(maps), ", ".join('"%s"' % i for i in iters),
                     ins_txt, init.name, init.type))
        bbargs = ["%s: %s" % (a, v.et) for a, (v, _) in zip(args, ins)]
        bbargs.append("%s: %s" % (out, et))
        self.lines.append("  ^bb0(%s):" % ", ".join(bbargs))
        for l in b.lines:
            self.emit("  " + l)
        self.emit("  linalg.yield %s : %s" % (y, et))
        self.emit("} -> %s" % ttype(out_shape, et))
        return Value(name, out_shape, et)

    def pointwise(self, ins, out_shape, body, et="f32"):
        n = len(out_shape)
        return self.generic(ins, out_shape, ident(n), ["parallel"] * n,
                            lambda b, a, o: body(b, *a), et=et)

    def reduce_to(self, ins, shape_in, out_map, out_shape, body, zero=0.0):
        """sum over the loops the output map leaves out (keepdim: '0')."""
        n = len(shape_in)
        used = {e for e in out_map}
        iters = ["parallel" if "d%d" % i in used else "reduction"
                 for i in range(n)]
        init = self.full(out_shape, zero)

        def red(b, a, o):
            v = body(b, *a)
            return b("arith.addf {0}, {1} : f32", v, o)
        return self.generic(ins, out_shape, out_map, iters, red, init=init)

    def transpose(self, x, perm):
        shape = tuple(x.shape[p] for p in perm)
        e = self.empty(shape, x.et)
        name = self.fresh("tr")
        self.emit("%s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [%s]"
                  % (name, x.name, x.type, e.name, e.type,
                     ", ".join(str(p) for p in perm)))
        return Value(name, shape, x.et)

    def batch_matmul_raw(self, a, b):
        shape = (a.shape[0], a.shape[1], b.shape[2])
        z = self.full(shape, 0.0)
        name = self.fresh("bmm")
        self.emit("%s = linalg.batch_matmul ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
                  % (name, a.name, b.name, a.type, b.type, z.name, z.type, z.type))
        return Value(name, shape)

    def matmul_raw(self, a, b):
        shape = (a.shape[0], b.shape[1])
        z = self.full(shape, 0.0)
        name = self.fresh("mm")
        self.emit("%s = linalg.matmul ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
                  % (name, a.name, b.name, a.type, b.type, z.name, z.type, z.type))
        return Value(name, shape)

    def collapse(self, x, reassoc):
        shape = tuple(math.prod(x.shape[i] for i in grp) for grp in reassoc)
        name = self.fresh("cl")
        self.emit("%s = tensor.collapse_shape %s [%s] : %s into %s"
                  % (name, x.name, ", ".join("[%s]" % ", ".join(str(i) for i in g)
                                              for g in reassoc),
                     x.type, ttype(shape, x.et)))
        return Value(name, shape, x.et)

    def expand(self, x, reassoc, shape):
        name = self.fresh("ex")
        self.emit("%s = tensor.expand_shape %s [%s] output_shape [%s] : %s into %s"
                  % (name, x.name, ", ".join("[%s]" % ", ".join(str(i) for i in g)
                                              for g in reassoc),
                     ", ".join(str(s) for s in shape), x.type, ttype(shape, x.et)))
        return Value(name, shape, x.et)

    def broadcast_lead(self, w, lead):
        """broadcastToGivenShape: a generic that adds leading dimensions."""
        shape = tuple(lead) + w.shape
        n = len(shape)
        k = len(lead)
        return self.pointwise_map([(w, tuple("d%d" % i for i in range(k, n)))],
                                  shape, lambda b, x: x)

    def pointwise_map(self, ins, out_shape, body):
        n = len(out_shape)
        if self.size1_zero:
            # createElementwiseLinalgGeneric: a static size-1 operand
            # dimension is indexed with the constant 0 ((d0, d1) -> (0, d1)).
            ins = [(v, tuple("0" if (e.startswith("d") and v.shape[k] == 1) else e
                             for k, e in enumerate(m))) for v, m in ins]
        return self.generic(ins, out_shape, ident(n), ["parallel"] * n,
                            lambda b, a, o: body(b, *a))

    # ------------------------------------------------------------ autodiff
    def record(self, out, inputs, vjp):
        out.requires_grad = any(i.requires_grad for i in inputs)
        if out.requires_grad:
            self.tape.append((out, inputs, vjp))
        return out

    def accumulate(self, grads, v, g):
        if g is None or not v.requires_grad:
            return
        if v.name in grads:
            old = grads[v.name]
            grads[v.name] = self.pointwise_map(
                [(old, ident(len(v.shape))), (g, ident(len(v.shape)))], v.shape,
                lambda b, x, y: b("arith.addf {0}, {1} : f32", x, y))
        else:
            grads[v.name] = g

    def backward(self, loss, seed):
        grads = {loss.name: seed}
        for out, inputs, vjp in reversed(self.tape):
            g = grads.get(out.name)
            if g is None:
                continue
            gs = vjp(g)
            for v, gi in zip(inputs, gs):
                self.accumulate(grads, v, gi)
        return grads

    # --------------------------------------------------- differentiable ops
    def binary(self, op, a, am, b, bm, out_shape):
        """aten.add/sub/mul/div.Tensor with broadcasting maps (Uncategorized.cpp)."""
        n = len(out_shape)
        fn = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf",
              "div": "arith.divf"}[op]
        out = self.pointwise_map([(a, am), (b, bm)], out_shape,
                                 lambda bb, x, y: bb(fn + " {0}, {1} : f32", x, y))
        idn = ident(n)

        def to(g_ins, m, shape, body):
            if tuple(m) == idn:
                return self.pointwise_map(g_ins, shape, body)
            return self.reduce_to(g_ins, out_shape, m, shape, body)

        def vjp(g):
            ga = gb = None
            if op == "add":
                if a.requires_grad:
                    ga = g if tuple(am) == idn else to([(g, idn)], am, a.shape, lambda bb, x: x)
                if b.requires_grad:
                    gb = g if tuple(bm) == idn else to([(g, idn)], bm, b.shape, lambda bb, x: x)
            elif op == "sub":
                if a.requires_grad:
                    ga = g if tuple(am) == idn else to([(g, idn)], am, a.shape, lambda bb, x: x)
                if b.requires_grad:
                    gb = to([(g, idn)], bm, b.shape,
                            lambda bb, x: bb("arith.negf {0} : f32", x))
            elif op == "mul":
                if a.requires_grad:
                    ga = to([(g, idn), (b, bm)], am, a.shape,
                            lambda bb, x, y: bb("arith.mulf {0}, {1} : f32", x, y))
                if b.requires_grad:
                    gb = to([(g, idn), (a, am)], bm, b.shape,
                            lambda bb, x, y: bb("arith.mulf {0}, {1} : f32", x, y))
            elif op == "div":
                if a.requires_grad:
                    ga = to([(g, idn), (b, bm)], am, a.shape,
                            lambda bb, x, y: bb("arith.divf {0}, {1} : f32", x, y))
                if b.requires_grad:
                    def db(bb, x, o, y):
                        t = bb("arith.mulf {0}, {1} : f32", x, o)
                        t = bb("arith.divf {0}, {1} : f32", t, y)
                        return bb("arith.negf {0} : f32", t)
                    gb = to([(g, idn), (out, idn), (b, bm)], bm, b.shape, db)
            return [ga, gb]
        return self.record(out, [a, b], vjp)

    def unary(self, x, fwd, dfn, uses="gxy"):
        """Elementwise op; dfn(b, g, x, y) gives the input gradient. uses: the
        operands the backward payload reads (g: gradient, x: input, y: output);
        only those become operands of the backward generic."""
        n = len(x.shape)
        out = self.pointwise_map([(x, ident(n))], x.shape, fwd)

        def vjp(g):
            ops = {"g": g, "x": x, "y": out}
            ins = [(ops[u], ident(n)) for u in uses]

            def body(b, *a):
                named = dict(zip(uses, a))
                return dfn(b, named.get("g"), named.get("x"), named.get("y"))
            return [self.pointwise_map(ins, x.shape, body)]
        return self.record(out, [x], vjp)

    def scale(self, x, c):
        """aten.mul.Scalar / aten.div.Scalar."""
        return self.unary(
            x, lambda b, v: b("arith.mulf {0}, {1} : f32", v, b.const(c)),
            lambda b, g, v, y: b("arith.mulf {0}, {1} : f32", g, b.const(c)), "g")

    def add_scalar(self, x, c):
        return self.unary(
            x, lambda b, v: b("arith.addf {0}, {1} : f32", v, b.const(c)),
            lambda b, g, v, y: g, "g")

    def rsqrt(self, x):
        def d(b, g, v, y):
            y3 = b("arith.mulf {0}, {1} : f32", y, y)
            y3 = b("arith.mulf {0}, {1} : f32", y3, y)
            t = b("arith.mulf {0}, {1} : f32", g, y3)
            return b("arith.mulf {0}, {1} : f32", t, b.const(-0.5))
        return self.unary(x, lambda b, v: b("math.rsqrt {0} : f32", v), d, "gy")

    def sum_keepdim(self, x):
        """aten.sum.dim_IntList(dim=-1, keepdim=True): output map (..., 0)."""
        n = len(x.shape)
        omap, oshape = self.kd(x.shape)
        out = self.reduce_to([(x, ident(n))], x.shape, omap, oshape, lambda b, v: v)

        def vjp(g):
            return [self.pointwise_map([(g, omap)], x.shape, lambda b, v: v)]
        return self.record(out, [x], vjp)

    def mean_keepdim(self, x):
        """aten.mean.dim(keepdim) as torch-mlir decomposes it: sum / N."""
        return self.scale(self.sum_keepdim(x), 1.0 / x.shape[-1])

    def layer_norm(self, x, gamma, beta, eps=1e-5):
        """aten.layer_norm over the last dimension as DecomposeAtenNativeLayerNormOp
        writes it: mean and var with keepdim, rsqrt, then the affine part."""
        n = len(x.shape)
        idn = ident(n)
        kd, _ = self.kd(x.shape)
        mean = self.mean_keepdim(x)
        xc = self.binary("sub", x, idn, mean, kd, x.shape)
        sq = self.binary("mul", xc, idn, xc, idn, x.shape)
        var = self.mean_keepdim(sq)
        rstd = self.rsqrt(self.add_scalar(var, eps))
        y = self.binary("mul", xc, idn, rstd, kd, x.shape)
        y = self.binary("mul", y, idn, gamma, (idn[-1],), x.shape)
        return self.binary("add", y, idn, beta, (idn[-1],), x.shape)

    def softmax(self, x, log=False):
        """aten._softmax / aten._log_softmax (dim=-1) as torch-mlir decomposes
        them (amax and sum with keepdim, Reduction.cpp); the backward is
        _softmax_backward_data / _log_softmax_backward_data."""
        n = len(x.shape)
        idn = ident(n)
        kd, kshape = self.kd(x.shape)
        iters = ["parallel"] * (n - 1) + ["reduction"]
        mx = self.generic([(x, idn)], kshape, kd, iters,
                          lambda b, a, o: b("arith.maximumf {0}, {1} : f32", a[0], o),
                          init=self.full(kshape, NEG_INF))
        sh = self.pointwise_map([(x, idn), (mx, kd)], x.shape,
                                lambda b, v, m: b("arith.subf {0}, {1} : f32", v, m))
        ex = self.pointwise_map([(sh, idn)], x.shape,
                                lambda b, v: b("math.exp {0} : f32", v))
        s = self.generic([(ex, idn)], kshape, kd, iters,
                         lambda b, a, o: b("arith.addf {0}, {1} : f32", a[0], o),
                         init=self.full(kshape, 0.0))
        if log:
            lse = self.pointwise_map([(s, ident(len(kshape)))], kshape,
                                     lambda b, v: b("math.log {0} : f32", v))
            out = self.pointwise_map([(sh, idn), (lse, kd)], x.shape,
                                     lambda b, v, l: b("arith.subf {0}, {1} : f32", v, l))
        else:
            out = self.pointwise_map([(ex, idn), (s, kd)], x.shape,
                                     lambda b, v, l: b("arith.divf {0}, {1} : f32", v, l))

        def vjp(g):
            if log:
                # dx = g - exp(y) * sum(g, keepdim)
                gs = self.generic([(g, idn)], kshape, kd, iters,
                                  lambda b, a, o: b("arith.addf {0}, {1} : f32", a[0], o),
                                  init=self.full(kshape, 0.0))

                def body(b, gv, yv, sv):
                    e = b("math.exp {0} : f32", yv)
                    t = b("arith.mulf {0}, {1} : f32", e, sv)
                    return b("arith.subf {0}, {1} : f32", gv, t)
                return [self.pointwise_map([(g, idn), (out, idn), (gs, kd)], x.shape, body)]
            # dx = y * (g - sum(g * y, keepdim))
            gy = self.pointwise_map([(g, idn), (out, idn)], x.shape,
                                    lambda b, u, v: b("arith.mulf {0}, {1} : f32", u, v))
            gs = self.generic([(gy, idn)], kshape, kd, iters,
                              lambda b, a, o: b("arith.addf {0}, {1} : f32", a[0], o),
                              init=self.full(kshape, 0.0))

            def body(b, gv, yv, sv):
                t = b("arith.subf {0}, {1} : f32", gv, sv)
                return b("arith.mulf {0}, {1} : f32", yv, t)
            return [self.pointwise_map([(g, idn), (out, idn), (gs, kd)], x.shape, body)]
        return self.record(out, [x], vjp)

    def gelu_tanh(self, x):
        """aten.gelu(approximate='tanh') (Uncategorized.cpp, one payload) and
        aten.gelu_backward(approximate='tanh')."""
        k0 = math.sqrt(2.0 / math.pi)

        def fwd(b, v):
            v3 = b("arith.mulf {0}, {1} : f32", v, v)
            v3 = b("arith.mulf {0}, {1} : f32", v3, v)
            t = b("arith.mulf {0}, {1} : f32", v3, b.const(0.044715))
            t = b("arith.addf {0}, {1} : f32", v, t)
            t = b("arith.mulf {0}, {1} : f32", t, b.const(k0))
            th = b("math.tanh {0} : f32", t)
            t = b("arith.addf {0}, {1} : f32", th, b.const(1.0))
            t = b("arith.mulf {0}, {1} : f32", v, t)
            return b("arith.mulf {0}, {1} : f32", t, b.const(0.5))

        def bwd(b, g, v, y):
            # d/dx = 0.5 (1 + th) + 0.5 x (1 - th^2) k0 (1 + 3 * 0.044715 x^2)
            v2 = b("arith.mulf {0}, {1} : f32", v, v)
            v3 = b("arith.mulf {0}, {1} : f32", v2, v)
            t = b("arith.mulf {0}, {1} : f32", v3, b.const(0.044715))
            t = b("arith.addf {0}, {1} : f32", v, t)
            t = b("arith.mulf {0}, {1} : f32", t, b.const(k0))
            th = b("math.tanh {0} : f32", t)
            left = b("arith.addf {0}, {1} : f32", th, b.const(1.0))
            left = b("arith.mulf {0}, {1} : f32", left, b.const(0.5))
            th2 = b("arith.mulf {0}, {1} : f32", th, th)
            sech = b("arith.subf {0}, {1} : f32", b.const(1.0), th2)
            inner = b("arith.mulf {0}, {1} : f32", v2, b.const(3 * 0.044715))
            inner = b("arith.addf {0}, {1} : f32", inner, b.const(1.0))
            inner = b("arith.mulf {0}, {1} : f32", inner, b.const(k0))
            r = b("arith.mulf {0}, {1} : f32", v, b.const(0.5))
            r = b("arith.mulf {0}, {1} : f32", r, sech)
            r = b("arith.mulf {0}, {1} : f32", r, inner)
            d = b("arith.addf {0}, {1} : f32", left, r)
            return b("arith.mulf {0}, {1} : f32", g, d)
        return self.unary(x, fwd, bwd, "gx")

    def bmm(self, a, b):
        """aten.bmm (Linear.cpp ConvertAtenBmmOp): linalg.batch_matmul into a
        zero-filled init; backward bmm with linalg.transpose'd operands."""
        out = self.batch_matmul_raw(a, b)

        def vjp(g):
            ga = gb = None
            if a.requires_grad:
                ga = self.batch_matmul_raw(g, self.transpose(b, [0, 2, 1]))
            if b.requires_grad:
                gb = self.batch_matmul_raw(self.transpose(a, [0, 2, 1]), g)
            return [ga, gb]
        return self.record(out, [a, b], vjp)

    def transpose_op(self, x, perm):
        """aten.transpose.int (DataMovement.cpp): linalg.transpose."""
        out = self.transpose(x, perm)
        inv = [perm.index(i) for i in range(len(perm))]
        return self.record(out, [x], lambda g: [self.transpose(g, inv)])

    def linear_bmm(self, x, w):
        """aten.matmul([B,T,K], [K,N]) (Linear.cpp ConvertAtenMatmulOp, fifth
        case): the weight broadcast to [B,K,N] by a generic, then
        linalg.batch_matmul. Backward: dx = bmm(g, broadcast(w^T)),
        dw = sum over the batch of bmm(x^T, g)."""
        B = x.shape[0]
        wb = self.broadcast_lead(w, (B,))
        out = self.batch_matmul_raw(x, wb)

        def vjp(g):
            gx = gw = None
            if x.requires_grad:
                wt = self.broadcast_lead(self.transpose(w, [1, 0]), (B,))
                gx = self.batch_matmul_raw(g, wt)
            if w.requires_grad:
                p = self.batch_matmul_raw(self.transpose(x, [0, 2, 1]), g)
                gw = self.reduce_to([(p, ident(3))], p.shape, ("d1", "d2"), w.shape,
                                    lambda b, v: v)
            return [gx, gw]
        return self.record(out, [x, w], vjp)

    def linear_mm(self, x, w):
        """aten.view + aten.mm + aten._unsafe_view (aot_autograd's trace of
        matmul on [B,T,K]): tensor.collapse_shape to [B*T,K], linalg.matmul,
        tensor.expand_shape. Backward: dx = expand(g_flat @ w^T),
        dw = x_flat^T @ g_flat."""
        B, T, K = x.shape
        N = w.shape[1]
        xf = self.collapse(x, [[0, 1], [2]])
        o = self.matmul_raw(xf, w)
        out = self.expand(o, [[0, 1], [2]], (B, T, N))

        def vjp(g):
            gf = self.collapse(g, [[0, 1], [2]])
            gx = gw = None
            if x.requires_grad:
                gx = self.expand(self.matmul_raw(gf, self.transpose(w, [1, 0])),
                                 [[0, 1], [2]], (B, T, K))
            if w.requires_grad:
                gw = self.matmul_raw(self.transpose(xf, [1, 0]), gf)
            return [gx, gw]
        return self.record(out, [x, w], vjp)

    def causal_mask(self, s):
        """aten.masked_fill(scores, ~tril, -inf) with the mask built from
        aten.arange comparisons: linalg.index 1 >= linalg.index 2 in the
        payload; backward keeps the gradient where the mask holds."""
        n = len(s.shape)
        idn = ident(n)

        def fwd(b, v):
            i = b.index(n - 2)
            j = b.index(n - 1)
            c = b("arith.cmpi sge, {0}, {1} : index", i, j)
            return b("arith.select {0}, {1}, {2} : f32", c, v, b.const(NEG_INF))
        out = self.pointwise_map([(s, idn)], s.shape, fwd)

        def vjp(g):
            def bwd(b, v):
                i = b.index(n - 2)
                j = b.index(n - 1)
                c = b("arith.cmpi sge, {0}, {1} : index", i, j)
                return b("arith.select {0}, {1}, {2} : f32", c, v, b.const(0.0))
            return [self.pointwise_map([(g, idn)], s.shape, bwd)]
        return self.record(out, [s], vjp)

    def embedding(self, table, ids):
        """aten.embedding (IndirectData.cpp ConvertAtenEmbeddingOp): a generic
        over [ids..., D] whose payload does tensor.extract %table[id, linalg.index].
        Backward (aten.embedding_dense_backward): torch-mlir decomposes it into
        index_put(accumulate), lowered to a TMTensor scatter outside linalg; the
        dense one-hot reduction over the ids is used instead, comparing the id
        with linalg.index of the vocabulary loop."""
        V, D = table.shape
        k = len(ids.shape)
        shape = ids.shape + (D,)
        n = len(shape)

        def fwd(b, a, o):
            i = b("arith.index_cast {0} : i64 to index", a[0])
            j = b.index(n - 1)
            return b("tensor.extract %s[{0}, {1}] : %s" % (table.name, table.type), i, j)
        out = self.generic([(ids, ident(k))], shape, ident(n), ["parallel"] * n, fwd)

        def vjp(g):
            # loops: ids dims..., v, d
            m = k + 2
            idsm = ident(m)[:k]
            gm = ident(m)[:k] + ("d%d" % (k + 1),)
            om = ("d%d" % k, "d%d" % (k + 1))
            iters = ["reduction"] * k + ["parallel", "parallel"]
            init = self.full(table.shape, 0.0)

            def body(b, a, o):
                i = b("arith.index_cast {0} : i64 to index", a[0])
                v = b.index(k)
                c = b("arith.cmpi eq, {0}, {1} : index", i, v)
                s = b("arith.select {0}, {1}, {2} : f32", c, a[1], b.const(0.0))
                return b("arith.addf {0}, {1} : f32", s, o)
            return [self.generic([(ids, idsm), (g, gm)], table.shape, om, iters, body,
                                 init=init)]
        return self.record(out, [table], vjp)

    def nll_loss_mean(self, logp, labels, ignore=-100):
        """aten.nll_loss_forward / nll_loss_backward (Uncategorized.cpp), mean
        over the labels that are not ignore_index, exactly as in
        nll_classifier.mlir: the per-sample extract-gather, the valid count as
        a reduction extracted to a scalar, and total_weight = numel - ignored."""
        N, C = logp.shape
        ign_i64 = self.scalar(ignore, "i64")
        ign = self.fresh("ign")
        self.emit("%s = arith.index_cast %s : i64 to index" % (ign, ign_i64))

        def gather(b, a, o):
            lab = b("arith.index_cast {0} : i64 to index", a[0])
            c = b("arith.cmpi eq, {0}, {1} : index", lab, ign)
            i = b.index(0)
            # torch-mlir extracts at the raw target (out of bounds for -100,
            # discarded by the select); the read is kept in bounds here.
            safe = b("arith.select {0}, {1}, {2} : index", c,
                     b("arith.constant 0 : index"), lab)
            x = b("tensor.extract %s[{0}, {1}] : %s" % (logp.name, logp.type), i, safe)
            x = b("arith.negf {0} : f32", x)
            return b("arith.select {0}, {1}, {2} : f32", c, b.const(0.0), x)
        nll = self.generic([(labels, ("d0",))], (N,), ("d0",), ["parallel"], gather)

        def cnt(b, a, o):
            lab = b("arith.index_cast {0} : i64 to index", a[0])
            c = b("arith.cmpi ne, {0}, {1} : index", lab, ign)
            e = b("arith.extui {0} : i1 to i32", c)
            return b("arith.addi {0}, {1} : i32", o, e)
        count = self.generic([(labels, ("d0",))], (), (), ["reduction"], cnt,
                             init=self.full((), 0, "i32"), et="i32")
        cs = self.fresh("count")
        self.emit("%s = tensor.extract %s[] : %s" % (cs, count.name, count.type))
        cf = self.fresh("countf")
        self.emit("%s = arith.sitofp %s : i32 to f32" % (cf, cs))

        def mean(b, a, o):
            d = b("arith.divf {0}, %s : f32" % cf, a[0])
            return b("arith.addf {0}, {1} : f32", d, o)
        loss = self.generic([(nll, ("d0",))], (), (), ["reduction"], mean,
                            init=self.full((), 0.0))

        def vjp(seed):
            def nig(b, a, o):
                c = b("arith.cmpi eq, {0}, %s : i64" % ign_i64, a[0])
                e = b("arith.extui {0} : i1 to i64", c)
                return b("arith.addi {0}, {1} : i64", e, o)
            ni = self.generic([(labels, ("d0",))], (), (), ["reduction"], nig,
                              init=self.full((), 0, "i64"), et="i64")
            nis = self.fresh("nign")
            self.emit("%s = tensor.extract %s[] : %s" % (nis, ni.name, ni.type))
            c0 = self.fresh("c0")
            self.emit("%s = arith.constant 0 : index" % c0)
            dim = self.fresh("dim")
            self.emit("%s = tensor.dim %s, %s : %s" % (dim, labels.name, c0, labels.type))
            numel = self.fresh("numel")
            self.emit("%s = arith.index_cast %s : index to i64" % (numel, dim))
            twi = self.fresh("twi")
            self.emit("%s = arith.subi %s, %s : i64" % (twi, numel, nis))
            twf = self.fresh("twf")
            self.emit("%s = arith.sitofp %s : i64 to f32" % (twf, twi))
            e = self.empty(())
            tw = self.fresh("tw")
            self.emit("%s = linalg.fill ins(%s : f32) outs(%s : tensor<f32>) -> tensor<f32>"
                      % (tw, twf, e.name))
            tw = Value(tw, ())

            def body(b, a, o):
                s, lab, t = a
                lab = b("arith.index_cast {0} : i64 to index", lab)
                j = b.index(1)
                d = b("arith.divf {0}, {1} : f32", s, t)
                d = b("arith.negf {0} : f32", d)
                ne = b("arith.cmpi ne, {0}, {1} : index", lab, j)
                ig = b("arith.cmpi eq, {0}, {1} : index", lab, ign)
                c = b("arith.ori {0}, {1} : i1", ne, ig)
                return b("arith.select {0}, {1}, {2} : f32", c, b.const(0.0), d)
            init = self.full((N, C), 0.0)
            return [self.generic([(seed, ()), (labels, ("d0",)), (tw, ())], (N, C),
                                 ("d0", "d1"), ["parallel", "parallel"], body, init=init)]
        return self.record(loss, [logp], vjp)

    def mm(self, x, w):
        """aten.mm (Linear.cpp ConvertAtenMmOp): linalg.matmul into a
        zero-filled init; backward mm with linalg.transpose'd operands."""
        out = self.matmul_raw(x, w)

        def vjp(g):
            gx = gw = None
            if x.requires_grad:
                gx = self.matmul_raw(g, self.transpose(w, [1, 0]))
            if w.requires_grad:
                gw = self.matmul_raw(self.transpose(x, [1, 0]), g)
            return [gx, gw]
        return self.record(out, [x, w], vjp)

    def tanh(self, x):
        def d(b, g, v, y):
            y2 = b("arith.mulf {0}, {1} : f32", y, y)
            t = b("arith.subf {0}, {1} : f32", b.const(1.0), y2)
            return b("arith.mulf {0}, {1} : f32", g, t)
        return self.unary(x, lambda b, v: b("math.tanh {0} : f32", v), d, "gy")

    def sum_all(self, x):
        """aten.sum (Reduction.cpp): every loop a reduction into a rank-0 init."""
        n = len(x.shape)
        out = self.reduce_to([(x, ident(n))], x.shape, (), (), lambda b, v: v)

        def vjp(g):
            return [self.pointwise_map([(g, ())], x.shape, lambda b, v: v)]
        return self.record(out, [x], vjp)

    def slice_op(self, x, offsets, sizes):
        """aten.slice.Tensor (DataMovement.cpp): tensor.extract_slice; its
        backward aten.slice_backward is tensor.insert_slice into zeros."""
        out = self.extract_slice(x, offsets, sizes)

        def vjp(g):
            return [self.insert_slice(g, self.full(x.shape, 0.0), offsets)]
        return self.record(out, [x], vjp)

    def extract_slice(self, x, offsets, sizes):
        name = self.fresh("sl")
        self.emit("%s = tensor.extract_slice %s[%s] [%s] [%s] : %s to %s"
                  % (name, x.name, ", ".join(map(str, offsets)),
                     ", ".join(map(str, sizes)), ", ".join("1" for _ in sizes),
                     x.type, ttype(sizes, x.et)))
        return Value(name, sizes, x.et)

    def insert_slice(self, src, dst, offsets):
        name = self.fresh("ins")
        self.emit("%s = tensor.insert_slice %s into %s[%s] [%s] [%s] : %s into %s"
                  % (name, src.name, dst.name, ", ".join(map(str, offsets)),
                     ", ".join(map(str, src.shape)), ", ".join("1" for _ in src.shape),
                     src.type, dst.type))
        return Value(name, dst.shape, dst.et)

    def concat(self, xs, dim):
        """aten.cat (DataMovement.cpp ConvertAtenCatOp): tensor.concat; the
        backward slices the gradient back with tensor.extract_slice."""
        shape = list(xs[0].shape)
        shape[dim] = sum(x.shape[dim] for x in xs)
        shape = tuple(shape)
        name = self.fresh("cat")
        self.emit("%s = tensor.concat dim(%d) %s : (%s) -> %s"
                  % (name, dim, ", ".join(x.name for x in xs),
                     ", ".join(x.type for x in xs), ttype(shape, xs[0].et)))
        out = Value(name, shape, xs[0].et)

        def vjp(g):
            res = []
            off = 0
            for x in xs:
                offs = [0] * len(shape)
                offs[dim] = off
                off += x.shape[dim]
                res.append(self.extract_slice(g, offs, x.shape) if x.requires_grad else None)
            return res
        return self.record(out, list(xs), vjp)

    def view_collapse(self, x, reassoc):
        """aten.view merging dimensions: tensor.collapse_shape (backward: expand)."""
        out = self.collapse(x, reassoc)
        return self.record(out, [x], lambda g: [self.expand(g, reassoc, x.shape)])

    def view_expand(self, x, reassoc, shape):
        """aten.view splitting dimensions: tensor.expand_shape (backward: collapse)."""
        out = self.expand(x, reassoc, shape)
        return self.record(out, [x], lambda g: [self.collapse(g, reassoc)])

    def cross_entropy(self, logits, labels, ignore=-100):
        """F.cross_entropy(logits.view(-1, C), labels.view(-1)): collapse_shape,
        log_softmax with keepdim maps, nll_loss mean over non-ignored labels."""
        k = len(logits.shape)
        lf = logits
        if k > 2:
            lf = self.view_collapse(logits, [list(range(k - 1)), [k - 1]])
        lab = labels
        if len(labels.shape) > 1:
            lab = self.collapse(labels, [list(range(len(labels.shape)))])
        return self.nll_loss_mean(self.softmax(lf, log=True), lab, ignore)

    # ------------------------------------------------------------ output
    def all_reduce(self, g):
        name = self.fresh("ar")
        self.emit("%s = shard.all_reduce %s on @dp grid_axes = [0] reduction = average : %s -> %s"
                  % (name, g.name, g.type, g.type))
        return Value(name, g.shape)

    def function(self, results, header, grid=False, name="train_step"):
        """results: [(Value, attr)]."""
        out = ["// " + l if l else "//" for l in header]
        out.append("// (generated by examples/frontend/%s; do not edit by hand)"
                   % self.generator)
        out.append("")
        if grid:
            out.append('shard.grid @dp(shape = ?) {sym_visibility = "private"}')
            out.append("")
        args = ",\n    ".join("%s: %s {%s}" % (v.name, v.type, a) for v, a in self.args)
        res = ",\n    ".join("%s {%s}" % (v.type, a) for v, a in results)
        out.append("func.func @%s(\n    %s)\n    -> (%s) {" % (name, args, res))
        out.extend(self.lines)
        out.append("  return %s : %s" % (", ".join(v.name for v, _ in results),
                                          ", ".join(v.type for v, _ in results)))
        out.append("}")
        return "\n".join(out) + "\n"


def adamw(g, params, grads, step, states, lr=0.01, b1=0.9, b2=0.999, eps=1e-8,
          wd=0.01):
    """torch.optim.AdamW (one step, bias-corrected, decoupled weight decay),
    as in examples/adamw_clip.mlir. states: {param name: (m, v)}. Returns
    [(param_out, m_out, v_out)] and step_out."""
    g.comment("AdamW: t = step + 1, bias corrections 1 - b^t (math.powf)")
    one = g.fresh("one")
    g.emit("%s = arith.constant dense<1.0> : tensor<f32>" % one)
    t = g.fresh("t")
    g.emit("%s = arith.addf %s, %s : tensor<f32>" % (t, step.name, one))
    vals = {}
    for nm, c in (("beta1", b1), ("beta2", b2), ("lr", lr)):
        vals[nm] = g.fresh(nm)
        g.emit("%s = arith.constant dense<%s> : tensor<f32>" % (vals[nm], fconst(c)))
    b1t = g.fresh("b1t")
    g.emit("%s = math.powf %s, %s : tensor<f32>" % (b1t, vals["beta1"], t))
    b2t = g.fresh("b2t")
    g.emit("%s = math.powf %s, %s : tensor<f32>" % (b2t, vals["beta2"], t))
    bc1 = g.fresh("bc1")
    g.emit("%s = arith.subf %s, %s : tensor<f32>" % (bc1, one, b1t))
    bc2 = g.fresh("bc2")
    g.emit("%s = arith.subf %s, %s : tensor<f32>" % (bc2, one, b2t))
    ss = g.fresh("step_size")
    g.emit("%s = arith.divf %s, %s : tensor<f32>" % (ss, vals["lr"], bc1))
    bcs = g.fresh("bc2_sqrt")
    g.emit("%s = math.sqrt %s : tensor<f32>" % (bcs, bc2))
    ss = Value(ss, ())
    bcs = Value(bcs, ())
    outs = []
    for p, gr in zip(params, grads):
        m, v = states[p.name]
        n = len(p.shape)
        idn = ident(n)

        def mom(b, mv, gv, c1=b1):
            a = b("arith.mulf {0}, {1} : f32", mv, b.const(c1))
            c = b("arith.mulf {0}, {1} : f32", gv, b.const(1.0 - c1))
            return b("arith.addf {0}, {1} : f32", a, c)

        def sec(b, vv, gv, c2=b2):
            a = b("arith.mulf {0}, {1} : f32", vv, b.const(c2))
            q = b("arith.mulf {0}, {1} : f32", gv, gv)
            c = b("arith.mulf {0}, {1} : f32", q, b.const(1.0 - c2))
            return b("arith.addf {0}, {1} : f32", a, c)

        def upd(b, pv, mv, vv, s, bs):
            w = b("arith.mulf {0}, {1} : f32", pv, b.const(1.0 - lr * wd))
            sv = b("math.sqrt {0} : f32", vv)
            dv = b("arith.divf {0}, {1} : f32", sv, bs)
            dn = b("arith.addf {0}, {1} : f32", dv, b.const(eps))
            u = b("arith.divf {0}, {1} : f32", mv, dn)
            u = b("arith.mulf {0}, {1} : f32", s, u)
            return b("arith.subf {0}, {1} : f32", w, u)
        mo = g.pointwise_map([(m, idn), (gr, idn)], p.shape, mom)
        vo = g.pointwise_map([(v, idn), (gr, idn)], p.shape, sec)
        po = g.pointwise_map([(p, idn), (mo, idn), (vo, idn), (ss, ()), (bcs, ())],
                             p.shape, upd)
        outs.append((po, mo, vo))
    return outs, Value(t, ())


def write_npy(path, values, shape, dtype):
    """dtype: 'f4' or 'i8' (little-endian), C order. The writer is the
    differential generator's (scripts/difftest/gen_step.py)."""
    return _gen_step().save_npy(path, shape, values,
                                {"f4": "f32", "i8": "i64"}[dtype])


def _gen_step():
    import importlib
    import sys
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "scripts", "difftest")
    if path not in sys.path:
        sys.path.insert(0, path)
    return importlib.import_module("gen_step")

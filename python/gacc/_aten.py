"""The aten ops of a traced training step, each as linalg on tensors.

`ATEN` maps an aten overload's name (``"aten.mm.default"``) to a function
`(ctx, args, kwargs) -> Tensor | tuple`; `ctx` is the translator (its `ops`,
`e` emitter and `val` metadata). Ops with several results return tuples.
Every formula is PyTorch's own (its CPU kernels or torch/_decomp), written
out so that no op is approximated; anything outside what a handler proves
it covers raises `EmitError` with the reason.
"""

import math

from ._emitter import F32, FLOATS, I1, I32, I64, EmitError, Tensor
from ._ops import convert

ATEN = {}


def aten(*names):
    def reg(fn):
        for n in names:
            ATEN[n] = fn
        return fn
    return reg


# ------------------------------------------------------------ elementwise
def _arith(ctx, x, y, fop, iop):
    o = ctx.ops
    et = _result_et(x, y)
    x, y = _promote(ctx, x, et), _promote(ctx, y, et)
    op = fop if et in FLOATS else iop
    return o.ew([x, y], lambda b, v: b.op("%s %s, %s : %s", op, v[0], v[1],
                                          et), et)


def _result_et(x, y):
    ets = [t.et for t in (x, y) if isinstance(t, Tensor)]
    if any(e in FLOATS for e in ets):
        return next(e for e in ets if e in FLOATS)
    if any(isinstance(t, float) for t in (x, y)):
        return F32
    return ets[0] if ets else F32


def _promote(ctx, x, et):
    if isinstance(x, Tensor):
        if x.rank == 0 and x.et != et and et in FLOATS and x.et in FLOATS:
            return ctx.ops.cast(x, et)
        return ctx.ops.cast(x, et)
    if isinstance(x, tuple):
        return x
    if isinstance(x, bool):
        x = int(x)
    return (float(x) if et in FLOATS else int(x), et)


@aten("aten.add.Tensor", "aten.add.Scalar", "aten.add_.Tensor")
def add(ctx, a, k):
    x, y = a[0], a[1]
    alpha = k.get("alpha", a[2] if len(a) > 2 else 1)
    if alpha != 1:
        y = mul(ctx, [y, alpha], {})
    return _arith(ctx, x, y, "arith.addf", "arith.addi")


@aten("aten.sub.Tensor", "aten.sub.Scalar", "aten.rsub.Scalar",
      "aten.rsub.Tensor")
def sub(ctx, a, k):
    x, y = a[0], a[1]
    alpha = k.get("alpha", a[2] if len(a) > 2 else 1)
    if ctx.node_name.startswith("aten.rsub"):
        x, y = y, x
        if alpha != 1:
            y = mul(ctx, [y, alpha], {})
    elif alpha != 1:
        y = mul(ctx, [y, alpha], {})
    return _arith(ctx, x, y, "arith.subf", "arith.subi")


@aten("aten.mul.Tensor", "aten.mul.Scalar", "aten.mul_.Tensor")
def mul(ctx, a, k):
    if not isinstance(a[0], Tensor) and not isinstance(a[1], Tensor):
        return a[0] * a[1]
    return _arith(ctx, a[0], a[1], "arith.mulf", "arith.muli")


@aten("aten.div.Tensor", "aten.div.Scalar")
def div(ctx, a, k):
    if k.get("rounding_mode") is not None:
        raise EmitError("div with rounding_mode=%r" % k["rounding_mode"])
    x, y = a[0], a[1]
    et = _result_et(x, y)
    if et not in FLOATS:
        et = F32
    x, y = _promote(ctx, x, et), _promote(ctx, y, et)
    return ctx.ops.ew([x, y], lambda b, v: b.op("arith.divf %s, %s : %s",
                                                v[0], v[1], et), et)


def _unary_f(fmt):
    def fn(ctx, a, k):
        x = a[0]
        if x.et not in FLOATS:
            x = ctx.ops.cast(x, F32)
        return ctx.ops.unary(x, fmt + " %s : " + x.et)
    return fn


for _n, _f in [("exp", "math.exp"), ("log", "math.log"),
               ("sqrt", "math.sqrt"), ("rsqrt", "math.rsqrt"),
               ("tanh", "math.tanh"), ("sin", "math.sin"),
               ("cos", "math.cos"), ("erf", "math.erf"),
               ("log1p", "math.log1p"), ("expm1", "math.expm1"),
               ("abs", "math.absf")]:
    ATEN["aten.%s.default" % _n] = _unary_f(_f)


@aten("aten.neg.default")
def neg(ctx, a, k):
    x = a[0]
    if x.et in FLOATS:
        return ctx.ops.unary(x, "arith.negf %s : " + x.et)
    return _arith(ctx, 0, x, "", "arith.subi")


@aten("aten.reciprocal.default")
def reciprocal(ctx, a, k):
    return div(ctx, [1.0, a[0]], {})


def _sigmoid(b, x, et):
    """1 / (1 + exp(-x)) in a body."""
    n = b.op("arith.negf %s : %s", x, et)
    e = b.op("math.exp %s : %s", n, et)
    one = b.const(1.0, et)
    d = b.op("arith.addf %s, %s : %s", one, e, et)
    return b.op("arith.divf %s, %s : %s", one, d, et)


@aten("aten.sigmoid.default")
def sigmoid(ctx, a, k):
    x = a[0]
    return ctx.ops.ew([x], lambda b, v: _sigmoid(b, v[0], x.et), x.et)


@aten("aten.sigmoid_backward.default")
def sigmoid_backward(ctx, a, k):
    g, y = a
    et = g.et

    def body(b, v):
        one = b.const(1.0, et)
        t = b.op("arith.subf %s, %s : %s", one, v[1], et)
        t = b.op("arith.mulf %s, %s : %s", v[1], t, et)
        return b.op("arith.mulf %s, %s : %s", v[0], t, et)
    return ctx.ops.ew([g, y], body, et)


@aten("aten.tanh_backward.default")
def tanh_backward(ctx, a, k):
    g, y = a
    et = g.et

    def body(b, v):
        one = b.const(1.0, et)
        t = b.op("arith.mulf %s, %s : %s", v[1], v[1], et)
        t = b.op("arith.subf %s, %s : %s", one, t, et)
        return b.op("arith.mulf %s, %s : %s", v[0], t, et)
    return ctx.ops.ew([g, y], body, et)


@aten("aten.silu.default")
def silu(ctx, a, k):
    x = a[0]
    et = x.et

    def body(b, v):
        return b.op("arith.mulf %s, %s : %s", v[0], _sigmoid(b, v[0], et), et)
    return ctx.ops.ew([x], body, et)


@aten("aten.silu_backward.default")
def silu_backward(ctx, a, k):
    g, x = a
    et = g.et

    def body(b, v):
        # sigmoid(x) * (1 + x * (1 - sigmoid(x))) (torch/_decomp)
        one = b.const(1.0, et)
        s = _sigmoid(b, v[1], et)
        t = b.op("arith.subf %s, %s : %s", one, s, et)
        t = b.op("arith.mulf %s, %s : %s", v[1], t, et)
        t = b.op("arith.addf %s, %s : %s", one, t, et)
        t = b.op("arith.mulf %s, %s : %s", s, t, et)
        return b.op("arith.mulf %s, %s : %s", v[0], t, et)
    return ctx.ops.ew([g, x], body, et)


@aten("aten.relu.default")
def relu(ctx, a, k):
    x = a[0]
    et = x.et

    def body(b, v):
        z = b.const(0.0, et)
        c = b.op("arith.cmpf ugt, %s, %s : %s", v[0], z, et)
        return b.op("arith.select %s, %s, %s : %s", c, v[0], z, et)
    return ctx.ops.ew([x], body, et)


@aten("aten.threshold_backward.default")
def threshold_backward(ctx, a, k):
    g, x, th = a
    et = g.et

    def body(b, v):
        t = b.const(float(th), et)
        z = b.const(0.0, et)
        # PyTorch: self <= threshold ? 0 : grad (NaN passes the gradient)
        c = b.op("arith.cmpf ole, %s, %s : %s", v[1], t, et)
        return b.op("arith.select %s, %s, %s : %s", c, z, v[0], et)
    return ctx.ops.ew([g, x], body, et)


def _gelu_parts(b, x, et, approximate):
    half, one = b.const(0.5, et), b.const(1.0, et)
    if approximate == "tanh":
        k0 = b.const(math.sqrt(2.0 / math.pi), et)
        k1 = b.const(0.044715, et)
        x3 = b.op("arith.mulf %s, %s : %s", x, x, et)
        x3 = b.op("arith.mulf %s, %s : %s", x3, x, et)
        inner = b.op("arith.mulf %s, %s : %s", k1, x3, et)
        inner = b.op("arith.addf %s, %s : %s", x, inner, et)
        inner = b.op("arith.mulf %s, %s : %s", k0, inner, et)
        return b.op("math.tanh %s : %s", inner, et), half, one, k0, k1
    k = b.const(1.0 / math.sqrt(2.0), et)
    s = b.op("arith.mulf %s, %s : %s", x, k, et)
    return b.op("math.erf %s : %s", s, et), half, one, None, None


@aten("aten.gelu.default")
def gelu(ctx, a, k):
    x = a[0]
    approximate = k.get("approximate", a[1] if len(a) > 1 else "none")
    et = x.et

    def body(b, v):
        t, half, one, _, _ = _gelu_parts(b, v[0], et, approximate)
        t = b.op("arith.addf %s, %s : %s", one, t, et)
        t = b.op("arith.mulf %s, %s : %s", v[0], t, et)
        return b.op("arith.mulf %s, %s : %s", half, t, et)
    return ctx.ops.ew([x], body, et)


@aten("aten.gelu_backward.default")
def gelu_backward(ctx, a, k):
    g, x = a[0], a[1]
    approximate = k.get("approximate", a[2] if len(a) > 2 else "none")
    et = g.et

    def body(b, v):
        gv, xv = v
        t, half, one, k0, k1 = _gelu_parts(b, xv, et, approximate)
        if approximate == "tanh":
            # torch/_decomp gelu_backward (tanh)
            left = b.op("arith.mulf %s, %s : %s", half, xv, et)
            right = b.op("arith.addf %s, %s : %s", one, t, et)
            t2 = b.op("arith.mulf %s, %s : %s", t, t, et)
            left_d = b.op("arith.mulf %s, %s : %s", half, right, et)
            tanh_d = b.op("arith.subf %s, %s : %s", one, t2, et)
            three = b.const(3.0, et)
            x2 = b.op("arith.mulf %s, %s : %s", xv, xv, et)
            inner_d = b.op("arith.mulf %s, %s : %s", three, k1, et)
            inner_d = b.op("arith.mulf %s, %s : %s", inner_d, x2, et)
            inner_d = b.op("arith.addf %s, %s : %s", one, inner_d, et)
            inner_d = b.op("arith.mulf %s, %s : %s", k0, inner_d, et)
            right_d = b.op("arith.mulf %s, %s : %s", left, tanh_d, et)
            right_d = b.op("arith.mulf %s, %s : %s", right_d, inner_d, et)
            d = b.op("arith.addf %s, %s : %s", left_d, right_d, et)
            return b.op("arith.mulf %s, %s : %s", gv, d, et)
        cdf = b.op("arith.addf %s, %s : %s", one, t, et)
        cdf = b.op("arith.mulf %s, %s : %s", half, cdf, et)
        kk = b.const(1.0 / math.sqrt(2.0 * math.pi), et)
        x2 = b.op("arith.mulf %s, %s : %s", xv, xv, et)
        m = b.const(-0.5, et)
        x2 = b.op("arith.mulf %s, %s : %s", x2, m, et)
        pdf = b.op("math.exp %s : %s", x2, et)
        pdf = b.op("arith.mulf %s, %s : %s", pdf, kk, et)
        pdf = b.op("arith.mulf %s, %s : %s", xv, pdf, et)
        d = b.op("arith.addf %s, %s : %s", cdf, pdf, et)
        return b.op("arith.mulf %s, %s : %s", gv, d, et)
    return ctx.ops.ew([g, x], body, et)


@aten("aten.pow.Tensor_Scalar")
def pow_ts(ctx, a, k):
    x, p = a
    et = x.et
    if p == 2:
        return ctx.ops.ew([x], lambda b, v: b.op("arith.mulf %s, %s : %s",
                                                 v[0], v[0], et), et)
    if p == 1:
        return x
    if p == 0.5:
        return ctx.ops.unary(x, "math.sqrt %s : " + et)
    if float(p).is_integer():
        def body(b, v):
            n = b.const(int(p), I32)
            return b.op("math.fpowi %s, %s : %s, i32", v[0], n, et)
        return ctx.ops.ew([x], body, et)
    return ctx.ops.ew([x], lambda b, v: b.op("math.powf %s, %s : %s", v[0],
                                             b.const(float(p), et), et), et)


@aten("aten.pow.Scalar")
def pow_s(ctx, a, k):
    base, x = a
    et = x.et if x.et in FLOATS else F32
    x = ctx.ops.cast(x, et)
    return ctx.ops.ew([x], lambda b, v: b.op(
        "math.powf %s, %s : %s", b.const(float(base), et), v[0], et), et)


@aten("aten.pow.Tensor_Tensor")
def pow_tt(ctx, a, k):
    x, y = a
    return _arith(ctx, x, y, "math.powf", None)


def _cmp(pred_f, pred_i):
    def fn(ctx, a, k):
        x, y = a[0], a[1]
        et = _result_et(x, y)
        x, y = _promote(ctx, x, et), _promote(ctx, y, et)
        if et in FLOATS:
            f = lambda b, v: b.op("arith.cmpf %s, %s, %s : %s", pred_f, v[0],
                                  v[1], et)
        else:
            f = lambda b, v: b.op("arith.cmpi %s, %s, %s : %s", pred_i, v[0],
                                  v[1], et)
        return ctx.ops.ew([x, y], f, I1)
    return fn


for _n, _pf, _pi in [("eq", "oeq", "eq"), ("ne", "une", "ne"),
                     ("lt", "olt", "slt"), ("le", "ole", "sle"),
                     ("gt", "ogt", "sgt"), ("ge", "oge", "sge")]:
    ATEN["aten.%s.Scalar" % _n] = _cmp(_pf, _pi)
    ATEN["aten.%s.Tensor" % _n] = _cmp(_pf, _pi)


@aten("aten.logical_not.default", "aten.bitwise_not.default")
def logical_not(ctx, a, k):
    x = ctx.ops.cast(a[0], I1) if a[0].et != I1 else a[0]

    def body(b, v):
        t = b.const(1, I1)
        return b.op("arith.xori %s, %s : i1", v[0], t)
    return ctx.ops.ew([x], body, I1)


@aten("aten.logical_and.default", "aten.bitwise_and.Tensor")
def logical_and(ctx, a, k):
    x, y = (ctx.ops.cast(t, I1) for t in a[:2])
    return ctx.ops.ew([x, y], lambda b, v: b.op("arith.andi %s, %s : i1",
                                                v[0], v[1]), I1)


@aten("aten.logical_or.default", "aten.bitwise_or.Tensor")
def logical_or(ctx, a, k):
    x, y = (ctx.ops.cast(t, I1) for t in a[:2])
    return ctx.ops.ew([x, y], lambda b, v: b.op("arith.ori %s, %s : i1",
                                                v[0], v[1]), I1)


@aten("aten.where.self", "aten.where.ScalarSelf", "aten.where.ScalarOther",
      "aten.where.Scalar")
def where(ctx, a, k):
    c, x, y = a
    et = _result_et(x, y)
    x, y = _promote(ctx, x, et), _promote(ctx, y, et)
    c = ctx.ops.cast(c, I1)
    return ctx.ops.ew([c, x, y], lambda b, v: b.op(
        "arith.select %s, %s, %s : %s", v[0], v[1], v[2], et), et)


@aten("aten.masked_fill.Scalar", "aten.masked_fill_.Scalar",
      "aten.masked_fill.Tensor", "aten.masked_fill_.Tensor")
def masked_fill(ctx, a, k):
    x, mask, value = a
    if isinstance(value, Tensor):
        value = ctx.ops.cast(value, x.et)
    else:
        value = _promote(ctx, value, x.et)
    return where(ctx, [mask, value, x], {})


@aten("aten.clamp.default", "aten.clamp_min.default", "aten.clamp_max.default",
      "aten.hardtanh.default")
def clamp(ctx, a, k):
    x = a[0]
    name = ctx.node_name
    lo = hi = None
    if "clamp_min" in name:
        lo = a[1]
    elif "clamp_max" in name:
        hi = a[1]
    elif "hardtanh" in name:
        lo, hi = (a[1] if len(a) > 1 else -1.0), (a[2] if len(a) > 2 else 1.0)
    else:
        lo = a[1] if len(a) > 1 else k.get("min")
        hi = a[2] if len(a) > 2 else k.get("max")
    et = x.et

    def body(b, v):
        r = v[0]
        # clamp propagates NaN (torch): compare-and-select keeps x when
        # the comparison is unordered.
        if lo is not None:
            c = b.const(float(lo), et)
            lt = b.op("arith.cmpf olt, %s, %s : %s", r, c, et)
            r = b.op("arith.select %s, %s, %s : %s", lt, c, r, et)
        if hi is not None:
            c = b.const(float(hi), et)
            gt = b.op("arith.cmpf ogt, %s, %s : %s", r, c, et)
            r = b.op("arith.select %s, %s, %s : %s", gt, c, r, et)
        return r
    return ctx.ops.ew([x], body, et)


@aten("aten.hardtanh_backward.default")
def hardtanh_backward(ctx, a, k):
    g, x, lo, hi = a
    et = g.et

    def body(b, v):
        l, h, z = b.const(float(lo), et), b.const(float(hi), et), \
            b.const(0.0, et)
        c1 = b.op("arith.cmpf ole, %s, %s : %s", v[1], l, et)
        c2 = b.op("arith.cmpf oge, %s, %s : %s", v[1], h, et)
        c = b.op("arith.ori %s, %s : i1", c1, c2)
        return b.op("arith.select %s, %s, %s : %s", c, z, v[0], et)
    return ctx.ops.ew([g, x], body, et)


@aten("aten.maximum.default", "aten.minimum.default")
def maxmin(ctx, a, k):
    op = "arith.maximumf" if "maximum" in ctx.node_name else "arith.minimumf"
    return _arith(ctx, a[0], a[1], op,
                  "arith.maxsi" if "maximum" in ctx.node_name else
                  "arith.minsi")


@aten("aten._to_copy.default", "aten.to.dtype", "aten.clone.default",
      "aten.detach.default", "aten.alias.default", "aten.lift_fresh_copy.default",
      "aten.contiguous.default", "aten.lift_fresh.default")
def identity(ctx, a, k):
    x = a[0]
    dtype = k.get("dtype")
    if dtype is None and ctx.node_name == "aten.to.dtype" and len(a) > 1:
        dtype = a[1]
    if dtype is not None:
        return ctx.ops.cast(x, ctx.et_of(dtype))
    return x


@aten("aten.ones_like.default", "aten.zeros_like.default",
      "aten.empty_like.default", "aten.full_like.default",
      "aten.new_zeros.default", "aten.new_ones.default",
      "aten.new_empty.default", "aten.new_full.default",
      "aten.zeros.default", "aten.ones.default", "aten.full.default",
      "aten.empty.memory_format", "aten.scalar_tensor.default")
def fill_like(ctx, a, k):
    out = ctx.val
    name = ctx.node_name
    if "full" in name:
        value = a[-1] if "like" in name or "new" in name else a[1]
    elif "scalar_tensor" in name:
        value = a[0]
    elif "ones" in name:
        value = 1
    else:
        value = 0
    et = ctx.et_of(out.dtype)
    return ctx.e.full(list(out.shape), value if et in FLOATS else int(value),
                      et)


@aten("aten.arange.default", "aten.arange.start", "aten.arange.start_step")
def arange(ctx, a, k):
    out = ctx.val
    et = ctx.et_of(out.dtype)
    # the length is the traced result's; the values start and step
    start = a[0] if len(a) >= 2 else 0
    step = a[2] if len(a) >= 3 else 1
    vals = [start + i * step for i in range(out.shape[0])]
    return ctx.e.constant(vals, list(out.shape), et)


# -------------------------------------------------------------- reductions
@aten("aten.sum.dim_IntList", "aten.sum.default")
def sum_(ctx, a, k):
    x = a[0]
    dims = a[1] if len(a) > 1 and a[1] else list(range(x.rank))
    keep = a[2] if len(a) > 2 else k.get("keepdim", False)
    et = ctx.et_of(k["dtype"]) if k.get("dtype") is not None else x.et
    if et == I1 or et not in FLOATS and et != I64:
        et = I64
    if x.et not in FLOATS:
        et = I64 if "dtype" not in k else et
        return ctx.ops.reduce(x, dims, keep, lambda b, v, acc: b.op(
            "arith.addi %s, %s : %s", v, acc, et), 0, et,
            pre=lambda b, v: convert(b, v, x.et, et))
    return ctx.ops.sum(x, dims, keep, et)


@aten("aten.mean.dim", "aten.mean.default")
def mean(ctx, a, k):
    x = a[0]
    dims = a[1] if len(a) > 1 and a[1] else list(range(x.rank))
    keep = a[2] if len(a) > 2 else k.get("keepdim", False)
    return ctx.ops.mean(x, dims, keep)


@aten("aten.amax.default")
def amax(ctx, a, k):
    x = a[0]
    dims = a[1] if len(a) > 1 and a[1] else list(range(x.rank))
    keep = a[2] if len(a) > 2 else False
    return ctx.ops.amax(x, dims, keep)


@aten("aten.var.correction", "aten.var.dim")
def var(ctx, a, k):
    x = a[0]
    dims = a[1] if len(a) > 1 and a[1] is not None else list(range(x.rank))
    if ctx.node_name == "aten.var.dim":
        corr = 1 if (a[2] if len(a) > 2 else k.get("unbiased", True)) else 0
        keep = a[3] if len(a) > 3 else k.get("keepdim", False)
    else:
        corr = k.get("correction", 1)
        corr = 1 if corr is None else corr
        keep = k.get("keepdim", False)
    o = ctx.ops
    n = math.prod(x.shape[d] for d in dims)
    m = o.mean(x, dims, True)
    c = o.sub(x, m)
    s = o.sum(o.mul(c, c), dims, keep)
    return o.div(s, float(n - corr))


# ------------------------------------------------------------ contractions
@aten("aten.mm.default")
def mm(ctx, a, k):
    return ctx.ops.matmul(a[0], a[1])


@aten("aten.bmm.default")
def bmm(ctx, a, k):
    return ctx.ops.matmul(a[0], a[1], batch=True)


@aten("aten.addmm.default")
def addmm(ctx, a, k):
    bias, x, w = a[:3]
    beta, alpha = k.get("beta", 1), k.get("alpha", 1)
    o = ctx.ops
    r = o.matmul(x, w)
    if alpha != 1:
        r = o.mul(r, float(alpha))
    if beta != 1:
        bias = o.mul(bias, float(beta))
    return o.add(r, bias) if beta != 0 else r


@aten("aten.baddbmm.default")
def baddbmm(ctx, a, k):
    c, x, y = a[:3]
    beta, alpha = k.get("beta", 1), k.get("alpha", 1)
    o = ctx.ops
    r = o.matmul(x, y, batch=True)
    if alpha != 1:
        r = o.mul(r, float(alpha))
    if beta == 0:
        return r
    if beta != 1:
        c = o.mul(c, float(beta))
    return o.add(r, c)


@aten("aten.dot.default")
def dot(ctx, a, k):
    o = ctx.ops
    return o.sum(o.mul(a[0], a[1]), [0])


# ------------------------------------------------------------------- views
@aten("aten.view.default", "aten._unsafe_view.default",
      "aten._reshape_alias.default", "aten.reshape.default")
def view(ctx, a, k):
    return ctx.ops.view(a[0], list(a[1]))


@aten("aten.t.default")
def t_(ctx, a, k):
    x = a[0]
    return x if x.rank < 2 else ctx.ops.transpose(x, 0, 1)


@aten("aten.transpose.int")
def transpose(ctx, a, k):
    return ctx.ops.transpose(a[0], a[1], a[2])


@aten("aten.permute.default")
def permute(ctx, a, k):
    return ctx.ops.permute(a[0], list(a[1]))


@aten("aten.unsqueeze.default")
def unsqueeze(ctx, a, k):
    return ctx.ops.unsqueeze(a[0], a[1])


@aten("aten.squeeze.dim", "aten.squeeze.default", "aten.squeeze.dims")
def squeeze(ctx, a, k):
    dims = None
    if len(a) > 1:
        dims = a[1] if isinstance(a[1], (list, tuple)) else [a[1]]
    return ctx.ops.squeeze(a[0], dims)


@aten("aten.expand.default")
def expand(ctx, a, k):
    x, shape = a[0], list(a[1])
    r = len(shape)
    shape = [x.shape[i - (r - x.rank)] if s == -1 else s
             for i, s in enumerate(shape)]
    if shape == x.shape:
        return x
    return ctx.ops.copy(x, shape)


@aten("aten.split.Tensor", "aten.split_with_sizes.default")
def split(ctx, a, k):
    x, size = a[0], a[1]
    dim = a[2] if len(a) > 2 else k.get("dim", 0)
    n = x.shape[dim % x.rank]
    sizes = list(size) if isinstance(size, (list, tuple)) else \
        [min(size, n - i) for i in range(0, n, size)]
    out, off = [], 0
    for s in sizes:
        out.append(ctx.ops.slice(x, dim, off, off + s))
        off += s
    return tuple(out)


@aten("aten.slice.Tensor")
def slice_(ctx, a, k):
    x = a[0]
    dim = a[1] if len(a) > 1 else 0
    start = a[2] if len(a) > 2 and a[2] is not None else 0
    end = a[3] if len(a) > 3 and a[3] is not None else x.shape[dim]
    step = a[4] if len(a) > 4 else 1
    end = min(end, x.shape[dim])
    return ctx.ops.slice(x, dim, start, end, step)


@aten("aten.select.int")
def select(ctx, a, k):
    x, dim, i = a
    dim = dim % x.rank
    i = i + x.shape[dim] if i < 0 else i
    s = ctx.ops.slice(x, dim, i, i + 1)
    return ctx.ops.squeeze(s, [dim])


@aten("aten.cat.default")
def cat(ctx, a, k):
    dim = a[1] if len(a) > 1 else k.get("dim", 0)
    return ctx.ops.cat(list(a[0]), dim)


@aten("aten.stack.default")
def stack(ctx, a, k):
    dim = a[1] if len(a) > 1 else k.get("dim", 0)
    xs = [ctx.ops.unsqueeze(x, dim) for x in a[0]]
    return ctx.ops.cat(xs, dim)


# ----------------------------------------------------------------- gathers
def _gather_rows(ctx, table, idx, pad_valid=None):
    """out[p, j] = table[idx[p], j] via tensor.extract in a generic body
    (torch-mlir's aten.embedding)."""
    e = ctx.e
    tm = ctx.ops.materialize(table)
    D = tm.shape[1:]
    ix = idx
    n_idx = len(ix.fshape)
    n = n_idx + len(D)
    in_maps = [["d%d" % d for d in range(n_idx)]]
    fshape = list(ix.fshape) + list(D)

    def body(b, args, outs):
        i = b.op("arith.index_cast %s : %s to index", args[0], ix.et)
        coords = [i] + [b.index(n_idx + j) for j in range(len(D))]
        return b.op("tensor.extract %s[%s] : %s", tm.name, ", ".join(coords),
                    tm.ptype)
    names = e.generic([(ix.name, ix.ptype, ix.et)], in_maps, fshape,
                      [["d%d" % d for d in range(n)]], ["parallel"] * n, body,
                      [tm.et])
    groups = [list(g) for g in ix.groups] + [[n_idx + j]
                                             for j in range(len(D))]
    return Tensor(names[0], fshape, groups, tm.et, ix.sample)


@aten("aten.embedding.default")
def embedding(ctx, a, k):
    return _gather_rows(ctx, a[0], a[1])


@aten("aten.embedding_dense_backward.default")
def embedding_dense_backward(ctx, a, k):
    g, idx, V, padding_idx, scale = a[:5]
    if scale:
        raise EmitError("embedding with scale_grad_by_freq=True")
    D = g.shape[idx.rank:]
    if padding_idx is not None and padding_idx >= 0:
        m = ctx.ops.ew([idx], lambda b, v: b.op(
            "arith.cmpi eq, %s, %s : %s", v[0], b.const(padding_idx, idx.et),
            idx.et), I1)
        g = where(ctx, [ctx.ops.view(m, idx.shape + [1] * len(D)), 0.0, g],
                  {})
    return ctx.scatter_add(g, idx, [V] + list(D))


# -------------------------------------------------------------- softmaxes
@aten("aten._log_softmax.default")
def log_softmax(ctx, a, k):
    x, dim = a[0], a[1]
    o = ctx.ops
    m = o.amax(x, [dim], True)
    s = o.sub(x, m)
    se = o.reduce(s, [dim], True, lambda b, v, acc: b.op(
        "arith.addf %s, %s : %s", v, acc, x.et), 0.0,
        pre=lambda b, v: b.op("math.exp %s : %s", v, x.et))
    return o.sub(s, o.unary(se, "math.log %s : " + x.et))


@aten("aten._log_softmax_backward_data.default")
def log_softmax_backward(ctx, a, k):
    g, out, dim = a[0], a[1], a[2]
    o = ctx.ops
    s = o.sum(g, [dim], True)
    et = g.et

    def body(b, v):
        ex = b.op("math.exp %s : %s", v[1], et)
        t = b.op("arith.mulf %s, %s : %s", ex, v[2], et)
        return b.op("arith.subf %s, %s : %s", v[0], t, et)
    return o.ew([g, out, s], body, et)


@aten("aten._softmax.default")
def softmax(ctx, a, k):
    x, dim = a[0], a[1]
    o = ctx.ops
    m = o.amax(x, [dim], True)
    ex = o.ew([x, m], lambda b, v: b.op(
        "math.exp %s : %s", b.op("arith.subf %s, %s : %s", v[0], v[1], x.et),
        x.et), x.et)
    return o.div(ex, o.sum(ex, [dim], True))


@aten("aten._softmax_backward_data.default")
def softmax_backward(ctx, a, k):
    g, out, dim = a[0], a[1], a[2]
    o = ctx.ops
    go = o.mul(g, out)
    s = o.sum(go, [dim], True)
    et = g.et

    def body(b, v):
        t = b.op("arith.mulf %s, %s : %s", v[1], v[2], et)
        return b.op("arith.subf %s, %s : %s", v[0], t, et)
    return o.ew([go, out, s], body, et)


# ------------------------------------------------------------------ losses
@aten("aten.nll_loss_forward.default")
def nll_loss_forward(ctx, a, k):
    x, target, weight, reduction, ignore = a
    if weight is not None:
        raise EmitError("nll_loss with class weights")
    o, e = ctx.ops, ctx.e
    if x.rank == 1:
        x = o.unsqueeze(x, 0)
        target = o.unsqueeze(target, 0)
    xm = o.materialize(x)
    et = x.et

    def body(b, args, outs):
        t = args[0]
        ig = b.const(ignore, target.et)
        valid = b.op("arith.cmpi ne, %s, %s : %s", t, ig, target.et)
        z = b.const(0, target.et)
        safe = b.op("arith.select %s, %s, %s : %s", valid, t, z, target.et)
        ci = b.op("arith.index_cast %s : %s to index", safe, target.et)
        n = b.index(0)
        val = b.op("tensor.extract %s[%s, %s] : %s", xm.name, n, ci, xm.ptype)
        nv = b.op("arith.negf %s : %s", val, et)
        zf = b.const(0.0, et)
        return b.op("arith.select %s, %s, %s : %s", valid, nv, zf, et)
    tm = o.materialize(target)
    names = e.generic([(tm.name, tm.ptype, tm.et)], [["d0"]], [tm.shape[0]],
                      [["d0"]], ["parallel"], body, [et])
    picked = Tensor(names[0], [tm.shape[0]], [[0]], et, tm.sample)
    valid = o.ew([tm], lambda b, v: convert(b, b.op(
        "arith.cmpi ne, %s, %s : %s", v[0], b.const(ignore, tm.et), tm.et),
        I1, et), et)
    total = o.sum(valid, [0])
    if reduction == 0:
        out = picked
        total = e.full([], 0.0, et)
    elif reduction == 1:
        out = o.div(o.sum(picked, [0]), total)
    else:
        out = o.sum(picked, [0])
    return out, total


@aten("aten.nll_loss_backward.default")
def nll_loss_backward(ctx, a, k):
    g, x, target, weight, reduction, ignore, total = a
    if weight is not None:
        raise EmitError("nll_loss with class weights")
    o = ctx.ops
    squeeze = x.rank == 1
    if squeeze:
        x = o.unsqueeze(x, 0)
        target = o.unsqueeze(target, 0)
    N, C = x.shape
    et = x.et
    if reduction == 1:
        g = o.div(g, total)
    # One generic over (n, c): linalg.index 1 is the class only on these
    # materialized operands (an elementwise op over fine dims would order
    # its loops by its operands' layout).
    tm = o.materialize(target)
    gm = o.materialize(g)
    g_map = ["d0"] if reduction == 0 else []

    def body(b, args, outs):
        t, gv = args
        c = b.index(1)
        ci = b.op("arith.index_cast %s : index to %s", c, target.et)
        hit = b.op("arith.cmpi eq, %s, %s : %s", ci, t, target.et)
        ig = b.const(ignore, target.et)
        valid = b.op("arith.cmpi ne, %s, %s : %s", t, ig, target.et)
        both = b.op("arith.andi %s, %s : i1", hit, valid)
        ng = b.op("arith.negf %s : %s", gv, et)
        z = b.const(0.0, et)
        return b.op("arith.select %s, %s, %s : %s", both, ng, z, et)
    names = ctx.e.generic([(tm.name, tm.ptype, tm.et),
                           (gm.name, gm.ptype, gm.et)], [["d0"], g_map],
                          [N, C], [["d0", "d1"]], ["parallel"] * 2, body,
                          [et])
    r = Tensor(names[0], [N, C], [[0], [1]], et, tm.sample)
    return o.squeeze(r, [0]) if squeeze else r


@aten("aten.mse_loss.default")
def mse_loss(ctx, a, k):
    x, y = a[0], a[1]
    reduction = a[2] if len(a) > 2 else k.get("reduction", 1)
    o = ctx.ops
    d = o.sub(x, y)
    sq = o.mul(d, d)
    if reduction == 0:
        return sq
    s = o.sum(sq, list(range(sq.rank)))
    return o.mul(s, 1.0 / sq.numel()) if reduction == 1 else s


@aten("aten.mse_loss_backward.default")
def mse_loss_backward(ctx, a, k):
    g, x, y, reduction = a
    o = ctx.ops
    n = x.numel() if reduction == 1 else 1
    d = o.sub(x, y)
    return o.mul(o.mul(d, g), 2.0 / n)


# ---------------------------------------------------------- normalization
def _norm_stats(o, x, dims, eps):
    mean = o.mean(x, dims, True)
    xc = o.sub(x, mean)
    var = o.mean(o.mul(xc, xc), dims, True)
    et = x.et

    def body(b, v):
        t = b.op("arith.addf %s, %s : %s", v[0], b.const(float(eps), et), et)
        return b.op("math.rsqrt %s : %s", t, et)
    rstd = o.ew([var], body, et)
    return mean, rstd, xc


def _norm_input_grad(o, gx, s1, s2, xhat, rstd, N, et):
    """The input gradient of a normalization over N elements (layer, batch
    and group norm): rstd / N * (N * gx - sum(gx) - xhat * sum(gx * xhat)),
    gx the output gradient times the weight."""
    def body(b, v):
        gxv, a1, a2, xh, r = v
        n = b.const(float(N), et)
        t = b.op("arith.mulf %s, %s : %s", n, gxv, et)
        t = b.op("arith.subf %s, %s : %s", t, a1, et)
        u = b.op("arith.mulf %s, %s : %s", xh, a2, et)
        t = b.op("arith.subf %s, %s : %s", t, u, et)
        r2 = b.op("arith.divf %s, %s : %s", r, n, et)
        return b.op("arith.mulf %s, %s : %s", r2, t, et)
    return o.ew([gx, s1, s2, xhat, rstd], body, et)


@aten("aten.native_layer_norm.default")
def native_layer_norm(ctx, a, k):
    x, nshape, w, bias, eps = a
    o = ctx.ops
    dims = list(range(x.rank - len(nshape), x.rank))
    mean, rstd, xc = _norm_stats(o, x, dims, eps)
    out = o.mul(xc, rstd)
    if w is not None:
        out = o.mul(out, w)
    if bias is not None:
        out = o.add(out, bias)
    return out, mean, rstd


@aten("aten.native_layer_norm_backward.default")
def native_layer_norm_backward(ctx, a, k):
    g, x, nshape, mean, rstd, w, bias, mask = a
    o = ctx.ops
    axis = x.rank - len(nshape)
    dims = list(range(axis, x.rank))
    N = math.prod(x.shape[axis:])
    xhat = o.mul(o.sub(x, mean), rstd)
    gx = o.mul(g, w) if w is not None else g
    a1 = o.sum(gx, dims, True)
    a2 = o.sum(o.mul(gx, xhat), dims, True)
    et = x.et

    gin = _norm_input_grad(o, gx, a1, a2, xhat, rstd, N, et) \
        if mask[0] else None
    outer = list(range(axis))
    gw = o.sum(o.mul(g, xhat), outer) if (mask[1] and w is not None) else None
    gb = o.sum(g, outer) if (mask[2] and bias is not None) else None
    return gin, gw, gb


def _channel_view(o, t, C, rank):
    """A [C] tensor as [C, 1, ..., 1] (broadcasts over NCHW's dim 1)."""
    return o.view(t, [C] + [1] * (rank - 2))


@aten("aten.native_batch_norm.default", "aten._native_batch_norm_legit.default",
      "aten._native_batch_norm_legit_no_training.default")
def native_batch_norm(ctx, a, k):
    name = ctx.node_name
    if name.endswith("no_training.default"):
        x, w, bias, rm, rv, momentum, eps = a
        training = False
    elif name.startswith("aten._native_batch_norm_legit"):
        x, w, bias, rm, rv, training, momentum, eps = a
    else:
        x, w, bias, rm, rv, training, momentum, eps = a
    o = ctx.ops
    C = x.shape[1]
    dims = [0] + list(range(2, x.rank))
    if training:
        # Batch statistics over the samples: gacc refuses them (unless
        # allow-micro-batch-statistics), naming this op.
        mean, rstd, xc = _norm_stats(o, x, dims, eps)
        out = o.mul(xc, rstd)
        save_mean = o.view(mean, [C])
        save_rstd = o.view(rstd, [C])
        if rm is not None and rv is not None:
            # the kernel updates the running statistics in place (unbiased
            # variance), as ctx.mutate records for the step's state
            n = x.numel() // C
            var = o.view(o.mean(o.mul(xc, xc), dims, True), [C])
            unbiased = o.mul(var, float(n) / max(n - 1, 1))
            ctx.mutate(3, o.add(o.mul(rm, 1.0 - momentum),
                                o.mul(save_mean, float(momentum))))
            ctx.mutate(4, o.add(o.mul(rv, 1.0 - momentum),
                                o.mul(unbiased, float(momentum))))
    else:
        mean = _channel_view(o, rm, C, x.rank)
        var = _channel_view(o, rv, C, x.rank)

        def body(b, v):
            t = b.op("arith.addf %s, %s : %s", v[0], b.const(float(eps),
                                                             x.et), x.et)
            return b.op("math.rsqrt %s : %s", t, x.et)
        rstd = o.ew([var], body, x.et)
        out = o.mul(o.sub(x, mean), rstd)
        save_mean = ctx.e.full([0], 0.0, x.et)
        save_rstd = ctx.e.full([0], 0.0, x.et)
    if w is not None:
        out = o.mul(out, _channel_view(o, w, C, x.rank))
    if bias is not None:
        out = o.add(out, _channel_view(o, bias, C, x.rank))
    return out, save_mean, save_rstd


@aten("aten.native_batch_norm_backward.default")
def native_batch_norm_backward(ctx, a, k):
    g, x, w, rm, rv, save_mean, save_rstd, training, eps, mask = a
    o = ctx.ops
    C = x.shape[1]
    dims = [0] + list(range(2, x.rank))
    N = x.numel() // C
    et = x.et
    if training:
        mean = _channel_view(o, save_mean, C, x.rank)
        rstd = _channel_view(o, save_rstd, C, x.rank)
    else:
        mean = _channel_view(o, rm, C, x.rank)
        var = _channel_view(o, rv, C, x.rank)
        rstd = o.ew([var], lambda b, v: b.op(
            "math.rsqrt %s : %s", b.op("arith.addf %s, %s : %s", v[0],
                                       b.const(float(eps), et), et), et), et)
    xhat = o.mul(o.sub(x, mean), rstd)
    wv = _channel_view(o, w, C, x.rank) if w is not None else None
    gx = o.mul(g, wv) if wv is not None else g
    gin = None
    if mask[0]:
        if training:
            s1 = o.sum(gx, dims, True)
            s2 = o.sum(o.mul(gx, xhat), dims, True)

            gin = _norm_input_grad(o, gx, s1, s2, xhat, rstd, N, et)
        else:
            gin = o.mul(gx, rstd)
    gw = o.sum(o.mul(g, xhat), dims) if mask[1] and w is not None else None
    gb = o.sum(g, dims) if mask[2] else None
    return gin, gw, gb


@aten("aten.native_group_norm.default")
def native_group_norm(ctx, a, k):
    x, w, bias, N, C, HxW, G, eps = a
    o = ctx.ops
    xg = o.view(x, [N, G, (C // G) * HxW])
    mean, rstd, xc = _norm_stats(o, xg, [2], eps)
    out = o.view(o.mul(xc, rstd), x.shape)
    if w is not None:
        out = o.mul(out, _channel_view(o, w, C, x.rank))
    if bias is not None:
        out = o.add(out, _channel_view(o, bias, C, x.rank))
    return out, o.view(mean, [N, G]), o.view(rstd, [N, G])


@aten("aten.native_group_norm_backward.default")
def native_group_norm_backward(ctx, a, k):
    g, x, mean, rstd, w, N, C, HxW, G, mask = a
    o = ctx.ops
    et = x.et
    M = (C // G) * HxW
    shape = x.shape
    m3 = o.view(mean, [N, G, 1])
    r3 = o.view(rstd, [N, G, 1])
    xg = o.view(x, [N, G, M])
    xhat = o.view(o.mul(o.sub(xg, m3), r3), shape)
    gx = o.mul(g, _channel_view(o, w, C, x.rank)) if w is not None else g
    gin = None
    if mask[0]:
        gxg = o.view(gx, [N, G, M])
        xhg = o.view(xhat, [N, G, M])
        s1 = o.sum(gxg, [2], True)
        s2 = o.sum(o.mul(gxg, xhg), [2], True)

        gin = o.view(_norm_input_grad(o, gxg, s1, s2, xhg, r3, M, et), shape)
    dims = [0] + list(range(2, x.rank))
    gw = o.sum(o.mul(g, xhat), dims) if mask[1] and w is not None else None
    gb = o.sum(g, dims) if mask[2] else None
    return gin, gw, gb


@aten("aten.fill_.Scalar", "aten.fill.Scalar", "aten.zero_.default",
      "aten.zero.default")
def fill(ctx, a, k):
    x = a[0]
    value = a[1] if len(a) > 1 else 0
    return ctx.e.full(x.shape, value if x.et in FLOATS else int(value), x.et)

"""Convolution and pooling ops (NCHW), forward and backward, in
torch-mlir's forms: tensor.pad + linalg.conv_2d_nchw_fchw for the forward and
the input gradient, a generic over (f, c, kh, kw, n, oh, ow) for the weight
gradient (the sample loop is a reduction), windowed generics for pooling."""

from ._aten import aten
from ._emitter import I64, EmitError, Tensor, ttype


def _pad(ctx, x, low, high):
    """Zero padding of the spatial dims of a materialized NCHW tensor."""
    if not any(low) and not any(high):
        return x
    e = ctx.e
    shape = [x.shape[0], x.shape[1]] + [
        s + l + h for s, l, h in zip(x.shape[2:], low, high)]
    name = e.fresh("pad")
    z = e.scalar_const(0.0, x.et)
    idx = ", ".join("%%i%d_%s" % (i, name[1:]) for i in range(x.rank))
    e.emit("%s = tensor.pad %s low[0, 0, %s] high[0, 0, %s] {" %
           (name, x.name, ", ".join(str(v) for v in low), ", ".join(
               str(v) for v in high)))
    e.raw("    ^bb0(%s):" % ", ".join("%s: index" % s for s in idx.split(", ")))
    e.raw("      tensor.yield %s : %s" % (z, x.et))
    tail = "    } : %s to %s" % (x.ptype, ttype(shape, x.et))
    if e.loc is not None:
        tail += " loc(%s)" % e.loc
    e.raw(tail)
    return Tensor(name, shape, [[i] for i in range(len(shape))], x.et,
                  x.sample)


def _check2d(x, w, stride, padding, dilation, transposed, groups):
    if x.rank != 4:
        raise EmitError("convolution of rank %d (only 2-d, NCHW)" % x.rank)
    if transposed:
        raise EmitError("transposed convolution")
    if groups != 1:
        raise EmitError("grouped convolution (groups=%d)" % groups)


def _conv(ctx, xp, w, init, stride, dilation):
    e = ctx.e
    N, C = xp.shape[:2]
    F, _, KH, KW = w.shape
    OH = (xp.shape[2] - dilation[0] * (KH - 1) - 1) // stride[0] + 1
    OW = (xp.shape[3] - dilation[1] * (KW - 1) - 1) // stride[1] + 1
    shape = [N, F, OH, OW]
    if init is None:
        init = e.full(shape, 0.0, xp.et)
    name = e.fresh("conv")
    e.emit("%s = linalg.conv_2d_nchw_fchw {dilations = dense<[%d, %d]> : "
           "vector<2xi64>, strides = dense<[%d, %d]> : vector<2xi64>} "
           "ins(%s, %s : %s, %s) outs(%s : %s) -> %s" %
           (name, dilation[0], dilation[1], stride[0], stride[1], xp.name,
            w.name, xp.ptype, w.ptype, init.name, init.ptype, init.ptype))
    return Tensor(name, shape, [[i] for i in range(4)], xp.et, xp.sample)


@aten("aten.convolution.default")
def convolution(ctx, a, k):
    x, w, bias, stride, padding, dilation, transposed, opad, groups = a
    _check2d(x, w, stride, padding, dilation, transposed, groups)
    o = ctx.ops
    x, w = o.materialize(x), o.materialize(w)
    xp = _pad(ctx, x, padding, padding)
    N, F = x.shape[0], w.shape[0]
    OH = (xp.shape[2] - dilation[0] * (w.shape[2] - 1) - 1) // stride[0] + 1
    OW = (xp.shape[3] - dilation[1] * (w.shape[3] - 1) - 1) // stride[1] + 1
    init = None
    if bias is not None:
        init = o.materialize(o.copy(o.view(bias, [F, 1, 1]), [N, F, OH, OW]))
    return _conv(ctx, xp, w, init, stride, dilation)


@aten("aten.convolution_backward.default")
def convolution_backward(ctx, a, k):
    (g, x, w, bias_sizes, stride, padding, dilation, transposed, opad, groups,
     mask) = a
    _check2d(x, w, stride, padding, dilation, transposed, groups)
    o, e = ctx.ops, ctx.e
    g, x, w = o.materialize(g), o.materialize(x), o.materialize(w)
    N, C, H, W = x.shape
    F, _, KH, KW = w.shape
    OH, OW = g.shape[2:]
    gx = gw = gb = None
    if mask[0]:
        # g dilated by the stride, padded by d(K-1)-p, against the flipped,
        # transposed weight.
        gd = g
        if stride != [1, 1]:
            DH, DW = (OH - 1) * stride[0] + 1, (OW - 1) * stride[1] + 1
            z = e.full([N, F, DH, DW], 0.0, g.et)
            name = e.fresh("ins")
            e.emit("%s = tensor.insert_slice %s into %s[0, 0, 0, 0] [%d, %d, "
                   "%d, %d] [1, 1, %d, %d] : %s into %s" %
                   (name, g.name, z.name, N, F, OH, OW, stride[0], stride[1],
                    g.ptype, z.ptype))
            gd = Tensor(name, [N, F, DH, DW], [[i] for i in range(4)], g.et,
                        g.sample)
        low = [dilation[0] * (KH - 1) - padding[0],
               dilation[1] * (KW - 1) - padding[1]]
        if min(low) < 0:
            raise EmitError("convolution_backward with padding larger than "
                            "dilation * (kernel - 1)")
        high = [H + dilation[0] * (KH - 1) - gd.shape[2] - low[0],
                W + dilation[1] * (KW - 1) - gd.shape[3] - low[1]]
        if min(high) < 0:
            raise EmitError("convolution_backward: unsupported output size")
        gp = _pad(ctx, gd, low, high)

        def flip(b, args, outs):
            f, c = b.index(0), b.index(1)
            kh, kw = b.index(2), b.index(3)
            c1 = b.op("arith.constant %d : index", KH - 1)
            c2 = b.op("arith.constant %d : index", KW - 1)
            rh = b.op("arith.subi %s, %s : index", c1, kh)
            rw = b.op("arith.subi %s, %s : index", c2, kw)
            return b.op("tensor.extract %s[%s, %s, %s, %s] : %s", w.name, c,
                        f, rh, rw, w.ptype)
        names = e.generic([], [], [C, F, KH, KW], [["d0", "d1", "d2", "d3"]],
                          ["parallel"] * 4, flip, [w.et])
        wf = Tensor(names[0], [C, F, KH, KW], [[i] for i in range(4)], w.et)
        gx = _conv(ctx, gp, wf, None, [1, 1], dilation)
    if mask[1]:
        xp = _pad(ctx, x, padding, padding)
        sh, sw = stride
        dh, dw = dilation
        # loops (f, c, kh, kw, n, oh, ow)
        xmap = ["d4", "d1", "d5 * %d + d2 * %d" % (sh, dh),
                "d6 * %d + d3 * %d" % (sw, dw)]
        gmap = ["d4", "d0", "d5", "d6"]
        init = e.full([F, C, KH, KW], 0.0, x.et)

        def body(b, args, outs):
            t = b.op("arith.mulf %s, %s : %s", args[0], args[1], x.et)
            return b.op("arith.addf %s, %s : %s", outs[0], t, x.et)
        names = e.generic([(xp.name, xp.ptype, xp.et), (g.name, g.ptype, g.et)],
                          [xmap, gmap], [F, C, KH, KW],
                          [["d0", "d1", "d2", "d3"]],
                          ["parallel"] * 4 + ["reduction"] * 3, body, [x.et],
                          inits=[(init.name, init.ptype)])
        gw = Tensor(names[0], [F, C, KH, KW], [[i] for i in range(4)], x.et)
    if mask[2]:
        gb = o.sum(g, [0, 2, 3])
    return gx, gw, gb


def _pool_check(x, kernel, stride, padding, dilation, ceil_mode, what):
    stride = list(stride) or list(kernel)
    if x.rank != 4:
        raise EmitError("%s of rank %d (only NCHW)" % (what, x.rank))
    if any(padding) or (dilation and any(d != 1 for d in dilation)) or \
            ceil_mode or list(kernel) != stride or \
            x.shape[2] % kernel[0] or x.shape[3] % kernel[1]:
        raise EmitError("%s with kernel %s stride %s padding %s: only "
                        "non-overlapping windows (stride = kernel, no padding, "
                        "no ceil_mode) that tile the image" %
                        (what, list(kernel), stride, list(padding)))
    return stride


@aten("aten.max_pool2d_with_indices.default")
def max_pool2d(ctx, a, k):
    x, kernel = a[0], list(a[1])
    stride = list(a[2]) if len(a) > 2 else []
    padding = list(a[3]) if len(a) > 3 else [0, 0]
    dilation = list(a[4]) if len(a) > 4 else [1, 1]
    ceil = a[5] if len(a) > 5 else False
    _pool_check(x, kernel, stride, padding, dilation, ceil, "max_pool2d")
    e, o = ctx.e, ctx.ops
    N, C, H, W = x.shape
    KH, KW = kernel
    OH, OW = H // KH, W // KW
    # windows as a last dim (torch-mlir's max.dim form: a maximumf
    # reduction and the arg-max select of linalg.index 4)
    win = o.view(o.permute(o.view(x, [N, C, OH, KH, OW, KW]),
                           [0, 1, 2, 4, 3, 5]), [N, C, OH, OW, KH * KW])
    win = o.materialize(win)
    init_v = e.full([N, C, OH, OW], float("-inf"), x.et)
    init_i = e.full([N, C, OH, OW], 0, I64)
    out = ["d0", "d1", "d2", "d3"]

    def body(b, args, outs):
        v = args[0]
        gt = b.op("arith.cmpf ogt, %s, %s : %s", v, outs[0], x.et)
        mx = b.op("arith.maximumf %s, %s : %s", v, outs[0], x.et)
        k = b.op("arith.index_cast %s : index to i64", b.index(4))
        ni = b.op("arith.select %s, %s, %s : i64", gt, k, outs[1])
        return [mx, ni]
    names = e.generic([(win.name, win.ptype, x.et)],
                      [["d0", "d1", "d2", "d3", "d4"]], [N, C, OH, OW],
                      [out, out], ["parallel"] * 4 + ["reduction"], body,
                      [x.et, I64], inits=[(init_v.name, init_v.ptype),
                                          (init_i.name, init_i.ptype)])
    g = [[i] for i in range(4)]
    local = Tensor(names[1], [N, C, OH, OW], g, I64, win.sample)

    # PyTorch's indices: the flat position h * W + w of each maximum
    def flat(b, args, outs):
        k = args[0]
        kw = b.const(KW, I64)
        kh_ = b.op("arith.divsi %s, %s : i64", k, kw)
        kw_ = b.op("arith.remsi %s, %s : i64", k, kw)
        oh = b.op("arith.index_cast %s : index to i64", b.index(2))
        ow = b.op("arith.index_cast %s : index to i64", b.index(3))
        h = b.op("arith.addi %s, %s : i64", b.op(
            "arith.muli %s, %s : i64", oh, b.const(KH, I64)), kh_)
        w = b.op("arith.addi %s, %s : i64", b.op(
            "arith.muli %s, %s : i64", ow, kw), kw_)
        return b.op("arith.addi %s, %s : i64", b.op(
            "arith.muli %s, %s : i64", h, b.const(W, I64)), w)
    fl = e.generic([(local.name, local.ptype, I64)], [out], [N, C, OH, OW],
                   [out], ["parallel"] * 4, flat, [I64])
    return (Tensor(names[0], [N, C, OH, OW], g, x.et, win.sample),
            Tensor(fl[0], [N, C, OH, OW], g, I64, win.sample))


@aten("aten.max_pool2d_with_indices_backward.default")
def max_pool2d_backward(ctx, a, k):
    g, x, kernel, stride, padding, dilation, ceil, idx = a
    _pool_check(x, list(kernel), list(stride), list(padding), list(dilation),
                ceil, "max_pool2d")
    e, o = ctx.e, ctx.ops
    g, idx = o.materialize(g), o.materialize(idx)
    N, C, H, W = x.shape
    KH, KW = kernel
    m = ["d0", "d1", "d2 floordiv %d" % KH, "d3 floordiv %d" % KW]

    def body(b, args, outs):
        flat = b.op("arith.addi %s, %s : index", b.op(
            "arith.muli %s, %s : index", b.index(2),
            b.op("arith.constant %d : index", W)), b.index(3))
        fi = b.op("arith.index_cast %s : index to i64", flat)
        hit = b.op("arith.cmpi eq, %s, %s : i64", fi, args[1])
        z = b.const(0.0, g.et)
        return b.op("arith.select %s, %s, %s : %s", hit, args[0], z, g.et)
    names = e.generic([(g.name, g.ptype, g.et), (idx.name, idx.ptype, I64)],
                      [m, m], [N, C, H, W], [["d0", "d1", "d2", "d3"]],
                      ["parallel"] * 4, body, [g.et])
    return Tensor(names[0], [N, C, H, W], [[i] for i in range(4)], g.et,
                  g.sample)


@aten("aten.avg_pool2d.default")
def avg_pool2d(ctx, a, k):
    x, kernel = a[0], list(a[1])
    stride = list(a[2]) if len(a) > 2 else []
    padding = list(a[3]) if len(a) > 3 else [0, 0]
    ceil = a[4] if len(a) > 4 else False
    if len(a) > 6 and a[6] is not None:
        raise EmitError("avg_pool2d with divisor_override")
    _pool_check(x, kernel, stride, padding, None, ceil, "avg_pool2d")
    o = ctx.ops
    N, C, H, W = x.shape
    KH, KW = kernel
    v = o.view(x, [N, C, H // KH, KH, W // KW, KW])
    return o.mean(v, [3, 5])


@aten("aten.avg_pool2d_backward.default")
def avg_pool2d_backward(ctx, a, k):
    g, x, kernel, stride, padding, ceil, count_pad, div = a
    if div is not None:
        raise EmitError("avg_pool2d with divisor_override")
    _pool_check(x, list(kernel), list(stride), list(padding), None, ceil,
                "avg_pool2d")
    o = ctx.ops
    N, C, H, W = x.shape
    KH, KW = kernel
    gv = o.view(g, [N, C, H // KH, 1, W // KW, 1])
    r = o.copy(gv, [N, C, H // KH, KH, W // KW, KW])
    return o.view(o.mul(r, 1.0 / (KH * KW)), [N, C, H, W])


@aten("aten._adaptive_avg_pool2d.default")
def adaptive_avg_pool2d(ctx, a, k):
    x, size = a
    if list(size) != [1, 1]:
        raise EmitError("adaptive_avg_pool2d to %s (only (1, 1))" %
                        list(size))
    return ctx.ops.mean(x, [2, 3], True)


@aten("aten._adaptive_avg_pool2d_backward.default")
def adaptive_avg_pool2d_backward(ctx, a, k):
    g, x = a
    o = ctx.ops
    return o.mul(o.copy(g, x.shape), 1.0 / (x.shape[2] * x.shape[3]))

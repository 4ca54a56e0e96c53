#!/usr/bin/env python3
"""Generate examples/frontend/gpt_block.mlir, a GPT-style block training step
written op for op as torch-mlir's TorchToLinalg lowers it, and (with
--inputs DIR) gacc-check/gacc-run input files with ignore_index padding.

  python3 gen_gpt_block.py > gpt_block.mlir
  python3 gen_gpt_block.py --inputs DIR [--seed S]   # DIR/arg<i>.npy

Standard library only.
"""

import argparse
import os
import random
import sys
import textwrap

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frontend_gen as fg  # noqa: E402

B, T, D, V, F = 4, 4, 8, 11, 16
H = 1

HEADER = """\
GPT-style transformer block, one training step with AdamW, written op for op
as torch-mlir's TorchToLinalg lowers the PyTorch module (B = %(B)d sequences of
T = %(T)d tokens, D = %(D)d, vocabulary V = %(V)d, MLP width F = %(F)d, H = %(H)d heads).

PyTorch (nn.Module forward, then loss.backward(), then optim.AdamW.step()):
  x   = wte(tokens) + wpe                        # [B,T,D]
  x   = x + attn(ln_1(x))                        # causal multi-head attention
  x   = x + mlp(ln_2(x))                         # c_fc, GELU(tanh), c_proj
  logits = x @ lm_head                           # [B,T,V]
  loss = F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-100)
  grads all-reduced (average) over @dp, then AdamW (lr 0.01, betas 0.9/0.999,
  eps 1e-8, weight decay 0.01) on every parameter

Lowerings copied (torch-mlir lib/Conversion/TorchToLinalg/):
  aten.embedding        IndirectData.cpp: a generic over [B,T,D] whose payload
                        does tensor.extract %%wte[index_cast(token), linalg.index 2];
                        embedding_dense_backward: a one-hot reduction over the
                        tokens comparing the id with linalg.index of the V loop
                        (torch-mlir's index_put/TMTensor scatter is not linalg)
  aten.add (wpe)        Uncategorized.cpp: broadcast map (d0, d1, d2) -> (d1, d2)
  aten.layer_norm       decomposed (DecomposeAtenNativeLayerNormOp): mean and
                        variance as sums with keepdim maps (d0, d1, d2) -> (d0, d1, 0)
                        (Reduction.cpp), math.rsqrt, affine gamma/beta
  aten.matmul 3-D x 2-D Linear.cpp ConvertAtenMatmulOp (fifth case): weight
                        broadcast to [B,K,N] by a generic, linalg.batch_matmul
                        into tensor.empty + linalg.fill (q, k, v, out projection)
  aten.view + aten.mm   aot_autograd's trace of nn.Linear on [B,T,K]
                        (c_fc, c_proj, lm_head): tensor.collapse_shape to
                        [B*T,K], linalg.matmul, tensor.expand_shape
  aten.view (heads)     q.view(B,T,H,D/H).transpose(1,2) then view(B*H,T,D/H):
                        tensor.expand_shape, linalg.transpose, tensor.collapse_shape
                        (the sample dimension merged with the heads), and back
  aten.transpose.int    DataMovement.cpp: linalg.transpose
  aten.bmm              Linear.cpp ConvertAtenBmmOp: linalg.batch_matmul
  masked_fill(causal)   the mask from arange comparisons: linalg.index 1 >=
                        linalg.index 2 selects the score or -inf
  aten._softmax, aten._log_softmax  decomposed into amax/sum with keepdim maps;
                        backward _softmax_backward_data / _log_softmax_backward_data
  aten.gelu(tanh)       Uncategorized.cpp: one payload (tanh approximation);
                        gelu_backward(approximate=tanh) likewise
  aten.nll_loss_forward/backward  Uncategorized.cpp: the per-token extract-gather
                        %%logp[linalg.index 0, target] on the [B*T,V] view,
                        ignore_index = -100, mean over valid tokens (the count is a
                        prologue statistic), total_weight = numel - ignored;
                        torch-mlir extracts at the raw target, out of bounds for
                        -100 (the select discards it): here a select of the index
                        keeps the read in bounds
The backward is generated mechanically by gen_gpt_block.py (each emitter knows
its vector-Jacobian product); every gradient goes through shard.all_reduce
(average) on @dp, then AdamW (step, m, v as gacc.state / gacc.state_out).

Arguments: parameters
  %(params)s;
  tokens, targets [B,T] i64 (gacc.batch = 0; targets may be -100);
  m_*, v_* AdamW moments per parameter and step (gacc.state).
Results: loss, then param_out for each parameter, then state_out for every
  moment and the step count.

Regenerate: python3 gen_gpt_block.py > gpt_block.mlir. Variants for checking:
--no-keepdim (reductions without the size-1 dimension, same numbers),
--grads (gradients as gacc.grad results instead of AdamW), --inputs DIR
(arg<i>.npy with about a quarter of the targets -100)."""


def build(keepdim=True, grads_only=False, heads=2, batch=4):
    global H, B
    H = heads
    B = batch
    g = fg.Graph()
    g.keepdim = keepdim
    g.generator = "gen_gpt_block.py"
    specs = [("wte", (V, D)), ("wpe", (T, D)),
             ("ln1_w", (D,)), ("ln1_b", (D,)),
             ("wq", (D, D)), ("wk", (D, D)), ("wv", (D, D)), ("wo", (D, D)),
             ("ln2_w", (D,)), ("ln2_b", (D,)),
             ("fc_w", (D, F)), ("fc_b", (F,)), ("proj_w", (F, D)), ("proj_b", (D,)),
             ("lm_head", (D, V))]
    params = {}
    order = []
    for i, (nm, shp) in enumerate(specs):
        params[nm] = g.arg(nm, shp, attr="gacc.param", grad=True)
        order.append(nm)
    tokens = g.arg("tokens", (B, T), "i64", "gacc.batch = 0 : i64")
    targets = g.arg("targets", (B, T), "i64", "gacc.batch = 0 : i64")
    states = {}
    nparams = len(specs)
    for nm in order:
        p = params[nm]
        m = g.arg("m_" + nm, p.shape, attr="gacc.state")
        v = g.arg("v_" + nm, p.shape, attr="gacc.state")
        states[p.name] = (m, v)
    step = g.arg("step", (), attr="gacc.state")
    P = params
    i3 = fg.ident(3)

    g.comment("x = wte(tokens) + wpe   (aten.embedding, aten.add broadcast)")
    emb = g.embedding(P["wte"], tokens)
    x0 = g.binary("add", emb, i3, P["wpe"], ("d1", "d2"), (B, T, D))

    g.comment("h = ln_1(x)   (layer norm with keepdim maps)")
    h = g.layer_norm(x0, P["ln1_w"], P["ln1_b"])
    g.comment("q, k, v = h @ wq, h @ wk, h @ wv   (aten.matmul: broadcast + batch_matmul)")
    q = g.linear_bmm(h, P["wq"])
    k = g.linear_bmm(h, P["wk"])
    v = g.linear_bmm(h, P["wv"])
    if H > 1:
        Dh = D // H
        g.comment("heads: view [B,T,H,Dh] (expand_shape), transpose(1, 2), "
                  "view [B*H,T,Dh] (collapse_shape)")

        def heads(t):
            t = g.view_expand(t, [[0], [1], [2, 3]], (B, T, H, Dh))
            t = g.transpose_op(t, [0, 2, 1, 3])
            return g.view_collapse(t, [[0, 1], [2], [3]])
        q, k, v = heads(q), heads(k), heads(v)
    else:
        Dh = D
    g.comment("att = softmax(masked_fill(q @ k^T / sqrt(Dh), causal))   (bmm, transpose)")
    kt = g.transpose_op(k, [0, 2, 1])
    s = g.bmm(q, kt)
    s = g.scale(s, 1.0 / (Dh ** 0.5))
    s = g.causal_mask(s)
    p = g.softmax(s)
    g.comment("y = (att @ v) @ wo;  x = x + y")
    a = g.bmm(p, v)
    if H > 1:
        g.comment("merge heads: view [B,H,T,Dh], transpose(1, 2), view [B,T,D]")
        a = g.view_expand(a, [[0, 1], [2], [3]], (B, H, T, Dh))
        a = g.transpose_op(a, [0, 2, 1, 3])
        a = g.view_collapse(a, [[0], [1], [2, 3]])
    o = g.linear_bmm(a, P["wo"])
    x1 = g.binary("add", x0, i3, o, i3, (B, T, D))

    g.comment("x = x + c_proj(gelu(c_fc(ln_2(x))))   (view + mm + view, GELU tanh)")
    h2 = g.layer_norm(x1, P["ln2_w"], P["ln2_b"])
    u = g.linear_mm(h2, P["fc_w"])
    u = g.binary("add", u, i3, P["fc_b"], ("d2",), (B, T, F))
    ge = g.gelu_tanh(u)
    m2 = g.linear_mm(ge, P["proj_w"])
    m2 = g.binary("add", m2, i3, P["proj_b"], ("d2",), (B, T, D))
    x2 = g.binary("add", x1, i3, m2, i3, (B, T, D))

    g.comment("logits = x @ lm_head;  loss = cross_entropy(logits.view(-1, V), targets.view(-1))")
    logits = g.linear_mm(x2, P["lm_head"])
    lf = g.collapse(logits, [[0, 1], [2]])
    lf_grad_src = lf
    # collapse of logits is a view: its VJP is the expand of the gradient
    g.record(lf, [logits], lambda gg: [g.expand(gg, [[0, 1], [2]], (B, T, V))])
    logp = g.softmax(lf, log=True)
    tf = g.collapse(targets, [[0, 1]])
    loss = g.nll_loss_mean(logp, tf)

    g.comment("backward (generated: the vector-Jacobian product of each op, in reverse)")
    seed = g.fresh("seed")
    g.emit("%s = arith.constant dense<1.000000e+00> : tensor<f32>" % seed)
    grads = g.backward(loss, fg.Value(seed, ()))
    del lf_grad_src

    g.comment("data-parallel sync: average all-reduce of every gradient")
    red = []
    for nm in order:
        red.append(g.all_reduce(grads[P[nm].name]))
    if grads_only:
        results = [(loss, "gacc.loss")]
        for i, r in enumerate(red):
            results.append((r, "gacc.grad = %d : i64" % i))
        return g, g.function(results, ["GPT block variant with gacc.grad results "
                                       "instead of AdamW (for the autograd check)"],
                             grid=True)
    outs, step_out = fg.adamw(g, [P[nm] for nm in order], red, step, states)

    results = [(loss, "gacc.loss")]
    for i, (po, _, _) in enumerate(outs):
        results.append((po, "gacc.param_out = %d : i64" % i))
    arg_index = {v.name: i for i, (v, _) in enumerate(g.args)}
    for nm, (po, mo, vo) in zip(order, outs):
        m, v_ = states[P[nm].name]
        results.append((mo, "gacc.state_out = %d : i64" % arg_index[m.name]))
        results.append((vo, "gacc.state_out = %d : i64" % arg_index[v_.name]))
    results.append((step_out, "gacc.state_out = %d : i64" % arg_index[step.name]))
    plist = "\n  ".join(textwrap.wrap(", ".join(
        "%d %s [%s]" % (i, nm, ",".join(map(str, shp))) for i, (nm, shp) in enumerate(specs)),
        74))
    header = (HEADER % dict(B=B, T=T, D=D, V=V, F=F, H=H, params=plist)).split("\n")
    return g, g.function(results, header, grid=True)


def write_inputs(g, d, seed):
    """Parameters N(0, 1/fan_in), states 0, tokens in [0, V), targets in
    [0, V) with about a quarter -100 (at least one valid token per row)."""
    rng = random.Random(seed)
    os.makedirs(d, exist_ok=True)
    for i, (v, attr) in enumerate(g.args):
        n = 1
        for s in v.shape:
            n *= s
        path = os.path.join(d, "arg%d.npy" % i)
        if v.et == "i64":
            vals = [rng.randrange(V) for _ in range(n)]
            if v.name == "%targets":
                for r in range(v.shape[0]):
                    for c in range(1, v.shape[1]):
                        if rng.random() < 0.3:
                            vals[r * v.shape[1] + c] = -100
            fg.write_npy(path, vals, v.shape, "i8")
        elif "param" in attr:
            fan = v.shape[0] if v.shape else 1
            vals = [rng.gauss(0.0, 1.0) / fan ** 0.5 for _ in range(n)]
            if v.name in ("%ln1_w", "%ln2_w"):
                vals = [1.0 + 0.3 * rng.gauss(0.0, 1.0) for _ in range(n)]
            fg.write_npy(path, vals, v.shape, "f4")
        else:
            fg.write_npy(path, [0.0] * n, v.shape, "f4")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--inputs", help="write arg<i>.npy into this folder")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-keepdim", action="store_true",
                    help="reductions drop the size-1 dimension (maps (d0, d1) "
                    "instead of (d0, d1, 0)), for evaluators without keepdim maps")
    ap.add_argument("--grads", action="store_true",
                    help="return the gradients (gacc.grad) instead of the AdamW "
                    "update, so gacc-check compares them with LibTorch autograd")
    ap.add_argument("--heads", type=int, default=2,
                    help="attention heads (views [B,T,H,D/H] -> [B*H,T,D/H]); "
                    "gpt_block.mlir has 2")
    ap.add_argument("--batch", type=int, default=4,
                    help="sequences B (gpt_block.mlir has 4)")
    opts = ap.parse_args()
    g, text = build(not opts.no_keepdim, opts.grads, opts.heads, opts.batch)
    if opts.inputs:
        write_inputs(g, opts.inputs, opts.seed)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()

"""PyTorch models in: export a training step as gacc's input contract, and
compile it into a gradient-accumulated step that runs on the model's own
tensors.

    import gacc.torch
    text = gacc.torch.export_step(model, loss_fn, (x, y))
    step = gacc.torch.compile(model, loss_fn, (x, y), micro_batches=4)
    loss = step(x, y)            # writes every parameter's .grad

`loss_fn(model, *batch)` returns the scalar loss; dimension 0 of every batch
tensor is the sample dimension. The forward and PyTorch's own autograd
backward are traced with make_fx; the optimizer update (SGD, Adam, AdamW) is
traced from a functional copy of PyTorch's arithmetic. The result is one
`func.func` in linalg on tensors with gacc's role attributes.
"""

import torch

from . import _fx
from ._emitter import Emitter, F64, EmitError, Tensor, ttype
from ._fx import UnsupportedError, element_type
from ._ops import Ops
from ._optim import OptimizerSpec

__all__ = ["export_step", "compile", "UnsupportedError", "ExportedStep"]


class ExportedStep:
    """The text of an exported step and how its arguments and results map to
    the model (used by `compile`)."""

    def __init__(self):
        self.text = ""
        self.entry = "train_step"
        self.params = []  # unique nn.Parameters, in argument order
        self.param_names = []
        self.buffers = []  # (name, tensor)
        self.batch_shapes = []
        self.optimizer = None  # OptimizerSpec
        # argument kinds in order: ("param", i), ("buffer", i),
        # ("state", i, j), ("lr", g), ("batch", i)
        self.args = []
        # results in order: ("loss",), ("grad", i), ("param_out", i),
        # ("state_out", i, j)
        self.results = []


def _unique_params(model):
    """Trainable parameters once each (tied weights once), with every name
    under which each one is registered."""
    uniq, names, aliases = [], [], []
    index = {}
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        for pname, p in mod._parameters.items():
            if p is None or not p.requires_grad:
                continue
            full = "%s.%s" % (mod_name, pname) if mod_name else pname
            if id(p) not in index:
                index[id(p)] = len(uniq)
                uniq.append(p)
                names.append(full)
            aliases.append((full, index[id(p)]))
    return uniq, names, aliases


def _buffers(model):
    out = []
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        for bname, b in mod._buffers.items():
            if b is None:
                continue
            full = "%s.%s" % (mod_name, bname) if mod_name else bname
            out.append((full, b))
    # frozen parameters are constants of the step: pass them as state too
    for mod_name, mod in model.named_modules(remove_duplicate=False):
        for pname, p in mod._parameters.items():
            if p is not None and not p.requires_grad:
                full = "%s.%s" % (mod_name, pname) if mod_name else pname
                out.append((full, p))
    return out


def _scatter_add(ctx, updates, indices, shape):
    """embedding_dense_backward as gacc.scatter_add: O(tokens x D)."""
    o, e = ctx.ops, ctx.e
    um = o.materialize(updates)
    im = o.materialize(indices)
    init = e.full(shape, 0.0, um.et)
    name = e.fresh("sa")
    e.emit("%s = gacc.scatter_add ins(%s, %s : %s, %s) outs(%s : %s) -> %s" %
           (name, um.name, im.name, um.ptype, im.ptype, init.name, init.ptype,
            init.ptype))
    return Tensor(name, shape, [[i] for i in range(len(shape))], um.et)


def _escape(s):
    return s.replace("\\", "\\\\").replace('"', '\\"')


def _export(model, loss_fn, batch, optimizer=None, entry="train_step",
            data_parallel=True):
    """The exported step and its map to the model (ExportedStep). The ops'
    translations report what they cannot express with the node that asked;
    an inexpressible result layout is reported here."""
    try:
        return _export_step(model, loss_fn, batch, optimizer, entry,
                            data_parallel)
    except EmitError as err:
        raise UnsupportedError("gacc.torch cannot export the step of %s: %s"
                               % (type(model).__name__, err)) from None


def _export_step(model, loss_fn, batch, optimizer, entry, data_parallel):
    if not isinstance(batch, (tuple, list)):
        batch = (batch, )
    batch = tuple(batch)
    if not batch:
        raise UnsupportedError("the batch is empty: give at least one tensor "
                               "whose dimension 0 is the sample dimension")
    for i, b in enumerate(batch):
        if not isinstance(b, torch.Tensor) or b.dim() == 0:
            raise UnsupportedError(
                "batch[%d] is not a tensor with a sample dimension 0" % i)
    B = batch[0].shape[0]
    for i, b in enumerate(batch):
        if b.shape[0] != B:
            raise UnsupportedError(
                "batch[%d] has %d samples in dimension 0, batch[0] has %d" %
                (i, b.shape[0], B))
    info = ExportedStep()
    info.entry = entry
    params, names, aliases = _unique_params(model)
    if not params:
        raise UnsupportedError("the model has no trainable parameters")
    buffers = _buffers(model)
    info.params, info.param_names, info.buffers = params, names, buffers
    info.batch_shapes = [list(b.shape) for b in batch]
    P, NB = len(params), len(buffers)

    phase = ["forward"]

    def step_fn(*flat):
        ps = flat[:P]
        mapping = {name: ps[i] for name, i in aliases}
        for (bn, _), t in zip(buffers, flat[P:P + NB]):
            mapping[bn] = t
        from torch.nn.utils.stateless import _reparametrize_module
        with _reparametrize_module(model, mapping):
            loss = loss_fn(model, *flat[P + NB:])
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise UnsupportedError("loss_fn must return a scalar tensor")
        phase[0] = "backward"
        grads = torch.autograd.grad(loss, ps, allow_unused=True)
        return (loss.reshape(()), ) + tuple(grads)

    # The trace reads the parameters (no copy: nothing writes them) and may
    # update buffers (batch norm's running statistics) and, in a user's
    # loss_fn, the batch: those are copies.
    trace_args = [p.detach().requires_grad_(True) for p in params]
    trace_args += [b.detach().clone() for _, b in buffers]
    trace_args += [b.detach().clone() for b in batch]
    was_training = model.training
    try:
        gm = _fx.trace(step_fn, trace_args, model, phase)
    finally:
        model.train(was_training)

    e = Emitter()
    ops = Ops(e)
    tr = _fx.Translator(e, ops, _scatter_add,
                        mutable=range(P, P + len(buffers)))
    sig_args = []  # (name, type, attrs, loc)

    def arg(kind, name, shape, et, attrs):
        ssa = "%%arg%d" % len(sig_args)
        sig_args.append((ssa, ttype(shape, et), attrs, name))
        info.args.append(kind)
        return e.leaf(ssa, list(shape), et,
                      0 if attrs.startswith("gacc.batch") else None)

    p_vals = [arg(("param", i), names[i], p.shape, element_type(p.dtype),
                  "gacc.param") for i, p in enumerate(params)]
    b_vals = [arg(("buffer", i), bn, b.shape, element_type(b.dtype),
                  "gacc.state") for i, (bn, b) in enumerate(buffers)]
    spec = None
    s_vals, lr_vals = [], []
    if optimizer is not None:
        spec = OptimizerSpec(optimizer, params)
        info.optimizer = spec
        for i, p in enumerate(params):
            vals = []
            for j, (sn, t) in enumerate(zip(spec.state_names[i],
                                            spec.initial_state(i, p))):
                vals.append(arg(("state", i, j), "%s.%s" % (names[i], sn),
                                t.shape, element_type(t.dtype), "gacc.state"))
            s_vals.append(vals)
        lr_vals = [arg(("lr", g), "lr of param group %d" % g, [], F64,
                       "gacc.state")
                   for g in range(len(optimizer.param_groups))]
    x_vals = [arg(("batch", i), "batch[%d]" % i, b.shape,
                  element_type(b.dtype), "gacc.batch = 0 : i64")
              for i, b in enumerate(batch)]

    outs = tr.run(gm, p_vals + b_vals + x_vals)
    loss, grads = outs[0], list(outs[1:])
    for i, g in enumerate(grads):
        if g is None:
            grads[i] = e.full(list(params[i].shape), 0.0,
                              element_type(params[i].dtype))
    grads = [ops.materialize(g) for g in grads]
    e.loc = None
    if data_parallel:
        reduced = []
        for g in grads:
            name = e.fresh("ar")
            e.emit("%s = shard.all_reduce %s on @dp grid_axes = [0] "
                   "reduction = average : %s -> %s" %
                   (name, g.name, g.ptype, g.ptype))
            reduced.append(Tensor(name, g.fshape, g.groups, g.et))
        grads = reduced

    results = [(ops.materialize(loss), "gacc.loss")]
    info.results.append(("loss", ))
    # Buffers the step updates in place (batch norm's running statistics,
    # num_batches_tracked) are state results.
    for ph, value in sorted(tr.mutated.items()):
        i = ph - P
        results.append((ops.materialize(value),
                        "gacc.state_out = %d : i64" % (P + i)))
        info.results.append(("buffer_out", i))
    if spec is None:
        for i, g in enumerate(grads):
            results.append((g, "gacc.grad = %d : i64" % i))
            info.results.append(("grad", i))
    else:
        states0 = [spec.initial_state(i, p) for i, p in enumerate(params)]
        lrs0 = [torch.tensor(float(g["lr"]), dtype=torch.float64)
                for g in optimizer.param_groups]
        # the update is functional: parameters and stand-in gradients
        # uncopied
        flat0 = [p.detach() for p in params]
        flat0 += [p.detach() for p in params]
        for st in states0:
            flat0 += st
        flat0 += lrs0
        counts = [len(st) for st in states0]

        def opt_fn(*flat):
            ps = list(flat[:P])
            gs = list(flat[P:2 * P])
            k = 2 * P
            sts = []
            for c in counts:
                sts.append(list(flat[k:k + c]))
                k += c
            lrs = list(flat[k:])
            new_p, new_s = spec.update(ps, gs, sts, lrs)
            out = list(new_p)
            for s in new_s:
                out += s
            return tuple(out)

        ogm = _fx.trace(opt_fn, flat0, None, ["optimizer"])
        flat_in = list(p_vals) + grads
        for vals in s_vals:
            flat_in += vals
        flat_in += lr_vals
        outs = tr.run(ogm, flat_in)
        for i in range(P):
            results.append((ops.materialize(ops.cast(outs[i], p_vals[i].et)),
                            "gacc.param_out = %d : i64" % i))
            info.results.append(("param_out", i))
        k = P
        arg_index = {}
        for idx, kind in enumerate(info.args):
            arg_index[kind] = idx
        for i, vals in enumerate(s_vals):
            for j, v in enumerate(vals):
                r = ops.materialize(ops.cast(outs[k], v.et))
                results.append((r, "gacc.state_out = %d : i64" %
                                arg_index[("state", i, j)]))
                info.results.append(("state_out", i, j))
                k += 1

    lines = ["// Exported by gacc.torch.export_step from %s (%s)." %
             (type(model).__name__, "PyTorch " + torch.__version__),
             "shard.grid @dp(shape = ?) {sym_visibility = \"private\"}",
             "func.func @%s(" % entry]
    lines.append(",\n".join(
        '    %s: %s {%s} loc("%s")' % (ssa, ty, attrs, _escape(name))
        for ssa, ty, attrs, name in sig_args))
    lines[-1] += ")"
    lines.append("    -> (%s) {" % ", ".join(
        "%s {%s}" % (r.ptype, attrs) for r, attrs in results))
    lines.extend(e.lines)
    lines.append("    return %s : %s" % (", ".join(r.name for r, _ in results),
                                         ", ".join(r.ptype
                                                   for r, _ in results)))
    lines.append("}")
    info.text = "\n".join(lines) + "\n"
    return info


def export_step(model, loss_fn, batch, *, optimizer=None, entry="train_step",
                data_parallel=True):
    """The training step of `model` as MLIR text in gacc's input contract.

    Arguments of the function, in order: every trainable parameter once
    (`gacc.param`, tied weights once), every buffer and frozen parameter
    (`gacc.state`), with an optimizer its state per parameter (as in
    `optimizer.state[p]`) and the learning rate of each parameter group as a
    float64 scalar (`gacc.state`), then the batch tensors (`gacc.batch = 0`).
    Results: the loss (`gacc.loss`), then the gradients (`gacc.grad`) or,
    with an optimizer, the updated parameters and state (`gacc.param_out`,
    `gacc.state_out`). With `data_parallel` the gradients are averaged over
    the ranks (`shard.all_reduce`), as DistributedDataParallel does.

    Raises `UnsupportedError` naming the op and module it cannot export.
    """
    return _export(model, loss_fn, batch, optimizer, entry,
                   data_parallel).text


def compile(model, loss_fn, batch, *, micro_batches=None,
            micro_batch_sizes=None, optimizer=None, device="cpu",
            data_parallel=True, **pipeline_options):
    """Compiles the accumulated training step; returns a callable
    `step(*batch) -> loss` (see gacc.torch's module documentation)."""
    from ._runner import CompiledStep
    return CompiledStep(model, loss_fn, batch, micro_batches=micro_batches,
                        micro_batch_sizes=micro_batch_sizes,
                        optimizer=optimizer, device=device,
                        data_parallel=data_parallel,
                        pipeline_options=pipeline_options)

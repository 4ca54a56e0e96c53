"""Translates a traced FX graph of aten ops into the emitter's ops.

Every node keeps where it came from: `trace` records, for each node, the
stack of nn.Modules being run when it was created (forward hooks) and the
user's source line, so an op that cannot be translated is reported with the
module that produced it, and every emitted op carries that location into
gacc's own diagnostics (a refused BatchNorm names the BatchNorm).
"""

import contextlib
import os
import traceback

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx

from . import _aten, _aten_conv  # noqa: F401  (registers the handlers)
from ._aten import ATEN
from ._emitter import F32, F64, I1, I32, I64, EmitError, Tensor

_DTYPES = {
    torch.float32: F32,
    torch.float64: F64,
    torch.int64: I64,
    torch.int32: I32,
    torch.bool: I1,
    torch.bfloat16: "bf16",
    torch.float16: "f16",
}


class UnsupportedError(Exception):
    """An op, module or setting that gacc.torch cannot export exactly."""


def element_type(dtype):
    if dtype not in _DTYPES:
        raise UnsupportedError("tensors of dtype %s are not supported" % dtype)
    return _DTYPES[dtype]


_HERE = os.path.dirname(os.path.abspath(__file__))
_TORCH = os.path.dirname(os.path.abspath(torch.__file__))


def _user_frame():
    for fr in reversed(traceback.extract_stack()[:-2]):
        f = os.path.abspath(fr.filename)
        if f.startswith(_HERE) or f.startswith(_TORCH) or "<" in fr.filename:
            continue
        return fr.filename, fr.lineno
    return None


@contextlib.contextmanager
def record_provenance(model, phase):
    """Stamps every FX node created inside with `gacc_stack` (the modules
    being run, outermost first) and `gacc_src` (the user's file and line)."""
    stack = []
    handles = []
    if model is not None:
        for name, mod in model.named_modules(remove_duplicate=False):
            label = "%s (%s)" % (name or "<model>", type(mod).__name__)

            def pre(m, inp, label=label):
                stack.append(label)

            def post(m, inp, out, label=label):
                if stack and stack[-1] == label:
                    stack.pop()
            handles.append(mod.register_forward_pre_hook(pre))
            handles.append(mod.register_forward_hook(post))
    original = torch.fx.Graph.create_node

    def create_node(self, *args, **kwargs):
        node = original(self, *args, **kwargs)
        node.meta["gacc_stack"] = tuple(stack)
        node.meta["gacc_phase"] = phase[0]
        node.meta["gacc_src"] = _user_frame()
        return node
    torch.fx.Graph.create_node = create_node
    try:
        yield
    finally:
        torch.fx.Graph.create_node = original
        for h in handles:
            h.remove()


def describe(node):
    """`aten.foo (in attn (MultiheadAttention), model.py:12)`."""
    parts = []
    stack = node.meta.get("gacc_stack") or ()
    if stack:
        parts.append("in " + stack[-1])
    if node.meta.get("gacc_phase") == "backward":
        parts.append("in the backward pass")
    elif node.meta.get("gacc_phase") == "optimizer":
        parts.append("in the optimizer update")
    src = node.meta.get("gacc_src")
    if src:
        parts.append("%s:%d" % src)
    return "%s%s" % (_target_name(node), " (%s)" % ", ".join(parts)
                     if parts else "")


def location(node):
    """An MLIR location for the ops emitted for `node`."""
    stack = node.meta.get("gacc_stack") or ()
    name = _target_name(node)
    if stack:
        name = "%s: %s" % (stack[-1], name)
    if node.meta.get("gacc_phase") == "backward":
        name += " (backward)"
    src = node.meta.get("gacc_src")
    if src:
        # A name location without a file child: MLIR's diagnostic printer
        # shows the whole name (module, op, source line); with a file child
        # it would show the file and line only.
        name += " at %s:%d" % src
    return '"%s"' % name.replace("\\", "\\\\").replace('"', '\\"')


def _target_name(node):
    t = node.target
    if isinstance(t, torch._ops.OpOverload):
        return "aten.%s.%s" % (t._schema.name.split("::")[-1],
                               t._overloadname)
    return str(t)


_VIEW_OPS = {"view", "_unsafe_view", "_reshape_alias", "reshape", "t",
             "transpose", "permute", "unsqueeze", "squeeze", "expand",
             "slice", "select", "split", "alias", "detach", "as_strided",
             "diagonal", "unfold"}


class Translator:
    """Runs one FX graph on emitter values."""

    def __init__(self, emitter, ops, scatter_add, mutable=()):
        self.mutable = set(mutable)  # placeholder indices that may be updated
        self.mutated = {}  # placeholder index -> new value
        self.e = emitter
        self.ops = ops
        self.scatter_add_impl = scatter_add
        self.node_name = None
        self.val = None
        self.node = None

    def et_of(self, dtype):
        return element_type(dtype)

    def scatter_add(self, updates, indices, shape):
        return self.scatter_add_impl(self, updates, indices, shape)

    def run(self, gm, inputs):
        env = {}
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        self.placeholders = placeholders
        self.env = env
        assert len(placeholders) == len(inputs)
        for n, v in zip(placeholders, inputs):
            env[n] = v

        def lookup(a):
            if isinstance(a, torch.fx.Node):
                v = env[a]
                if v is None:
                    raise EmitError("uses a result that was not computed")
                return v
            if isinstance(a, (list, tuple)):
                return type(a)(lookup(x) for x in a)
            return a

        for node in gm.graph.nodes:
            if node.op == "placeholder":
                continue
            if node.op == "output":
                return lookup(node.args[0])
            self.node = node
            name0 = _target_name(node)
            if not node.users and node.op == "call_function" and \
                    not name0.partition(".")[2].partition(".")[0].endswith(
                        "_") and \
                    name0 not in ("aten.native_batch_norm.default",
                                  "aten._native_batch_norm_legit.default"):
                continue  # dead (and not an update of its operand)
            self.e.loc = location(node)
            try:
                if node.op == "get_attr":
                    env[node] = self.constant(getattr(gm, node.target))
                    continue
                if node.op != "call_function":
                    raise EmitError("FX node of kind %s" % node.op)
                if node.target is getattr(__import__("operator"), "getitem"):
                    env[node] = lookup(node.args[0])[node.args[1]]
                    continue
                name = _target_name(node)
                handler = ATEN.get(name)
                base, _, overload = name[5:].partition(".")
                if handler is None and base.endswith("_"):
                    handler = ATEN.get("aten.%s.%s" % (base[:-1], overload))
                    name = "aten.%s.%s" % (base[:-1], overload)
                if handler is None:
                    raise UnsupportedError(
                        "gacc.torch cannot export %s: the op has no "
                        "translation to linalg" % describe(node))
                self.node_name = name
                self.val = node.meta.get("tensor_meta")
                args = lookup(node.args)
                kwargs = {k: lookup(v) for k, v in node.kwargs.items()}
                inplace = base.endswith("_")
                if inplace:
                    self._check_inplace(node)
                res = handler(self, list(args), kwargs)
                if inplace and isinstance(res, Tensor):
                    res = self.ops.cast(res, args[0].et)
                env[node] = res
                if inplace:
                    self._rebind(node.args[0], res)
            except UnsupportedError:
                raise
            except EmitError as err:
                raise UnsupportedError("gacc.torch cannot export %s: %s" %
                                       (describe(node), err)) from None
            finally:
                self.e.loc = None
        raise EmitError("FX graph without output")

    def _rebind(self, target, value):
        self.env[target] = value
        if target.op == "placeholder":
            self.mutated[self.placeholders.index(target)] = value

    def mutate(self, arg_index, value):
        """A handler's op updates its operand `arg_index` in place (batch
        norm's running statistics)."""
        target = self.node.args[arg_index]
        if isinstance(target, torch.fx.Node):
            if target.op == "placeholder" and \
                    self.placeholders.index(target) not in self.mutable:
                raise UnsupportedError(
                    "gacc.torch cannot export %s: it updates an input of the "
                    "step that is not a buffer" % describe(self.node))
            self._rebind(target, self.ops.cast(value, self.env[target].et))

    def _check_inplace(self, node):
        target = node.args[0]
        for user in target.users:
            if user is not node and user.op == "call_function" and \
                    _target_name(user).split(".")[1] in _VIEW_OPS:
                # the view would have to see the update too
                raise UnsupportedError(
                    "gacc.torch cannot export %s: it writes in place to a "
                    "tensor that has views" % describe(node))
        if target.op == "placeholder" and \
                self.placeholders.index(target) in self.mutable:
            return
        if target.op == "placeholder":
            raise UnsupportedError(
                "gacc.torch cannot export %s: it writes to an input of the "
                "step in place" % describe(node))
        if target.op == "call_function":
            base = _target_name(target).split(".")[1]
            if base in _VIEW_OPS:
                raise UnsupportedError(
                    "gacc.torch cannot export %s: it writes in place to a "
                    "view of another tensor" % describe(node))

    def constant(self, t):
        if not isinstance(t, torch.Tensor):
            raise EmitError("constant attribute of type %s" % type(t))
        et = element_type(t.dtype)
        vals = t.detach().reshape(-1).tolist()
        if et == I1:
            vals = [bool(v) for v in vals]
        return self.e.constant(vals, list(t.shape), et)


def trace(fn, args, model=None, phase="forward"):
    """make_fx of `fn` on `args`, with provenance (see record_provenance);
    `phase` is a one-element list the caller switches to "backward".
    (Fake tensors would compute nothing, but nn.MultiheadAttention's
    masked_fill_ then lands on a view in 1.13's trace.)"""
    ph = phase if isinstance(phase, list) else [phase]
    with record_provenance(model, ph):
        return make_fx(fn)(*args)

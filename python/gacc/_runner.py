"""Runs a compiled step on a model's own tensors.

`gacc-compile` turns the exported step into a shared library with
`void gacc_step(void **)` (every memref as allocated and aligned pointers,
offset, sizes and strides, passed packed: arguments, then results) and its
signature text `gacc_step_signature`. This module loads it with ctypes,
points the memrefs at the parameters, buffers, optimizer state and batch
tensors, and copies the results back where PyTorch keeps them.
"""

import atexit
import ctypes
import os
import shutil
import subprocess
import tempfile

import torch

from . import _config, io
from ._fx import UnsupportedError

_DTYPES = {"float32": torch.float32, "float64": torch.float64,
           "int64": torch.int64, "int32": torch.int32, "bool": torch.bool,
           "bfloat16": torch.bfloat16, "float16": torch.float16,
           "int8": torch.int8, "uint8": torch.uint8}

_runtime = None


def _load_runtime():
    """libgaccrt, initialized once per process (MPI under mpirun)."""
    global _runtime
    if _runtime is None:
        path = os.path.join(_config.lib_dir(), "libgaccrt.so")
        rt = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
        rt.gaccrt_init.restype = ctypes.c_int
        if rt.gaccrt_init() != 0:
            raise RuntimeError("gacc: the runtime failed to initialize")
        rt.gaccrt_index_errors.restype = ctypes.c_int64
        rt.gaccrt_index_errors.argtypes = [ctypes.POINTER(ctypes.c_int64)] * 3
        rt.gaccrt_rank.restype = ctypes.c_int
        rt.gaccrt_world_size.restype = ctypes.c_int
        atexit.register(rt.gaccrt_finalize)
        _runtime = rt
    return _runtime


def rank():
    """This process's rank (0 without mpirun)."""
    return _load_runtime().gaccrt_rank()


def world_size():
    return _load_runtime().gaccrt_world_size()


class Signature:
    """gacc_step_signature, parsed (lib/Runner/StepIO.cpp writes it)."""

    def __init__(self, text):
        lines = text.splitlines()
        if not lines or lines[0] != "gacc-step-signature 1":
            raise RuntimeError("gacc: unknown step signature version")
        self.args, self.results, self.gathers = [], [], []
        self.batch = 0
        for line in lines[1:]:
            key, _, rest = line.partition(" ")
            if key in ("arg", "result"):
                head, _, tail = rest.partition("[")
                role, dtype, index, bound, mask = head.split()
                shape = [int(s) for s in tail.split("]")[0].split(",") if s]
                entry = {"role": role, "dtype": _DTYPES[dtype],
                         "index": int(index), "shape": shape}
                (self.args if key == "arg" else self.results).append(entry)
            elif key == "batch":
                self.batch = int(rest)
            elif key == "gather":
                self.gathers.append(rest)


class CompiledStep:
    """`step(*batch)`: one accumulated training step (see gacc.torch)."""

    def __init__(self, model, loss_fn, batch, *, micro_batches=None,
                 micro_batch_sizes=None, optimizer=None, device="cpu",
                 data_parallel=True, pipeline_options=None):
        if device != "cpu":
            raise UnsupportedError(
                "gacc.torch.compile runs steps on device='cpu'; for CUDA, "
                "export the step and compile it with gacc-compile "
                "--device=cuda")
        self.model = model
        self.loss_fn = loss_fn
        self.optimizer = optimizer
        self.micro_batches = micro_batches
        self.micro_batch_sizes = micro_batch_sizes
        self.data_parallel = data_parallel
        self.pipeline_options = dict(pipeline_options or {})
        self.workdir = tempfile.mkdtemp(prefix="gacc-torch-")
        atexit.register(shutil.rmtree, self.workdir, True)
        self.rt = _load_runtime()
        # One compiled step per batch size: the full batch, and each smaller
        # last batch, compiled when first seen (its normalizers are the
        # traced ones, exact for any loss).
        self.steps = {}
        self.batch_size = batch[0].shape[0]
        self.info = self._build(tuple(batch)).info
        self.state = None
        if optimizer is not None:
            spec = self.info.optimizer
            self.state = [spec.initial_state(i, p)
                          for i, p in enumerate(self.info.params)]

    def _build(self, batch):
        from .torch import _export
        n = batch[0].shape[0]
        info = _export(self.model, self.loss_fn, batch, self.optimizer,
                       data_parallel=self.data_parallel)
        src = os.path.join(self.workdir, "step%d.mlir" % n)
        io.write_file_atomically(src, info.text)
        flags = []
        if self.micro_batch_sizes is not None and n == self.batch_size:
            flags.append("--micro-batch-sizes=%s" % ",".join(
                str(s) for s in self.micro_batch_sizes))
        else:
            m = self.micro_batches or (len(self.micro_batch_sizes)
                                       if self.micro_batch_sizes else 1)
            flags.append("--micro-batches=%d" % min(m, n))
        for key, value in self.pipeline_options.items():
            flag = "--" + key.replace("_", "-")
            if value is True:
                flags.append(flag)
            elif value is not False and value is not None:
                flags.append("%s=%s" % (flag, value))
        so = os.path.join(self.workdir, "step%d.so" % n)
        cmd = [_config.tool("gacc-compile"), src, "-o", so] + flags
        proc = subprocess.run(cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        if proc.returncode != 0:
            raise UnsupportedError(
                "gacc-compile refused the exported step (%s):\n%s" %
                (type(self.model).__name__, proc.stdout.strip()))
        lib = _Library(so, info)
        self.steps[n] = lib
        return lib


    def _arg_tensor(self, kind, batch):
        info = self.info
        if kind[0] == "param":
            return info.params[kind[1]].detach()
        if kind[0] == "buffer":
            return info.buffers[kind[1]][1].detach()
        if kind[0] == "state":
            return self.state[kind[1]][kind[2]]
        if kind[0] == "lr":
            return torch.tensor(
                float(self.optimizer.param_groups[kind[1]]["lr"]),
                dtype=torch.float64)
        return batch[kind[1]]

    def __call__(self, *batch):
        info = self.info
        if len(batch) != len(info.batch_shapes):
            raise TypeError("the step takes %d batch tensors, got %d" %
                            (len(info.batch_shapes), len(batch)))
        B = self.batch_size
        n = batch[0].shape[0]
        if not 1 <= n <= B:
            raise ValueError(
                "the step was compiled for batches of up to %d samples; got "
                "%d" % (B, n))
        lib = self.steps.get(n) or self._build(tuple(batch))
        sig = lib.sig
        prepared = []
        for i, (x, shape) in enumerate(zip(batch, info.batch_shapes)):
            if list(x.shape[1:]) != shape[1:] or x.shape[0] != n:
                raise ValueError(
                    "batch[%d] has shape %s; the step takes [N] + %s with the "
                    "same N for every batch tensor" %
                    (i, list(x.shape), shape[1:]))
            prepared.append(x)
        tensors, keep = [], []
        kinds = iter(info.args)
        for a in sig.args:
            if a["role"] == "sample_count":
                t = torch.tensor(n, dtype=torch.int64)
            else:
                kind = next(kinds)
                t = self._arg_tensor(kind, prepared)
            t = t.to(a["dtype"]).contiguous()
            if list(t.shape) != a["shape"]:
                raise ValueError("argument shape %s, the step takes %s" %
                                 (list(t.shape), a["shape"]))
            tensors.append(t)
        tensors += lib.results
        packed = _pack(tensors, keep)
        self.rt.gaccrt_index_errors_reset()
        lib.entry(packed)
        idx, bound, site = (ctypes.c_int64(), ctypes.c_int64(),
                            ctypes.c_int64())
        if self.rt.gaccrt_index_errors(ctypes.byref(idx), ctypes.byref(bound),
                                       ctypes.byref(site)):
            where = sig.gathers[site.value] if 0 <= site.value < len(
                sig.gathers) else "site #%d" % site.value
            # gacc-guard-divisions' sites: the divisor, then the dividend.
            if where.startswith("division: "):
                op = where[len("division: "):]
                if idx.value == 0:
                    raise ZeroDivisionError("integer division by zero in %s" %
                                            op)
                raise OverflowError("signed division of %d by %d overflows "
                                    "in %s" % (bound.value, idx.value, op))
            raise IndexError("index %d out of range [0, %d) in gather at %s" %
                             (idx.value, bound.value, where))
        return self._write_back(lib)

    def _write_back(self, lib):
        info = self.info
        loss = None
        with torch.no_grad():
            for kind, r in zip(lib.info.results, lib.results):
                if kind[0] == "loss":
                    loss = r.clone()
                elif kind[0] == "grad":
                    p = info.params[kind[1]]
                    p.grad = r.clone().to(p.dtype)
                elif kind[0] == "param_out":
                    info.params[kind[1]].copy_(r)
                elif kind[0] == "state_out":
                    self.state[kind[1]][kind[2]] = r.clone()
                elif kind[0] == "buffer_out":
                    info.buffers[kind[1]][1].copy_(r)
        if self.optimizer is not None:
            spec = info.optimizer
            for i, p in enumerate(info.params):
                st = self.optimizer.state[p]
                for name, t in zip(spec.state_names[i], self.state[i]):
                    st[name] = t
        return loss


class _Library:
    """One compiled step: the library, its signature, its result buffers."""

    def __init__(self, so, info):
        self.info = info
        self.lib = ctypes.CDLL(so)
        text = ctypes.cast(
            ctypes.addressof(ctypes.c_char.in_dll(self.lib,
                                                  "gacc_step_signature")),
            ctypes.c_char_p).value.decode()
        self.sig = Signature(text)
        self.entry = self.lib.gacc_step
        self.entry.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.entry.restype = None
        self._check_signature()
        self.results = [torch.empty(r["shape"], dtype=r["dtype"])
                        for r in self.sig.results]

    def _check_signature(self):
        info, sig = self.info, self.sig
        own = [a for a in sig.args if a["role"] != "sample_count"]
        if len(own) != len(info.args) or len(sig.results) != len(
                info.results):
            raise RuntimeError(
                "gacc: the compiled step's signature (%d arguments, %d "
                "results) is not the exported step's (%d, %d)" %
                (len(own), len(sig.results), len(info.args),
                 len(info.results)))


def _pack(tensors, keep):
    """The packed memref fields of `tensors` (kept alive in `keep`)."""
    fields = []
    for t in tensors:
        ptr = ctypes.c_void_p(t.data_ptr())
        fields += [ptr, ctypes.c_void_p(t.data_ptr()), ctypes.c_int64(0)]
        fields += [ctypes.c_int64(s) for s in t.shape]
        fields += [ctypes.c_int64(s) for s in t.stride()]
    keep.extend(fields)
    keep.extend(tensors)
    arr = (ctypes.c_void_p * len(fields))(
        *[ctypes.addressof(f) for f in fields])
    keep.append(arr)
    return arr

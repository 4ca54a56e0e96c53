#!/usr/bin/env python3
"""Generates an MLP training-step graph for gacc.

  gen_mlp.py --batch B --dims D0,D1,...,DL [--output sgd|grads] [--no-all-reduce]

Layers l = 1..L: z_l = a_{l-1} W_l + b_l, a_l = relu(z_l) (no ReLU on the
last layer), softmax cross-entropy over integer labels, mean over the batch,
the hand-written backward, a data-parallel average all-reduce on every
gradient (unless --no-all-reduce) and either SGD inside the step
(gacc.param_out, lr is a gacc.state argument; default) or the gradients as
results (gacc.grad).

Arguments: W1, b1, ..., WL, bL (params), x [B, D0] (batch), labels [B] i64
(batch), lr (state, only with sgd). Prints the MLIR on stdout.
"""

import argparse


def ty(shape):
    return "tensor<" + "x".join(str(s) for s in shape) + ("x" if shape else "") + "f32>"


class Emitter:
    def __init__(self):
        self.lines = []
        self.counter = 0

    def name(self, base):
        self.counter += 1
        return f"%{base}{self.counter}"

    def emit(self, text):
        self.lines.append("  " + text)

    def empty(self, shape):
        v = self.name("e")
        self.emit(f"{v} = tensor.empty() : {ty(shape)}")
        return v

    def zeros(self, shape, value="%zero"):
        e = self.empty(shape)
        v = self.name("z")
        self.emit(f"{v} = linalg.fill ins({value} : f32) outs({e} : {ty(shape)}) -> {ty(shape)}")
        return v

    def matmul(self, a, b, m, k, n):
        init = self.zeros([m, n])
        v = self.name("mm")
        self.emit(f"{v} = linalg.matmul ins({a}, {b} : {ty([m, k])}, {ty([k, n])}) "
                  f"outs({init} : {ty([m, n])}) -> {ty([m, n])}")
        return v

    def transpose(self, a, m, n):
        e = self.empty([n, m])
        v = self.name("t")
        self.emit(f"{v} = linalg.transpose ins({a} : {ty([m, n])}) outs({e} : {ty([n, m])}) permutation = [1, 0]")
        return v

    def generic(self, ins, maps, out_shape, iterators, body, init=None):
        """ins: list of (value, type); maps: affine maps for ins + out."""
        out = init if init is not None else self.empty(out_shape)
        v = self.name("g")
        args = ", ".join(f"%in{i}: f32" if t.endswith("f32>") else f"%in{i}: i64"
                         for i, (_, t) in enumerate(ins))
        self.emit(f"{v} = linalg.generic {{indexing_maps = [{', '.join(maps)}], "
                  f"iterator_types = [{', '.join(repr(i).replace(chr(39), chr(34)) for i in iterators)}]}}")
        self.emit(f"    ins({', '.join(x for x, _ in ins)} : {', '.join(t for _, t in ins)}) "
                  f"outs({out} : {ty(out_shape)}) {{")
        self.emit(f"^bb0({args}{', ' if args else ''}%out: f32):")
        for line in body:
            self.emit("  " + line)
        self.emit(f"}} -> {ty(out_shape)}")
        return v

    def reduce(self, a, shape, dims, init_value="%zero", combiner="arith.addf"):
        out_shape = [s for i, s in enumerate(shape) if i not in dims]
        init = self.zeros(out_shape, init_value)
        v = self.name("r")
        self.emit(f"{v} = linalg.reduce ins({a} : {ty(shape)}) outs({init} : {ty(out_shape)}) "
                  f"dimensions = [{', '.join(str(d) for d in dims)}]")
        self.emit("  (%in: f32, %init: f32) {")
        self.emit(f"    %s = {combiner} %init, %in : f32")
        self.emit("    linalg.yield %s : f32")
        self.emit("  }")
        return v


ID2 = "affine_map<(d0, d1) -> (d0, d1)>"
ROW = "affine_map<(d0, d1) -> (d0)>"
COL = "affine_map<(d0, d1) -> (d1)>"
SCALAR2 = "affine_map<(d0, d1) -> ()>"


def generate(batch, dims, output, all_reduce):
    layers = len(dims) - 1
    classes = dims[-1]
    e = Emitter()
    params = []
    for l in range(1, layers + 1):
        params.append((f"%W{l}", [dims[l - 1], dims[l]]))
        params.append((f"%b{l}", [dims[l]]))
    args = [f"{n}: {ty(s)} {{gacc.param}}" for n, s in params]
    args.append(f"%x: {ty([batch, dims[0]])} {{gacc.batch = 0 : i64}}")
    args.append(f"%labels: tensor<{batch}xi64> {{gacc.batch = 0 : i64}}")
    if output == "sgd":
        args.append("%lr: tensor<f32> {gacc.state}")
    e.emit("%zero = arith.constant 0.0 : f32")
    e.emit("%ninf = arith.constant 0xFF800000 : f32")
    e.emit(f"%inv_b = arith.constant dense<{1.0 / batch!r}> : tensor<f32>")

    # Forward.
    acts = ["%x"]
    pre = [None]
    a = "%x"
    for l in range(1, layers + 1):
        m, k, n = batch, dims[l - 1], dims[l]
        xw = e.matmul(a, f"%W{l}", m, k, n)
        z = e.generic([(xw, ty([m, n])), (f"%b{l}", ty([n]))], [ID2, COL, ID2], [m, n],
                      ["parallel", "parallel"],
                      ["%s = arith.addf %in0, %in1 : f32", "linalg.yield %s : f32"])
        pre.append(z)
        if l < layers:
            a = e.generic([(z, ty([m, n]))], [ID2, ID2], [m, n], ["parallel", "parallel"],
                          ["%c0 = arith.constant 0.0 : f32", "%r = arith.maximumf %in0, %c0 : f32",
                           "linalg.yield %r : f32"])
            acts.append(a)
    logits = pre[-1]
    B, C = batch, classes
    mx = e.reduce(logits, [B, C], [1], "%ninf", "arith.maximumf")
    ex = e.generic([(logits, ty([B, C])), (mx, ty([B]))], [ID2, ROW, ID2], [B, C],
                   ["parallel", "parallel"],
                   ["%s = arith.subf %in0, %in1 : f32", "%ex = math.exp %s : f32", "linalg.yield %ex : f32"])
    sumex = e.reduce(ex, [B, C], [1])
    onehot = e.generic([("%labels", f"tensor<{B}xi64>")], [ROW, ID2], [B, C], ["parallel", "parallel"],
                       ["%c = linalg.index 1 : index", "%ci = arith.index_cast %c : index to i64",
                        "%eq = arith.cmpi eq, %ci, %in0 : i64", "%one = arith.constant 1.0 : f32",
                        "%c0 = arith.constant 0.0 : f32", "%v = arith.select %eq, %one, %c0 : f32",
                        "linalg.yield %v : f32"])
    nll = e.generic([(logits, ty([B, C])), (mx, ty([B])), (sumex, ty([B])), (onehot, ty([B, C]))],
                    [ID2, ROW, ROW, ID2, ROW], [B], ["parallel", "reduction"],
                    ["%s = arith.subf %in0, %in1 : f32", "%lse = math.log %in2 : f32",
                     "%lp = arith.subf %s, %lse : f32", "%t = arith.mulf %in3, %lp : f32",
                     "%n = arith.negf %t : f32", "%a = arith.addf %out, %n : f32", "linalg.yield %a : f32"],
                    init=e.zeros([B]))
    nllsum = e.reduce(nll, [B], [0])
    e.emit(f"%loss = arith.mulf {nllsum}, %inv_b : tensor<f32>")

    # Backward.
    dz = e.generic([(ex, ty([B, C])), (sumex, ty([B])), (onehot, ty([B, C])), ("%inv_b", "tensor<f32>")],
                   [ID2, ROW, ID2, SCALAR2, ID2], [B, C], ["parallel", "parallel"],
                   ["%p = arith.divf %in0, %in1 : f32", "%d = arith.subf %p, %in2 : f32",
                    "%r = arith.mulf %d, %in3 : f32", "linalg.yield %r : f32"])
    grads = {}
    for l in range(layers, 0, -1):
        k, n = dims[l - 1], dims[l]
        aT = e.transpose(acts[l - 1], B, k)
        grads[f"%W{l}"] = e.matmul(aT, dz, k, B, n)
        grads[f"%b{l}"] = e.reduce(dz, [B, n], [0])
        if l > 1:
            WT = e.transpose(f"%W{l}", k, n)
            da = e.matmul(dz, WT, B, n, k)
            dz = e.generic([(da, ty([B, k])), (pre[l - 1], ty([B, k]))], [ID2, ID2, ID2], [B, k],
                           ["parallel", "parallel"],
                           ["%c0 = arith.constant 0.0 : f32", "%pos = arith.cmpf ogt, %in1, %c0 : f32",
                            "%r = arith.select %pos, %in0, %c0 : f32", "linalg.yield %r : f32"])
    results = [("%loss", "tensor<f32>", "gacc.loss")]
    for i, (n, s) in enumerate(params):
        g = grads[n]
        if all_reduce:
            v = e.name("ar")
            e.emit(f"{v} = shard.all_reduce {g} on @dp grid_axes = [0] reduction = average : {ty(s)} -> {ty(s)}")
            g = v
        if output == "sgd":
            maps = ([ID2, ID2, SCALAR2, ID2] if len(s) == 2 else
                    ["affine_map<(d0) -> (d0)>", "affine_map<(d0) -> (d0)>",
                     "affine_map<(d0) -> ()>", "affine_map<(d0) -> (d0)>"])
            v = e.generic([(n, ty(s)), (g, ty(s)), ("%lr", "tensor<f32>")], maps, s,
                          ["parallel"] * len(s),
                          ["%u = arith.mulf %in2, %in1 : f32", "%q = arith.subf %in0, %u : f32",
                           "linalg.yield %q : f32"])
            results.append((v, ty(s), f"gacc.param_out = {i} : i64"))
        else:
            results.append((g, ty(s), f"gacc.grad = {i} : i64"))

    head = [f"// MLP training step generated by bench/gen_mlp.py: batch {batch}, dims "
            f"{','.join(str(d) for d in dims)}, {output}{'' if all_reduce else ', no all-reduce'}."]
    if all_reduce:
        head.append('shard.grid @dp(shape = ?) {sym_visibility = "private"}')
    sig = ",\n    ".join(args)
    res = ", ".join(f"{t} {{{attr}}}" for _, t, attr in results)
    head.append(f"func.func @train_step(\n    {sig})\n    -> ({res}) {{")
    tail = [f"  return {', '.join(v for v, _, _ in results)} : {', '.join(t for _, t, _ in results)}", "}"]
    return "\n".join(head + e.lines + tail) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--dims", required=True, help="D0,D1,...,DL (input, hidden..., classes)")
    p.add_argument("--output", choices=["sgd", "grads"], default="sgd")
    p.add_argument("--no-all-reduce", action="store_true")
    a = p.parse_args()
    dims = [int(d) for d in a.dims.split(",")]
    if len(dims) < 2 or a.batch < 1 or min(dims) < 1:
        p.error("need --batch >= 1 and at least two positive dims")
    print(generate(a.batch, dims, a.output, not a.no_all_reduce), end="")


if __name__ == "__main__":
    main()

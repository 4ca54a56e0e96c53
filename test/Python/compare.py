"""Runs gacc.torch.compile'd steps against PyTorch's full-batch step in
float64 and prints one PASS/FAIL line per check (exit 1 on a FAIL).

  compare.py NAME [NAME ...] [--micro-batches M] [--steps K] [--tail N]

--tail N: the second step runs on the first N samples only (a smaller last
batch, runtime-batch-size) and PyTorch on the same N samples."""

import argparse
import copy
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import gacc.torch  # noqa: E402

TOL = 2e-5  # max |gacc - ref| / max |ref|, per parameter group of results


def reference_optimizer(opt, model):
    hp = {k: v for k, v in opt.defaults.items()
          if k not in ("foreach", "differentiable", "capturable", "fused")}
    return type(opt)(model.parameters(), **hp)


def to64(batch):
    return tuple(b.double() if b.is_floating_point() else b for b in batch)


def rel_err(a, b, grads=None):
    """max |a - b| / max |b|. With `grads` (the float64 reference gradients
    of an optimizer step), elements whose exact gradient is rounding noise
    (below 1e-6 of the largest gradient: a bias before a softmax over the
    dimension it is broadcast along) are left out: Adam divides that noise by
    its own square root, so the update there is decided by the noise, as
    gacc-check's README explains."""
    masks = [None] * len(b)
    if grads is not None:
        top = max(float(g.abs().max()) for g in grads)
        masks = [g.abs() > 1e-6 * top for g in grads]
    num = 0.0
    for x, y, m in zip(a, b, masks):
        d = (x.double() - y).abs()
        if m is not None:
            d = d[m]
        if d.numel():
            num = max(num, float(d.max()))
    den = max(float(y.abs().max()) for y in b)
    return num / max(den, 1e-30)


def run(name, m_count, steps, tail):
    model, loss_fn, batch, opt = models.MODELS[name]()
    ref = copy.deepcopy(model).double()
    ref_opt = reference_optimizer(opt, ref) if opt is not None else None
    step = gacc.torch.compile(model, loss_fn, batch, micro_batches=m_count,
                              optimizer=opt)
    ok = True
    for k in range(steps):
        b = batch
        if tail and k == steps - 1:
            b = tuple(x[:tail] for x in batch)
        loss = step(*b)
        if ref_opt is not None:
            ref_opt.zero_grad()
        else:
            ref.zero_grad()
        ref_loss = loss_fn(ref, *to64(b))
        ref_loss.backward()
        if ref_opt is not None:
            ref_opt.step()
            got = [p.data for p in model.parameters()]
            want = [p.data for p in ref.parameters()]
            grads = [p.grad for p in ref.parameters()]
            what = "parameters after the optimizer step"
        else:
            got = [p.grad for p in model.parameters()]
            want = [p.grad for p in ref.parameters()]
            grads = None
            what = "gradients"
        e_loss = abs(float(loss) - float(ref_loss)) / max(abs(float(ref_loss)),
                                                          1e-30)
        e = rel_err(got, want, grads)
        good = e <= TOL and e_loss <= TOL
        ok &= good
        print("%s %s m=%d step %d%s: loss %.6g (PyTorch float64 %.6g, rel "
              "%.1e), %s rel %.1e" %
              ("PASS" if good else "FAIL", name, m_count, k + 1,
               " (tail of %d samples)" % tail if tail and k == steps - 1
               else "", float(loss), float(ref_loss), e_loss, what, e))
        if opt is not None:
            # the model's parameters moved: the reference keeps its own copy
            pass
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("names", nargs="+")
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--tail", type=int, default=0)
    args = ap.parse_args()
    ok = True
    for name in args.names:
        ok &= run(name, args.micro_batches, args.steps, args.tail)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

"""gacc.torch.compile under mpirun: each rank runs its shard of a global
batch (data parallel, gradients averaged over the ranks), compared with
PyTorch's float64 step on the whole global batch. Rank 0 prints the
result."""

import copy
import os
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import gacc.torch  # noqa: E402
from gacc import _runner  # noqa: E402

name = sys.argv[1]
model, loss_fn, batch, opt = models.MODELS[name]()  # same seed on every rank
ref = copy.deepcopy(model).double()
rank, world = _runner.rank(), _runner.world_size()
B = batch[0].shape[0] // world
shard = tuple(b[rank * B:(rank + 1) * B] for b in batch)
step = gacc.torch.compile(model, loss_fn, shard, micro_batches=2,
                          optimizer=opt)
loss = step(*shard)
full = tuple(b.double() if b.is_floating_point() else b for b in batch)
loss_fn(ref, *full).backward()
if opt is not None:
    hp = {k: v for k, v in opt.defaults.items()
          if k not in ("foreach", "differentiable", "capturable", "fused")}
    type(opt)(ref.parameters(), **hp).step()
    got = [p.data for p in model.parameters()]
    want = [p.data for p in ref.parameters()]
else:
    got = [p.grad for p in model.parameters()]
    want = [p.grad for p in ref.parameters()]
err = max(float((a.double() - b).abs().max()) for a, b in zip(got, want))
err /= max(float(b.abs().max()) for b in want)
if rank == 0:
    print("%s %s on %d ranks: %s rel %.1e" % (
        "PASS" if err < 2e-5 else "FAIL", name, world,
        "gradients" if opt is None else "parameters", err))
sys.exit(0 if err < 2e-5 else 1)

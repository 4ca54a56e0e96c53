"""Exports the test models with gacc.torch.export_step into OUTDIR/<name>.mlir
(every model of models.MODELS, and train-mode BatchNorm as bn_train)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import gacc.torch  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
names = sys.argv[2:] or list(models.MODELS) + ["bn_train"]
for name in names:
    if name == "bn_train":
        m, loss_fn, batch, opt = models.batchnorm(True)
    else:
        m, loss_fn, batch, opt = models.MODELS[name]()
    text = gacc.torch.export_step(m, loss_fn, batch, optimizer=opt)
    with open(os.path.join(out, name + ".mlir"), "w") as f:
        f.write(text)
    print("exported %s" % name)

"""torch.optim's SGD, Adam and AdamW as functions of tensors, written op for
op as PyTorch 1.13's single-tensor implementations compute them
(torch/optim/{sgd,adam,adamw}.py), so that tracing one gives the update that
`optimizer.step()` would make. Python floats that PyTorch computes in double
(the bias corrections and the step size) are computed in float64 tensors
here and rounded where PyTorch rounds them (where they meet a float32
tensor).
"""

import torch

from ._fx import UnsupportedError


class OptimizerSpec:
    """What the traced update needs: the kind, per-parameter hyper-parameters
    and state names."""

    def __init__(self, optimizer, params):
        kinds = {torch.optim.SGD: "sgd", torch.optim.Adam: "adam",
                 torch.optim.AdamW: "adamw"}
        kind = kinds.get(type(optimizer))
        if kind is None:
            raise UnsupportedError(
                "gacc.torch supports the optimizers torch.optim.SGD, Adam and "
                "AdamW; got %s" % type(optimizer).__name__)
        self.kind = kind
        self.optimizer = optimizer
        group_of = {}
        for gi, g in enumerate(optimizer.param_groups):
            for p in g["params"]:
                group_of[id(p)] = gi
        self.groups = []
        for p in params:
            if id(p) not in group_of:
                raise UnsupportedError(
                    "a trainable parameter of the model (shape %s) is in no "
                    "parameter group of the optimizer" % list(p.shape))
            self.groups.append(group_of[id(p)])
        for g in optimizer.param_groups:
            self._check(g)
        self.state_names = self._state_names()

    def _check(self, g):
        # foreach=True computes the same per element as the single-tensor
        # form traced here
        if g.get("differentiable") or g.get("capturable"):
            raise UnsupportedError("%s with capturable or differentiable=True"
                                   % type(self.optimizer).__name__)
        if self.kind == "sgd":
            if g["momentum"] != 0 and g["dampening"] != 0:
                raise UnsupportedError(
                    "SGD with momentum and dampening=%g (the first step's "
                    "buffer is not damped in PyTorch)" % g["dampening"])

    def _state_names(self):
        """Per parameter, the optimizer state tensors the step carries."""
        out = []
        for gi in self.groups:
            g = self.optimizer.param_groups[gi]
            if self.kind == "sgd":
                out.append(["momentum_buffer"] if g["momentum"] != 0 else [])
            else:
                names = ["step", "exp_avg", "exp_avg_sq"]
                if g.get("amsgrad"):
                    names.append("max_exp_avg_sq")
                out.append(names)
        return out

    def initial_state(self, i, p):
        """The state tensors of parameter `p` (index i), from the optimizer
        when it has them, else as PyTorch creates them on the first step."""
        st = self.optimizer.state.get(p, {})
        out = []
        for name in self.state_names[i]:
            v = st.get(name)
            if v is None:
                if name == "step":
                    v = torch.tensor(0.0)
                else:
                    v = torch.zeros_like(p, memory_format=torch.preserve_format)
            out.append(v.detach().clone())
        return out

    def update(self, params, grads, states, lrs):
        """The traced update: new params and states (lists per param)."""
        new_params, new_states = [], []
        for i, (p, g, st) in enumerate(zip(params, grads, states)):
            hp = self.optimizer.param_groups[self.groups[i]]
            lr = lrs[self.groups[i]]
            if self.kind == "sgd":
                np_, ns = _sgd(p, g, st, lr, hp)
            else:
                np_, ns = _adam(p, g, st, lr, hp, self.kind == "adamw")
            new_params.append(np_)
            new_states.append(ns)
        return new_params, new_states


def _sgd(p, g, st, lr, hp):
    d_p = g if not hp["maximize"] else -g
    if hp["weight_decay"] != 0:
        d_p = d_p.add(p, alpha=hp["weight_decay"])
    new = []
    if hp["momentum"] != 0:
        # a zero buffer times momentum plus d_p is d_p: the first step's
        # clone (dampening is 0, checked)
        buf = st[0] * hp["momentum"] + d_p
        new.append(buf)
        if hp["nesterov"]:
            d_p = d_p.add(buf, alpha=hp["momentum"])
        else:
            d_p = buf
    # param.add_(d_p, alpha=-lr): lr is a float64 tensor here, rounded to
    # float32 as PyTorch rounds the alpha scalar
    return p - (lr.float() * d_p), new


def _adam(p, g, st, lr, hp, decoupled):
    beta1, beta2 = hp["betas"]
    eps, wd = hp["eps"], hp["weight_decay"]
    grad = g if not hp["maximize"] else -g
    step_t, exp_avg, exp_avg_sq = st[0], st[1], st[2]
    step_t = step_t + 1
    if decoupled:
        p = p * (1 - lr * wd).float()
    elif wd != 0:
        grad = grad.add(p, alpha=wd)
    exp_avg = exp_avg * beta1 + grad * (1 - beta1)
    exp_avg_sq = exp_avg_sq * beta2 + grad * grad * (1 - beta2)
    step = step_t.double()
    bias_correction1 = 1 - torch.pow(beta1, step)
    bias_correction2 = 1 - torch.pow(beta2, step)
    step_size = lr / bias_correction1
    bias_correction2_sqrt = bias_correction2.sqrt()
    new = [step_t, exp_avg, exp_avg_sq]
    if hp.get("amsgrad"):
        mx = torch.maximum(st[3], exp_avg_sq)
        new.append(mx)
        denom = (mx.sqrt() / bias_correction2_sqrt.float()) + eps
    else:
        denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt.float()) + eps
    p = p - step_size.float() * (exp_avg / denom)
    return p, new


"""Shared pieces of the training tests: an MLP in lumen and in PyTorch with
the same initial weights, and the torch optimizer matching a lumen Trainer's
options."""
from __future__ import annotations

import numpy as np
import torch

import lumen
import lumen.nn.functional as F


def mlp_init(sizes, seed=0):
    """torch.nn.Linear's default initialisation under `seed`, as numpy arrays w{i} [out, in], b{i}."""
    torch.manual_seed(seed)
    params = {}
    for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layer = torch.nn.Linear(n_in, n_out)
        params[f"w{i}"] = layer.weight.detach().numpy().copy()
        params[f"b{i}"] = layer.bias.detach().numpy().copy()
    return params


def lumen_mlp_loss(layers):
    def model(p, batch):
        h = batch["x"]
        for i in range(layers):
            h = F.linear(h, p[f"w{i}"], p[f"b{i}"])
            if i + 1 < layers:
                h = lumen.relu(h)
        return F.cross_entropy(h, batch["y"])
    return model


def torch_mlp_logits(params, x, layers):
    h = x
    for i in range(layers):
        h = torch.nn.functional.linear(h, params[f"w{i}"], params[f"b{i}"])
        if i + 1 < layers:
            h = torch.relu(h)
    return h


def torch_optimizer(params, optimizer, lr, **options):
    values = list(params.values())
    if optimizer == "sgd":
        return torch.optim.SGD(values, lr=lr, momentum=options.get("momentum", 0), dampening=options.get("dampening", 0),
                               nesterov=options.get("nesterov", False), weight_decay=options.get("weight_decay", 0))
    return torch.optim.AdamW(values, lr=lr, betas=(options.get("beta1", 0.9), options.get("beta2", 0.999)),
                             eps=options.get("eps", 1e-8), weight_decay=options.get("weight_decay", 0))


def torch_params(init):
    return {k: torch.tensor(v, requires_grad=True) for k, v in init.items()}


def accuracy_numpy(params, x, y, layers):
    h = x
    for i in range(layers):
        h = h @ params[f"w{i}"].T + params[f"b{i}"]
        if i + 1 < layers:
            h = np.maximum(h, 0)
    return float((h.argmax(1) == y).mean())

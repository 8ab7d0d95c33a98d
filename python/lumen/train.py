"""Training: the loss, its gradients (reverse-mode autodiff as a graph
transform) and the optimizer's in-place updates compiled into one Program.

    def model(p, batch):
        h = lumen.relu(lumen.linear(batch["x"], p["w1"], p["b1"]))
        return lumen.cross_entropy(lumen.linear(h, p["w2"], p["b2"]), batch["y"])

    trainer = lumen.train.Trainer(model, params={"w1": w1, ...},
                                  batch={"x": ((32, 64), lumen.float32), "y": ((32,), lumen.int32)},
                                  optimizer="adamw", lr=1e-3, weight_decay=0.01)
    loss = trainer.step({"x": xb, "y": yb})
"""
from __future__ import annotations

import sys

import numpy as np

from ._lumen import Graph
from ._lumen import train as _train


class Trainer:
    """Compiles `model(params, batch) -> scalar loss` with its backward pass
    and the optimizer. `params`: name -> initial numpy array (f32; the
    trainer keeps and updates them in the Program's state). `batch`: name ->
    (shape, dtype) of each batch input. Options: optimizer ("sgd", "adamw"),
    lr, weight_decay, momentum, dampening, nesterov, beta1, beta2, eps,
    clip_norm (global L2 norm, 0 = off), accumulation (micro-steps per
    update), backend ("cpu", "interp"), budget_s, recompute ("auto": forward
    values the backward pass reads that are cheap to compute again are
    recomputed there instead of kept, where that lowers the step's peak
    memory; "all"; "none": keep every activation — `report()` names what was
    recomputed, `stats["recomputed_values"]` counts it), progress (print a line
    every `progress` optimizer steps: step, loss, steps/s)."""

    def __init__(self, model, params: dict, batch: dict, optimizer="adamw", lr=1e-3, progress=0, **options):
        self.graph = Graph()
        shapes = {}
        self.params = {}
        for name, value in params.items():
            value = np.ascontiguousarray(np.asarray(value, dtype=np.float32))
            shapes[name] = value
            self.params[name] = self.graph.state(name, value.shape)
        self.inputs = {}
        for name, spec in batch.items():
            shape, dtype = spec if isinstance(spec, tuple) and len(spec) == 2 and not isinstance(spec[1], int) else (spec, None)
            self.inputs[name] = self.graph.input(name, shape) if dtype is None else self.graph.input(name, shape, dtype)
        loss = model(dict(self.params), dict(self.inputs))
        self.progress = int(progress)
        self._accumulation = int(options.get("accumulation", 1))
        self._impl = _train.Trainer(self.graph, loss, list(self.params.values()),
                                    dict(optimizer=optimizer, lr=float(lr), **options))
        for name, value in shapes.items():
            self._impl.set_parameter(name, value)

    def step(self, batch: dict) -> float:
        """One (micro-)step on `batch`; returns its loss. With accumulation n the
        parameters change on every n-th call."""
        loss = self._impl.step(batch)
        updated = self._impl.micro_steps % self._accumulation == 0
        if self.progress and updated and self.steps % self.progress == 0:
            print(self.progress_line(), file=sys.stderr, flush=True)
        return loss

    @property
    def lr(self) -> float:
        return self._impl.lr

    @lr.setter
    def lr(self, value: float):
        self._impl.lr = float(value)

    @property
    def steps(self) -> int:
        return self._impl.steps

    @property
    def steps_per_second(self) -> float:
        return self._impl.steps_per_second

    def progress_line(self) -> str:
        return self._impl.progress_line()

    def parameter(self, name: str) -> np.ndarray:
        """A copy of a parameter's (or optimizer slot's, e.g. "w.exp_avg") current value."""
        return self._impl.parameter(name)

    def parameters(self) -> dict:
        return {name: self._impl.parameter(name) for name in self._impl.parameter_names}

    def set_parameter(self, name: str, value):
        self._impl.set_parameter(name, np.ascontiguousarray(np.asarray(value, dtype=np.float32)))

    @property
    def state_names(self) -> list:
        return list(self._impl.state_names)

    def save(self, path: str):
        """Parameters, optimizer state and step count as a safetensors file."""
        self._impl.save(str(path))

    def load(self, path: str):
        """Restores a checkpoint; a truncated or mismatched file raises lumen.Error and changes nothing."""
        self._impl.load(str(path))

    def report(self) -> str:
        return self._impl.report()

    @property
    def stats(self) -> dict:
        """The compiled step's figures (arena_bytes, compile time, ...)."""
        return self._impl.stats

"""Distributed execution: one model over the ranks mpirun started.

Run the same script on every rank:

    mpirun -np 2 python3 script.py

    import lumen.dist
    model = lumen.dist.Llama("model_dir_or.gguf", parallel="tp")   # or "pp"
    tokens, = [model.generate([1, 2, 3], max_new_tokens=16)]       # the same on every rank
    if lumen.dist.rank() == 0:
        print(tokens)

Every rank must call the same methods in the same order. `parallel`: "tp"
splits every layer over the ranks (one all-reduce per block half), "pp" gives
each rank a stage of consecutive layers. `DataParallelTrainer` is
lumen.train's training step with the batch split over the ranks (gradients
all-reduced). `plan(model, ranks)` prints the plan search's table.
docs/distributed.md has the details.
"""
from __future__ import annotations

try:
    from ._lumen import dist as _dist
except ImportError:  # pragma: no cover - a build without MPI
    _dist = None


def _require():
    if _dist is None:
        raise RuntimeError("lumen was built without lumen/dist (MPI was not found when it was built)")
    return _dist


def rank() -> int:
    """This process's rank (0 without mpirun)."""
    return _require().rank()


def size() -> int:
    """The number of ranks (1 without mpirun)."""
    return _require().size()


def barrier() -> None:
    _require().barrier()


def broadcast(text: str, root: int = 0) -> str:
    """Every rank gets rank `root`'s text (collective)."""
    return _require().broadcast(text, root)


def abort(code: int = 1) -> None:
    """End every rank of the job (after an error on this one)."""
    _require().abort(code)


def plan(model: str, ranks: int, prompt_tokens: int = 128, position: int = 128, calibrate: bool = True) -> str:
    """The plan search for a model (directory, GGUF file, or a preset: llama-110m, llama-7b, llama-70b)."""
    return _require().plan(model, ranks, prompt_tokens, position, calibrate)


def Llama(path: str, parallel: str = "tp", capacity: int = 0, budget_s: float = 0.0, tuning_cache: bool = True,
          prefill_chunk: int = 0):
    """A Llama-family model (Hugging Face directory or GGUF) run by every rank under `parallel` ("tp" or "pp")."""
    return _require().Llama(path, parallel, capacity, budget_s, tuning_cache, prefill_chunk)


class DataParallelTrainer:
    """Like lumen.train.Trainer, with the batch inputs split along axis 0 over the ranks.

    `model(params, batch) -> loss`, `params`: name -> initial array, `batch`: name -> (shape, dtype) of the
    whole batch (axis 0 divisible by the rank count). `step(batch)` takes the whole batch (each rank keeps its
    slice) or, with local=True, this rank's slice; it returns the whole batch's loss on every rank.
    """

    def __init__(self, model, params, batch, optimizer="adamw", lr=1e-3, **options):
        import numpy as np

        from ._lumen import Graph

        _require()
        g = Graph()
        values = {name: np.ascontiguousarray(np.asarray(v, dtype=np.float32)) for name, v in params.items()}
        tensors = {name: g.state(name, v.shape) for name, v in values.items()}
        inputs = {}
        for name, spec in batch.items():
            shape, dtype = spec if isinstance(spec, tuple) and len(spec) == 2 and not isinstance(spec[1], int) else (spec, None)
            inputs[name] = g.input(name, shape) if dtype is None else g.input(name, shape, dtype)
        loss = model(dict(tensors), dict(inputs))
        self._graph = g
        self._trainer = _dist.DataParallelTrainer(g, loss, list(tensors.values()), list(batch),
                                                  dict(optimizer=optimizer, lr=float(lr), **options))
        for name, v in values.items():
            self._trainer.set_parameter(name, v)

    def step(self, batch, local: bool = False) -> float:
        return self._trainer.step(batch, local)

    def parameter(self, name):
        return self._trainer.parameter(name)

    def report(self) -> str:
        return self._trainer.report()

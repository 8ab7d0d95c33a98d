"""FX nodes (ATen ops) -> lumen values, one node at a time, each result
checked against torch's example value (shape and dtype): a lowering that
disagrees with PyTorch is refused, never used."""
from __future__ import annotations

import operator

import torch

from .. import _lumen
from . import lowering, lowering_nn, lowering_tensor  # noqa: F401  (register the lowerings)
from .lowering import LOWERINGS, LoweringContext
from .values import DimTable, Unsupported, example_value, has_dtype, lumen_dtype

Tensor = _lumen.Tensor


def op_name(node) -> str:
    t = node.target
    if t is operator.getitem:
        return "getitem"
    return str(t) if isinstance(t, torch._ops.OpOverload) else getattr(t, "__name__", str(t))


def _tensors(value):
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, torch.Tensor)]
    return []


def _used_outputs(node, out):
    """The node's output tensors that something uses (a max_pool's int64 indices may go unused)."""
    if not isinstance(out, (list, tuple)):
        return _tensors(out)
    used = {u.args[1] for u in node.users if u.target is operator.getitem}
    return [o for i, o in enumerate(out) if i in used and isinstance(o, torch.Tensor)]


class Translation:
    """Builds one lumen graph from FX nodes; env maps each node to its lumen value."""

    def __init__(self, graph=None):
        self.graph = graph if graph is not None else _lumen.Graph()
        self.dims = DimTable(self.graph)
        self.env = {}

    # ---- graph inputs

    def add_input(self, node, name, value, parameter=False):
        """`node` (whose example value is `value`) as an input of the lumen graph."""
        if isinstance(value, torch.SymInt):
            self.env[node] = self.dims.dim(value)
        elif isinstance(value, torch.Tensor):
            if value.device.type != "cpu":
                raise Unsupported(f"a tensor on {value.device} (lumen runs on the CPU here)")
            make = self.graph.parameter if parameter else self.graph.input
            self.env[node] = make(name, self.dims.shape(value.shape), lumen_dtype(value.dtype))
        elif isinstance(value, (int, float, bool)) or value is None:
            self.env[node] = value
        else:
            raise Unsupported(f"an input of type {type(value).__name__}")
        return self.env[node]

    # ---- one node

    def value(self, node):
        if node not in self.env:
            raise Unsupported(f"input {node.name} is not available in lumen")
        return self.env[node]

    def lower(self, node):
        """The lumen value of call_function `node`; raises Unsupported (or lumen.Error) when lumen cannot."""
        self.env[node] = self._lower(node)
        return self.env[node]

    def _lower(self, node):
        out = example_value(node)
        if isinstance(out, torch.SymInt):
            return self.dims.dim(out)
        if node.target is operator.getitem:
            src = self.value(node.args[0])
            item = src[node.args[1]] if isinstance(src, (list, tuple)) and node.args[1] < len(src) else None
            if not isinstance(item, Tensor):
                raise Unsupported(f"output {node.args[1]} of {node.args[0].name}")
            return item
        fn = LOWERINGS.get(node.target)
        if fn is None:
            raise Unsupported(f"no lowering for {op_name(node)}")
        for t in _used_outputs(node, out) + [t for a in node.all_input_nodes for t in _tensors(example_value(a))]:
            if not has_dtype(t.dtype):
                raise Unsupported(f"{op_name(node)} on {t.dtype}")
            if t.device.type != "cpu":  # e.g. a `full` feeding CUDA tensors must stay there, not come from lumen
                raise Unsupported(f"{op_name(node)} on device {t.device}")
        args = torch.fx.node.map_arg(node.args, self.value)
        kwargs = torch.fx.node.map_arg(node.kwargs, self.value)
        examples = torch.fx.node.map_arg(node.args, example_value)
        result = fn(LoweringContext(self.graph, node, self.dims, examples), *args, **kwargs)
        self._check(node, result, out)
        return result

    def _check(self, node, result, out):
        if isinstance(out, (list, tuple)):
            if not isinstance(result, (list, tuple)) or len(result) < len(out):
                raise Unsupported(f"{op_name(node)}: lumen gave {len(result) if isinstance(result, (list, tuple)) else 1} "
                                  f"outputs, torch {len(out)}")
            for user in node.users:
                if user.target is operator.getitem and result[user.args[1]] is None:
                    raise Unsupported(f"{op_name(node)}: output {user.args[1]} is not computed by lumen")
            for r, o in zip(result, out):
                if r is not None:
                    self._check(node, r, o)
            return
        if not isinstance(result, Tensor) or not isinstance(out, torch.Tensor):
            raise Unsupported(f"{op_name(node)}: lumen gave {type(result).__name__}, torch {type(out).__name__}")
        want = self.dims.shape(out.shape)
        if tuple(result.shape) != want:
            raise Unsupported(f"{op_name(node)}: lumen's shape {tuple(result.shape)} differs from torch's {want}")
        if result.dtype != lumen_dtype(out.dtype):
            raise Unsupported(f"{op_name(node)}: lumen's dtype {result.dtype} differs from torch's {out.dtype}")

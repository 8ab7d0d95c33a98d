"""LumenSubgraph: one partition of an FX graph compiled by lumen, called with
torch tensors and returning torch tensors (DLPack both ways: no copies for
contiguous CPU tensors)."""
from __future__ import annotations

import collections

import torch

from .. import _lumen
from .translate import Translation, op_name
from .values import Unsupported, affine_in, example_value

_COMPILE_KEYS = ("backend", "budget_s", "tuning_cache", "cache_path", "progress", "tune_dim", "tune_dims",
                 "precision")


class LumenSubgraph(torch.nn.Module):
    """Runs `subgraph` (an FX GraphModule of ATen ops) as one lumen Program.

    `outer_args` are the nodes feeding the subgraph in the enclosing graph (their
    example values give input shapes and dtypes); `parameter(node)` says which
    inputs are weights (lumen keeps work that depends only on them between
    runs; they are set again only when a different tensor or a new version
    arrives)."""

    def __init__(self, subgraph, outer_args, parameter, options):
        super().__init__()
        self.torch_module = subgraph  # what PyTorch would run: kept for reference and reports
        translation = Translation()
        placeholders = [n for n in subgraph.graph.nodes if n.op == "placeholder"]
        self._kinds = []    # per placeholder: "tensor", "param" or "other"
        for i, (node, outer) in enumerate(zip(placeholders, outer_args)):
            value = example_value(outer) if isinstance(outer, torch.fx.Node) else outer
            is_param = isinstance(value, torch.Tensor) and isinstance(outer, torch.fx.Node) and parameter(outer)
            translation.add_input(node, f"in{i}", value, parameter=is_param)
            self._kinds.append("param" if is_param else "tensor" if isinstance(value, torch.Tensor) else "other")
        self.ops = collections.Counter()
        outputs = None
        for node in subgraph.graph.nodes:
            if node.op == "call_function":
                translation.lower(node)
                self.ops[op_name(node)] += 1
            elif node.op == "output":
                outputs = node.args[0]
        self._single = not isinstance(outputs, (list, tuple))
        outs = [translation.value(n) for n in ([outputs] if self._single else outputs)]
        if not all(isinstance(o, _lumen.Tensor) for o in outs):
            raise Unsupported("a partition output that is not a tensor")
        self._dim_sources = self._find_dim_sources(translation, [example_value(a) if isinstance(a, torch.fx.Node)
                                                                 else a for a in outer_args])
        kwargs = {k: options[k] for k in _COMPILE_KEYS if k in options}
        self.program = _lumen.compile(translation.graph, outs, **kwargs)
        self._last = [None] * len(placeholders)  # parameters last handed to the program: (tensor, version)

    @staticmethod
    def _find_dim_sources(translation, values):
        """For each dynamic dim: where a call finds its value — (input, axis or None for a SymInt input,
        scale, offset): the value there is scale * dim + offset (a size s0, or 4*s0 after a reshape)."""
        sources = {}
        for name in translation.dims.dims:
            for i, v in enumerate(values):
                sizes = list(enumerate(v.shape)) if isinstance(v, torch.Tensor) else [(None, v)]
                for d, size in sizes:
                    affine = affine_in(size, name)
                    if affine is not None and (name not in sources or affine == (1, 0)):
                        sources[name] = (i, d) + affine
                if name in sources and sources[name][2:] == (1, 0):
                    break
            if name not in sources:
                raise Unsupported(f"dynamic dim {name} is not an input's size (nor a multiple of one) or a SymInt input")
        return sources

    def forward(self, *args):
        inputs, handed = [], []
        for i, (kind, a) in enumerate(zip(self._kinds, args)):
            if kind == "other":
                continue
            if kind == "param":
                last = self._last[i]
                if last is not None and last[0] is a and last[1] == a._version:
                    inputs.append(None)  # unchanged: the program keeps it (and what it packed from it)
                    continue
                handed.append((i, a))
            t = a.detach()
            inputs.append(t if t.is_contiguous() else t.contiguous())
        dims = {}
        for name, (i, d, scale, offset) in self._dim_sources.items():
            value, rest = divmod((int(args[i]) if d is None else int(args[i].shape[d])) - offset, scale)
            if rest:
                raise _lumen.Error(f"lumen partition: input {i} size {args[i].shape[d]} is not "
                                   f"{scale}*{name}+{offset} for an integer {name}")
            dims[name] = value
        outs = [torch.from_dlpack(o) for o in self.program.execute(inputs, dims)]
        for i, a in handed:  # remembered only once the program has them (a failed call hands them again)
            self._last[i] = (a, a._version)
        return outs[0] if self._single else tuple(outs)

"""lumen as a torch.compile backend, and lumen.compile for PyTorch modules.

    torch.compile(model, backend="lumen")                       # no `import lumen` needed (entry point)
    torch.compile(model, backend="lumen", options={"backend": "interp", "budget_s": 0})
    lumen.compile(model, example_inputs)                        # the same without dynamo (torch.export)

The FX graph is lowered to Core ATen (aot_autograd / torch.export with the
core decompositions), the ops lumen can take are cut into partitions, each
partition is compiled by lumen into one Program, and the rest runs in PyTorch.
See README.md in this folder."""
from __future__ import annotations

import collections
import dataclasses
import os

import torch

from .partition import partition, probe
from .subgraph import LumenSubgraph  # noqa: F401  (public: reports hold them)
from .translate import op_name
from .values import example_value

__all__ = ["lumen_backend", "compile_module", "reports", "CompileReport", "LumenSubgraph", "DEFAULT_OPTIONS"]

# budget_s: schedule search seconds per lumen partition (the tuning cache keeps
# the results: a second compile of the same model does no search).
DEFAULT_OPTIONS = {"backend": "cpu", "budget_s": float(os.environ.get("LUMEN_TORCH_BUDGET", "10"))}


@dataclasses.dataclass
class CompileReport:
    """What one compiled FX graph became."""
    lumen_partitions: int = 0
    lumen_ops: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    torch_ops: collections.Counter = dataclasses.field(default_factory=collections.Counter)  # run by PyTorch
    refused: dict = dataclasses.field(default_factory=dict)          # op -> {reason: count}
    failed_partitions: list = dataclasses.field(default_factory=list)  # (name, error): run by PyTorch
    graph_module: object = None


reports: list = []  # one CompileReport per graph compiled, in order


def _options(options):
    opts = dict(DEFAULT_OPTIONS)
    opts.update(options or {})
    return opts


def _torch_ops(graph):
    out = collections.Counter()
    for n in graph.nodes:
        if n.op == "call_function" and not isinstance(example_value(n), torch.SymInt) and op_name(n) != "getitem":
            out[op_name(n)] += 1
    return out


def compile_fx_graph(gm, options, parameter):
    """Partitions an ATen FX graph in place: lumen partitions become LumenSubgraph modules. Returns gm."""
    for n in gm.graph.nodes:
        if n.op == "get_attr" and example_value(n) is None:
            value = gm
            for part in n.target.split("."):
                value = getattr(value, part)
            n.meta["val"] = value
    report = CompileReport()
    supported, refused = probe(gm, parameter)
    report.refused = {op: dict(reasons) for op, reasons in refused.items()}
    gm, names = partition(gm, supported)
    calls = {n.target: n for n in gm.graph.nodes if n.op == "call_module"}
    for name in names:
        sub = gm.get_submodule(name)
        try:
            compiled = LumenSubgraph(sub, calls[name].args, parameter, options)
        except Exception as e:  # noqa: BLE001  (the partition runs in PyTorch instead, and the report says why)
            report.failed_partitions.append((name, f"{type(e).__name__}: {e}"))
            report.torch_ops.update(_torch_ops(sub.graph))
            continue
        setattr(gm, name, compiled)
        report.lumen_partitions += 1
        report.lumen_ops.update(compiled.ops)
    report.torch_ops.update(_torch_ops(gm.graph))
    report.graph_module = gm
    reports.append(report)
    return gm


def decompositions():
    """Core ATen decompositions, less those of ops lumen lowers whole."""
    from torch._decomp import core_aten_decompositions
    table = dict(core_aten_decompositions())
    # decomposed, these become int64 index arithmetic (arange, comparisons, index) that lumen leaves to PyTorch
    # until it has int64; whole, lumen lowers them directly
    for op in (torch.ops.aten.tril.default, torch.ops.aten.triu.default, torch.ops.aten.roll.default,
               torch.ops.aten.upsample_nearest2d.default):
        table.pop(op, None)
    return table


def _static_inputs():
    """Indices of the forward graph's inputs that are parameters or buffers (dynamo knows them)."""
    from torch._guards import TracingContext
    ctx = TracingContext.try_get()
    meta = getattr(ctx, "fw_metadata", None) if ctx is not None else None
    return set(getattr(meta, "static_input_indices", None) or [])


def _forward_compiler(options):
    from functorch.compile import make_boxed_func

    def compile_forward(gm, example_inputs):
        static = _static_inputs()
        placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
        params = {n.name for i, n in enumerate(placeholders) if i in static}  # by name: fusing copies the nodes
        compiled = compile_fx_graph(gm, options, lambda n: n.op == "get_attr" or n.name in params)
        return make_boxed_func(compiled.forward)
    return compile_forward


def _backward_in_torch(gm, example_inputs):
    from functorch.compile import make_boxed_func
    return make_boxed_func(gm.forward)  # training is not lumen's yet: the backward graph runs in PyTorch


def lumen_backend(gm, example_inputs, options=None, **ignored):
    """The torch.compile backend (entry point "lumen" in group torch_dynamo_backends).

    options: backend ("cpu" or "interp"), budget_s (schedule search seconds per
    partition), tuning_cache, cache_path, progress, tune_dim, tune_dims, precision ("fp32", "bf16", "fp16")."""
    from torch._dynamo.backends.common import aot_autograd
    opts = _options(options)
    fw = _forward_compiler(opts)
    return aot_autograd(fw_compiler=fw, inference_compiler=fw, bw_compiler=_backward_in_torch,
                        decompositions=decompositions())(gm, example_inputs)


def compile_module(module, example_inputs, dynamic_shapes=None, **options):
    """`module` traced without dynamo (torch.export, non-strict), lowered to Core ATen and compiled
    like torch.compile(backend="lumen") does; returns a module taking and returning what `module` does.

    dynamic_shapes: as torch.export takes it, e.g. ({1: torch.export.Dim("seq")},) for a dynamic dim 1
    of the first input; those dims become lumen dynamic dims (one compile for every size)."""
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    try:
        exported = torch.export.export(module, tuple(example_inputs), dynamic_shapes=dynamic_shapes, strict=False)
    except Exception as e:  # noqa: BLE001
        from .. import _lumen
        raise _lumen.Error(f"lumen.compile: torch.export could not trace {type(module).__name__} ({type(e).__name__}: "
                           f"{str(e).splitlines()[0] if str(e) else ''}); a module with data-dependent Python control "
                           "flow needs torch.compile(module, backend='lumen'), which breaks the graph there") from e
    exported = exported.run_decompositions(decompositions())
    gm = exported.module()
    return compile_fx_graph(gm, _options(options), lambda n: n.op == "get_attr")

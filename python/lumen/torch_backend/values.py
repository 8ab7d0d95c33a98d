"""How torch values look in lumen: dtypes, symbolic sizes (sympy -> lumen Dim),
and the shapes of FX nodes' example values."""
from __future__ import annotations

import torch

from .. import _lumen

DType = _lumen.DType


class Unsupported(Exception):
    """A node lumen cannot take; the partitioner leaves it to PyTorch."""


def _dtype_table():
    table = {
        torch.float32: DType.float32, torch.float16: DType.float16, torch.bfloat16: DType.bfloat16,
        torch.int32: DType.int32, torch.bool: DType.bool, torch.int8: DType.int8, torch.uint8: DType.uint8,
    }
    # int64 / float64 once lumen has them; until then tensors of those dtypes stay in PyTorch.
    for torch_dtype, name in ((torch.int64, "int64"), (torch.float64, "float64")):
        if hasattr(DType, name):
            table[torch_dtype] = getattr(DType, name)
    return table


_DTYPES = _dtype_table()


def lumen_dtype(torch_dtype):
    """The lumen DType for a torch dtype; Unsupported when lumen has none."""
    d = _DTYPES.get(torch_dtype)
    if d is None:
        raise Unsupported(f"dtype {torch_dtype} has no lumen counterpart")
    return d


def has_dtype(torch_dtype) -> bool:
    return torch_dtype in _DTYPES


def example_value(node):
    """The FX node's example value (a FakeTensor, SymInt, tuple of them, ...) or None."""
    return node.meta.get("val", node.meta.get("example_value"))


class DimTable:
    """Symbolic sizes of one FX graph as dims of one lumen graph: s0 -> g.dim("s0")."""

    def __init__(self, graph):
        self.graph = graph
        self.dims = {}

    def dim(self, expr):
        """A sympy expression (or int / SymInt) as an int or a lumen Dim."""
        import sympy
        from torch.utils._sympy.functions import CleanDiv, FloorDiv, Mod, PythonMod

        if isinstance(expr, torch.SymInt):
            node = expr.node
            expr = node.shape_env.simplify(node.expr) if getattr(node, "shape_env", None) else node.expr
        if isinstance(expr, int):
            return expr
        if expr.is_Integer:
            return int(expr)
        if expr.is_Symbol:
            name = str(expr)
            if name.startswith("u"):
                raise Unsupported(f"size {name} depends on data (unbacked); lumen needs sizes known before running")
            if name not in self.dims:
                self.dims[name] = self.graph.dim(name)
            return self.dims[name]
        if isinstance(expr, sympy.Add):
            out = 0
            for a in expr.args:
                out = out + self.dim(a)
            return out
        if isinstance(expr, sympy.Mul):
            out = 1
            for a in expr.args:
                out = out * self.dim(a)
            return out
        if isinstance(expr, (FloorDiv, CleanDiv)):
            return self.dim(expr.args[0]) // self.dim(expr.args[1])
        if isinstance(expr, (Mod, PythonMod)):
            return self.dim(expr.args[0]) % self.dim(expr.args[1])
        raise Unsupported(f"symbolic size {expr} ({type(expr).__name__}) has no lumen form")

    def shape(self, sizes):
        return tuple(self.dim(s) if isinstance(s, torch.SymInt) else int(s) for s in sizes)

    def value(self, v):
        """A Python argument with SymInts turned into dims (lists and tuples recursively)."""
        if isinstance(v, torch.SymInt):
            return self.dim(v)
        if isinstance(v, (list, tuple)):
            return type(v)(self.value(x) for x in v)
        return v


def affine_in(size, name):
    """(scale, offset) when the SymInt `size` is scale * name + offset with integers (scale > 0), else None."""
    import sympy
    if not isinstance(size, torch.SymInt):
        return None
    expr = size.node.expr
    if {str(x) for x in expr.free_symbols} != {name}:
        return None
    symbol = next(iter(expr.free_symbols))
    scale, offset = sympy.expand(expr).as_independent(symbol, as_Add=True)[::-1]
    scale = sympy.simplify(scale / symbol)
    if not (scale.is_Integer and offset.is_Integer and scale > 0):
        return None
    return int(scale), int(offset)

"""Which nodes of an ATen FX graph lumen takes, and the graph cut into lumen
partitions (compiled by lumen) and the rest (run by PyTorch)."""
from __future__ import annotations

import collections
import operator

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner
from torch.fx.passes.operator_support import OperatorSupportBase

from .translate import Translation, op_name
from .values import Unsupported, example_value

aten = torch.ops.aten

# Ops that only move or rename data: a partition of nothing else is left to PyTorch.
_MOVEMENT = {
    operator.getitem, aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default,
    aten.transpose.int, aten.t.default, aten.expand.default, aten.unsqueeze.default, aten.squeeze.dim,
    aten.squeeze.dims, aten.squeeze.default, aten.slice.Tensor, aten.select.int, aten.alias.default,
    aten.clone.default, aten.lift_fresh_copy.default, aten.detach.default, aten.split.Tensor,
    aten.split_with_sizes.default, aten.unbind.int, aten.scalar_tensor.default, aten.full.default,
}


class _Support(OperatorSupportBase):
    def __init__(self, nodes):
        self.nodes = nodes

    def is_node_supported(self, submodules, node) -> bool:
        return node in self.nodes


def probe(gm, parameter):
    """The call_function nodes lumen can lower, and why the others cannot (op name -> reasons).

    Lowers the whole graph once into a throwaway lumen graph; a node that fails
    stands in as a fresh input so the nodes after it are still tried."""
    t = Translation()
    supported, refused = set(), collections.defaultdict(collections.Counter)

    def stand_in(node):
        try:
            t.add_input(node, f"n{len(t.env)}", example_value(node), parameter(node))
        except Exception:  # noqa: BLE001  (unavailable to lumen: its users fall back too)
            pass

    for node in gm.graph.nodes:
        if node.op in ("placeholder", "get_attr"):
            stand_in(node)
        elif node.op == "call_function":
            if isinstance(example_value(node), torch.SymInt):
                stand_in(node)  # size arithmetic stays in Python, outside partitions
                continue
            try:
                t.lower(node)
                supported.add(node)
            except Exception as e:  # noqa: BLE001  (Unsupported, lumen.Error, or a lowering's TypeError)
                reason = str(e) if isinstance(e, Unsupported) else f"{type(e).__name__}: {e}"
                refused[op_name(node)][reason.splitlines()[0][:200]] += 1
                stand_in(node)
    return supported, refused


def partition(gm, supported):
    """`gm` with each lumen partition fused into a submodule named fused_<k>; returns (gm, names)."""
    partitioner = CapabilityBasedPartitioner(gm, _Support(supported), allows_single_node_partition=True)
    partitions = [p for p in partitioner.propose_partitions()
                  if any(n.target not in _MOVEMENT for n in p.nodes)]
    if not partitions:
        return gm, []
    fused = partitioner.fuse_partitions(partitions, prefix="lumen_")
    names = [n.target for n in fused.graph.nodes if n.op == "call_module" and n.target.startswith("lumen_")]
    return fused, names

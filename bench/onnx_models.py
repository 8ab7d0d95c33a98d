"""ONNX model workloads for `make bench`: torchvision resnet18,
mobilenet_v3_small and vit_b_16 (224x224, batch 1) and a GPT-2 block
(batch 1, 128 tokens, width 768), random weights seeded, exported once with
torch.onnx.export into build/bench_models, then run through lumen's ONNX
importer (lumen.onnx.load), ONNX Runtime and PyTorch eager."""
from __future__ import annotations

import math
import os
import sys
import time
import warnings

import numpy as np

from models import MODELS, ROOT, Missing


def _gpt2_block():
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from test_onnx_models import GPT2Block
    return GPT2Block(dim=768, heads=12, context=1024)


def _vit_b_16():
    sys.path.insert(0, os.path.join(ROOT, "tests", "python"))
    from test_onnx_models import vision_transformer  # the model the tests check (classifier head drawn at random)
    return vision_transformer("b_16")


def onnx_flops(path):
    """Nominal FLOPs of one run of an ONNX model: 2 per multiply-add of its Conv, MatMul and Gemm nodes, with shapes
    from ONNX shape inference (a fast algorithm such as Winograd's does fewer: its % of peak may pass 100)."""
    import onnx
    from onnx import shape_inference
    model = shape_inference.infer_shapes(onnx.load(path, load_external_data=False))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    shapes.update({i.name: list(i.dims) for i in model.graph.initializer})
    total = 0
    for node in model.graph.node:
        if node.op_type not in ("Conv", "MatMul", "Gemm"):
            continue
        y, a, b = (shapes.get(n) for n in (node.output[0], node.input[0], node.input[1]))
        if not y or not a or not b or 0 in y + a + b:
            raise ValueError(f"{path}: no static shape for {node.op_type} node {node.name!r}")
        if node.op_type == "Conv":
            total += 2 * math.prod(y) * math.prod(b[1:])  # each output: C/groups x KH x KW multiply-adds
        elif node.op_type == "MatMul":
            total += 2 * math.prod(y) * a[-1]
        else:
            trans_a = any(attr.name == "transA" and attr.i for attr in node.attribute)
            total += 2 * math.prod(y) * (a[0] if trans_a else a[1])
    return float(total)


class OnnxModelWorkload:
    bytes = 0.0

    def __init__(self, name, build, shape):
        self.name, self.build, self.shape = name, build, shape

    @property
    def flops(self):
        """For the % of FMA peak column; 0 (no column) until the bench has exported the model."""
        path = os.path.join(MODELS, f"{self.name}.onnx")
        return onnx_flops(path) if os.path.exists(path) else 0.0

    def _module_and_file(self):
        import torch
        torch.manual_seed(0)
        module = self.build().eval()
        x = torch.from_numpy(np.random.default_rng(0).standard_normal(self.shape).astype(np.float32))
        path = os.path.join(MODELS, f"{self.name}.onnx")
        if not os.path.exists(path):
            os.makedirs(MODELS, exist_ok=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.onnx.export(module, (x,), path + ".tmp", opset_version=17, dynamo=False, input_names=["x"],
                                  output_names=["y"])
            os.replace(path + ".tmp", path)
        return module, x, path

    def make(self, impl, threads):
        module, x, path = self._module_and_file()
        state = {}
        if impl in ("lumen", "lumen_nosearch"):
            import lumen
            lumen.set_threads(threads)
            budget = float(os.environ.get("LUMEN_BENCH_BUDGET", "20")) if impl == "lumen" else 0.0
            start = time.perf_counter()
            program = lumen.onnx.load(path).compile(backend="cpu", budget=budget, tuning_cache=impl == "lumen")
            compile_s = time.perf_counter() - start
            feed = x.numpy()

            def call():
                state["out"] = program(x=feed)
            call()
            return call, lambda: state["out"], {"compile_s": compile_s}
        if impl == "onnxruntime":
            try:
                import onnxruntime as ort
            except ImportError:
                raise Missing("not installed (onnxruntime)")
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            feeds = {"x": x.numpy()}

            def call():
                state["out"] = sess.run(None, feeds)[0]
            call()
            return call, lambda: state["out"], {}
        if impl == "torch":
            import torch
            torch.set_num_threads(threads)

            def call():
                with torch.no_grad():
                    state["out"] = module(x)
            call()
            return call, lambda: state["out"].numpy(), {}
        raise Missing("not expressed")


def onnx_workloads():
    import torchvision
    rows = [OnnxModelWorkload("onnx_resnet18", lambda: torchvision.models.resnet18(weights=None), (1, 3, 224, 224)),
            OnnxModelWorkload("onnx_mobilenet_v3_small", lambda: torchvision.models.mobilenet_v3_small(weights=None),
                              (1, 3, 224, 224)),
            OnnxModelWorkload("onnx_vit_b_16", _vit_b_16, (1, 3, 224, 224)),
            OnnxModelWorkload("onnx_gpt2_block", _gpt2_block, (1, 128, 768))]
    return rows

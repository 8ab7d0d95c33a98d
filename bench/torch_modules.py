"""PyTorch modules through torch.compile for `make bench`: the same module run
eagerly (torch), by torch.compile's default backend (torch_compile: inductor)
and by torch.compile(backend="lumen") (lumen: with schedule search, budget
LUMEN_BENCH_BUDGET per partition; lumen_nosearch: budget 0). Random weights,
seeded; rows are named dynamo_<module> (tc_ rows are tensor comprehensions). Each workload builds a runner per
implementation: (call, get, info) like the kernel workloads in run.py."""
from __future__ import annotations

import os
import time

from models import Missing


def _mlp():
    import torch
    return torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(approximate="tanh"),
                               torch.nn.Linear(4096, 1024)), (torch.randn(64, 1024),)


def _torchvision(name):
    def build():
        import torch
        try:
            import torchvision
        except ImportError:
            raise Missing("not installed (torchvision)")
        return getattr(torchvision.models, name)(), (torch.randn(1, 3, 224, 224),)
    return build


def _gpt2_block():
    import torch
    try:
        import transformers
    except ImportError:
        raise Missing("not installed (transformers)")
    transformers.logging.set_verbosity_error()
    config = transformers.GPT2Config(n_layer=1, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024)
    return transformers.GPT2Model(config), (torch.randint(0, 50257, (1, 256)),)


def _whisper_tiny():
    """Whisper-tiny's shape (4 + 4 layers, d_model 384), 30 s of log-mel frames, 32 decoder tokens → logits."""
    import torch
    try:
        import transformers
    except ImportError:
        raise Missing("not installed (transformers)")
    transformers.logging.set_verbosity_error()
    config = transformers.WhisperConfig(d_model=384, encoder_layers=4, decoder_layers=4, encoder_attention_heads=6,
                                        decoder_attention_heads=6, encoder_ffn_dim=1536, decoder_ffn_dim=1536)
    model = transformers.WhisperForConditionalGeneration(config)

    class Logits(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, mel, ids):
            return self.model(input_features=mel, decoder_input_ids=ids).logits
    return Logits(), (torch.randn(1, 80, 3000), torch.randint(0, 51865, (1, 32)))


def _unet_block():
    import sys

    import torch
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "python"))
    from test_torch_backend import UNetBlock  # the block the tests check against PyTorch
    return UNetBlock(channels=128, time_dim=128, groups=32, heads=4), (torch.randn(1, 128, 32, 32),
                                                                         torch.tensor([500.0]))


class TorchModuleWorkload:
    flops, bytes = 0.0, 0.0

    def __init__(self, name, build):
        self.name, self.build = name, build

    def make(self, impl, threads):
        import torch
        if impl not in ("lumen", "lumen_nosearch", "torch", "torch_compile"):
            raise Missing("not expressed")
        torch.set_num_threads(threads)
        torch.manual_seed(0)
        module, args = self.build()
        module = module.eval()
        if impl == "torch":
            fn = module
        elif impl == "torch_compile":
            fn = torch.compile(module)
        else:
            import lumen
            lumen.set_threads(threads)
            budget = float(os.environ.get("LUMEN_BENCH_BUDGET", "20")) if impl == "lumen" else 0.0
            fn = torch.compile(module, backend="lumen", options={"budget_s": budget, "tuning_cache": impl == "lumen"})
        state = {}

        def call():
            with torch.no_grad():
                out = fn(*args)
            state["out"] = out if isinstance(out, torch.Tensor) else out[0]
        start = time.perf_counter()
        call()  # compiles (torch.compile is lazy)
        info = {"compile_s": time.perf_counter() - start} if impl != "torch" else {}
        return call, lambda: state["out"].float().numpy(), info


def torch_module_workloads():
    rows = [TorchModuleWorkload("dynamo_mlp_b64", _mlp),
            TorchModuleWorkload("dynamo_resnet18_224", _torchvision("resnet18")),
            TorchModuleWorkload("dynamo_mobilenet_v3_small_224", _torchvision("mobilenet_v3_small")),
            TorchModuleWorkload("dynamo_gpt2_block_s256", _gpt2_block),
            TorchModuleWorkload("dynamo_whisper_tiny_shape", _whisper_tiny),
            TorchModuleWorkload("dynamo_unet_block_32", _unet_block)]
    return {w.name: w for w in rows}

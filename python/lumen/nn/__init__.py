"""lumen.nn: modules with named parameters, and lumen.nn.functional."""
from .._lumen.nn import (  # noqa: F401
    BatchNorm2d, Conv1d, Conv2d, Embedding, GroupNorm, LayerNorm, Linear, MLP, MultiHeadAttention, RMSNorm,
    SwiGLU, TransformerBlock)
from . import functional  # noqa: F401


class Sequential:
    """Callables applied in order (lumen modules or functions of a tensor)."""

    def __init__(self, *layers):
        self.layers = list(layers)

    def __call__(self, x):
        for layer in self.layers:
            x = layer(x)
        return x

    def parameters(self):
        params = {}
        for layer in self.layers:
            if hasattr(layer, "parameters"):
                params.update(layer.parameters())
        return params

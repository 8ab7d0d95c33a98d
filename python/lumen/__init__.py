"""lumen: a deep learning compiler whose optimizer is search.

Build a graph, compile it, run it:

    import lumen, numpy as np
    g = lumen.Graph()
    x = g.input("x", (2, 3))
    y = lumen.softmax(x * 2, dim=-1)
    program = lumen.compile(g, [y])
    print(program(x=np.ones((2, 3), np.float32)))
"""
from ._lumen import DType, Dim, Error, Graph, Program, Tensor, cpu_info, set_threads  # noqa: F401
from ._lumen import compile as _compile_graph
from ._lumen import Comprehension, tc  # noqa: F401  (tensor comprehensions, docs/tc.md)
from ._convert import bfloat16, bool_, dtype, float16, float32, float64, int8, int32, int64, uint8  # noqa: F401
from ._functions import *  # noqa: F401,F403
from ._functions import abs, all, any, max, min, pow, round, sum  # noqa: F401  (shadow builtins on purpose)
from . import _tensor as _tensor_methods
from . import nn  # noqa: F401
from . import plot  # noqa: F401

_tensor_methods._install()
del _tensor_methods

__version__ = "0.1.0"
from ._lumen import io, models, onnx  # noqa: F401,E402
from ._lumen.io import Tokenizer  # noqa: F401,E402
from . import _chat  # noqa: E402
from ._lumen import grad  # noqa: F401,E402
from . import train  # noqa: F401,E402

_chat._install()


def compile(graph, outputs=None, *args, **kwargs):
    """compile(graph, outputs=None, backend="cpu", budget_s=0.0, ...) -> Program: compiles a lumen Graph.

    compile(module, example_inputs, dynamic_shapes=None, backend="cpu", budget_s=..., ...): a PyTorch module
    traced to ATen (torch.export, no dynamo), the ops lumen supports compiled by lumen, the rest run by
    PyTorch (lumen.torch_backend); returns a module called like `module`."""
    if isinstance(graph, Graph):
        return _compile_graph(graph, outputs, *args, **kwargs)
    from .torch_backend import compile_module
    return compile_module(graph, outputs, *args, **kwargs)

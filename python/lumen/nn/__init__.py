"""lumen.nn: functional layers (lumen.nn.functional)."""
from . import functional  # noqa: F401

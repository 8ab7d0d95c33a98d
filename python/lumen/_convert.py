"""Conversions between Python values and lumen: dtypes, scalars, dims."""
from __future__ import annotations

import numbers

from ._lumen import DType, Tensor

float32 = DType.float32
float16 = DType.float16
bfloat16 = DType.bfloat16
int32 = DType.int32
bool_ = DType.bool
int8 = DType.int8
uint8 = DType.uint8
int64 = DType.int64
float64 = DType.float64

_BY_NAME = {
    "float32": float32, "float": float32, "f32": float32,
    "float16": float16, "half": float16, "f16": float16,
    "bfloat16": bfloat16, "bf16": bfloat16,
    "int32": int32, "int": int32, "i32": int32,
    "bool": bool_,
    "int8": int8, "i8": int8,
    "uint8": uint8, "u8": uint8,
    "int64": int64, "long": int64, "i64": int64,
    "float64": float64, "double": float64, "f64": float64,
}


def dtype(value) -> DType:
    """A lumen DType from a DType, a name, a numpy dtype or a torch dtype."""
    if isinstance(value, DType):
        return value
    name = getattr(value, "name", None)
    if not isinstance(name, str) and isinstance(value, type):  # numpy scalar types: np.int64, np.float64
        name = getattr(value, "__name__", None)
    name = name or str(value)
    name = name.replace("torch.", "").replace("numpy.", "")
    if value is bool:
        return bool_
    if value is float:
        return float32
    if value is int:
        return int32
    if name in _BY_NAME:
        return _BY_NAME[name]
    raise TypeError(f"lumen has no dtype matching {value!r} "
                    "(use float32, float64, float16, bfloat16, int32, int64, bool, int8 or uint8)")


def is_float(d: DType) -> bool:
    return d in (float32, float16, bfloat16, float64)


def scalar_dtype(value, like: DType) -> DType:
    """The dtype a Python scalar takes next to a tensor of dtype `like` (PyTorch rules)."""
    if isinstance(value, bool):
        return like
    if isinstance(value, numbers.Integral):
        return int32 if like == bool_ else like
    if isinstance(value, numbers.Real):
        return like if is_float(like) else float32
    raise TypeError(f"cannot use {type(value).__name__} {value!r} as a tensor operand")


def as_tensor(value, like: Tensor) -> Tensor:
    """`value` as a tensor in `like`'s graph (Python scalars become constants)."""
    if isinstance(value, Tensor):
        return value
    d = scalar_dtype(value, like.dtype)
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and not is_float(d):
        if d == int32 and not -2**31 <= int(value) < 2**31:
            raise OverflowError(f"{value} does not fit the operand's int32 dtype (cast the tensor to int64 first)")
        return like.graph.constant(int(value), d)  # exact, even past 2^53
    return like.graph.constant(float(value), d)

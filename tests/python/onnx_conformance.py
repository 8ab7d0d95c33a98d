"""The ONNX backend node tests (the generators inside the installed `onnx`
package: onnx.backend.test.case.node.collect_testcases) run through lumen.

A case ends in one of three outcomes:
  passed       every data set's outputs match (onnx's rtol/atol, exact for integers)
  failed       lumen loaded the model but a result differs, or compile/run raised
  unsupported  the importer refused the model (op, attribute, dtype, opset, dynamic
               control flow ...); the reason is lumen's error message
Used by tests/python/test_onnx_conformance.py and scripts/onnx_report.py.
"""
import io
import contextlib
import functools
import re
import warnings

import numpy as np

import lumen

FLOAT_TYPES = {1, 10, 11, 16}  # float, float16, double, bfloat16


@functools.lru_cache(maxsize=1)
def cases():
    """name -> TestCase, every node test case of the installed onnx."""
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        found = collect_testcases()
    return {c.name: c for c in found if c.model is not None}


@functools.lru_cache(maxsize=1)
def _op_names():
    import onnx.defs
    names = {s.name for s in onnx.defs.get_all_schemas_with_history() if s.domain in ("", "ai.onnx")}
    return sorted(((n.lower(), n) for n in names), key=lambda p: -len(p[0]))


def op_of(case):
    """The op a case tests: the longest ONNX op name its test name starts with."""
    flat = case.name[len("test_"):].replace("_", "").lower()
    for low, name in _op_names():
        if flat.startswith(low):
            return name
    return case.model.graph.node[-1].op_type


def is_float_case(case):
    return any(o.type.tensor_type.elem_type in FLOAT_TYPES for o in case.model.graph.output)


def _first_line(message, limit=160):
    line = str(message).strip().splitlines()[0] if str(message).strip() else type(message).__name__
    line = re.sub(r"^onnx: ", "", line)
    return line if len(line) <= limit else line[:limit - 3] + "..."


def _compare(actual, expected, case):
    expected = np.asarray(expected)
    actual = np.asarray(actual)
    if actual.shape != expected.shape:
        return f"output shape {actual.shape}, expected {expected.shape}"
    if expected.dtype.kind in "biu":
        if not np.array_equal(actual.astype(np.int64), expected.astype(np.int64)):
            bad = int(np.sum(actual.astype(np.int64) != expected.astype(np.int64)))
            return f"{bad} of {expected.size} integer values differ"
        return None
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    if not np.allclose(a, e, rtol=case.rtol, atol=case.atol, equal_nan=True):
        err = np.nanmax(np.abs(a - e)) if a.size else 0.0
        return f"values differ (max abs error {err:.3g}, rtol {case.rtol}, atol {case.atol})"
    return None


def _model_inputs(case):
    init = {i.name for i in case.model.graph.initializer}
    return [i for i in case.model.graph.input if i.name not in init]


def _as_array(x):
    """A data-set entry as a contiguous numpy array; None for sequences and optionals."""
    import onnx
    if isinstance(x, onnx.TensorProto):
        x = onnx.numpy_helper.to_array(x)
    if isinstance(x, (np.ndarray, np.generic)):
        x = np.asarray(x, order="C")
        # bfloat16 (ml_dtypes) goes in as float32: lumen rounds it to the input's bf16.
        return x.astype(np.float32) if x.dtype.name == "bfloat16" else x
    return None


def _data_sets(case):
    out = []
    for inputs, outputs in case.data_sets:
        out.append(([_as_array(x) for x in inputs], [_as_array(x) for x in outputs]))
    return out


def run_case(case, backend):
    """(outcome, reason) for one case on one backend ("interp" or "cpu")."""
    infos = _model_inputs(case)
    data_sets = _data_sets(case)
    for inputs, outputs in data_sets:
        if any(x is None for x in inputs + outputs):
            return "unsupported", "sequence or optional values (lumen reads tensors only)"
    data = case.model.SerializeToString()
    first = dict(zip([i.name for i in infos], data_sets[0][0]))
    fixed = None
    try:
        model = lumen.onnx.load_bytes(data)
    except lumen.Error as e:
        if "must be known when the model is loaded" not in str(e):
            return "unsupported", _first_line(e)
        # Shapes / axes fed as graph inputs: fix the integer inputs at import.
        fixed = {k: v for k, v in first.items() if v.dtype.kind in "iub"}
        try:
            model = lumen.onnx.load_bytes(data, fixed_inputs=fixed)
        except lumen.Error as e2:
            return "unsupported", _first_line(e2)
    try:
        program = model.compile(backend=backend, tuning_cache=False)
    except lumen.Error as e:
        return "failed", "compile: " + _first_line(e)
    for inputs, outputs in data_sets:
        named = dict(zip([i.name for i in infos], inputs))
        if fixed is not None and any(not np.array_equal(named[k], v) for k, v in fixed.items()):
            return "unsupported", "a data set changes an input fixed at import"
        try:
            feed = {k: v for k, v in named.items() if k in model.inputs}
            result = program(**feed)
        except lumen.Error as e:
            return "failed", "run: " + _first_line(e)
        if not isinstance(result, tuple):
            result = (result,)
        if len(result) != len(outputs):
            return "failed", f"{len(result)} outputs, expected {len(outputs)}"
        for actual, expected in zip(result, outputs):
            problem = _compare(actual, expected, case)
            if problem:
                return "failed", problem
    return "passed", ""

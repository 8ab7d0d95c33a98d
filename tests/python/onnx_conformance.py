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
        if x.dtype.name == "bfloat16":
            return x.astype(np.float32)
        # float8 / float4 are held by lumen as their bit codes (u8), 2- / 4-bit
        # integers as their values (i8 / u8): see lumen/io/onnx/narrow_types.h.
        if x.dtype.name.startswith(("float8", "float4")):
            return x.view(np.uint8)
        if x.dtype.name in ("int4", "int2"):
            return x.astype(np.int8)
        if x.dtype.name in ("uint4", "uint2"):
            return x.astype(np.uint8)
        return x
    return None


def _data_sets(case):
    out = []
    for inputs, outputs in case.data_sets:
        out.append(([_as_array(x) for x in inputs], [_as_array(x) for x in outputs]))
    return out


class _Loaded:
    """A case imported into a (possibly shared) graph, ready to run."""

    def __init__(self, case, model, names, fixed, data_sets, prefix):
        self.case, self.model, self.names, self.fixed, self.data_sets = case, model, names, fixed, data_sets
        self.prefix = prefix


def _load(case, graph=None, prefix=""):
    """A _Loaded, or (outcome, reason) when the case cannot be imported."""
    infos = _model_inputs(case)
    data_sets = _data_sets(case)
    for inputs, outputs in data_sets:
        if any(x is None for x in inputs + outputs):
            return "unsupported", "sequence or optional values (lumen reads tensors only)"
    data = case.model.SerializeToString()
    names = [i.name for i in infos]
    first = dict(zip(names, data_sets[0][0]))
    # Shapes / axes / scales fed as graph inputs: the integer inputs, then each
    # input the importer names as needing a known value, are fixed at import.
    fixed = None
    base = prefix
    for attempt in range(8):
        try:
            model = lumen.onnx.load_bytes(data, fixed_inputs=fixed, graph=graph, prefix=prefix)
            break
        except lumen.Error as e:
            message = str(e)
            if "must be known when the model is loaded" not in message:
                return "unsupported", _first_line(e)
            needed = re.search(r"input \d+ \('([^']*)'", message)
            if fixed is None:
                fixed = {k: v for k, v in first.items() if v.dtype.kind in "iub"}
            elif needed and needed.group(1) in first and needed.group(1) not in fixed:
                fixed[needed.group(1)] = first[needed.group(1)]
            else:
                return "unsupported", _first_line(e)
            prefix = f"{base}fixed{attempt}_"  # the failed attempt may have left inputs named with `prefix`
    else:
        return "unsupported", "too many inputs must be fixed at import"
    for inputs, _ in data_sets:
        named = dict(zip(names, inputs))
        if fixed is not None and any(not np.array_equal(named[k], v) for k, v in fixed.items()):
            return "unsupported", "a data set changes an input fixed at import"
    return _Loaded(case, model, names, fixed, data_sets, prefix)


def _feed(loaded, data_set):
    prefix = loaded.prefix
    inputs = dict(zip(loaded.names, loaded.data_sets[data_set][0]))
    return {prefix + k: v for k, v in inputs.items() if prefix + k in loaded.model.inputs}


def _check(loaded, results, data_set):
    """None when the data set's outputs match, else the problem."""
    outputs = loaded.data_sets[data_set][1]
    if len(results) != len(outputs):
        return f"{len(results)} outputs, expected {len(outputs)}"
    for actual, expected in zip(results, outputs):
        problem = _compare(actual, expected, loaded.case)
        if problem:
            return problem
    return None


def run_case(case, backend):
    """(outcome, reason) for one case on one backend ("interp" or "cpu")."""
    loaded = _load(case)
    if not isinstance(loaded, _Loaded):
        return loaded
    try:
        program = loaded.model.compile(backend=backend, tuning_cache=False)
    except lumen.Error as e:
        return "failed", "compile: " + _first_line(e)
    for k in range(len(loaded.data_sets)):
        try:
            result = program(**_feed(loaded, k))
        except lumen.Error as e:
            return "failed", "run: " + _first_line(e)
        problem = _check(loaded, result if isinstance(result, tuple) else (result,), k)
        if problem:
            return "failed", problem
    return "passed", ""


def run_batch(batch, backend):
    """{name: (outcome, reason)} for several cases compiled as one program (one
    compiler run instead of one per case); cases are rerun one by one when the
    shared program cannot be compiled or run."""
    graph = lumen.Graph()
    results, loaded = {}, {}
    for k, case in enumerate(batch):
        prefix = f"c{k}_"
        got = _load(case, graph=graph, prefix=prefix)
        if isinstance(got, _Loaded):
            loaded[case.name] = (prefix, got)
        else:
            results[case.name] = got
    if not loaded:
        return results
    try:
        program = lumen.compile(graph, backend=backend, tuning_cache=False)
        for prefix, got in loaded.values():
            got.model.set_weights(program)
        problems = {}
        for k in range(max(len(got.data_sets) for _, got in loaded.values())):
            for prefix, got in loaded.values():
                for name, value in _feed(got, min(k, len(got.data_sets) - 1)).items():
                    program.set(name, value)
            program.run()
            for name, (prefix, got) in loaded.items():
                if k < len(got.data_sets) and name not in problems:
                    problem = _check(got, [program.get(o) for o in got.model.outputs], k)
                    if problem:
                        problems[name] = problem
        for name in loaded:
            results[name] = ("failed", problems[name]) if name in problems else ("passed", "")
    except lumen.Error:
        for name, (_, got) in loaded.items():
            results[name] = run_case(got.case, backend)
    return results


# ---- the report (docs/onnx-conformance.md) ---------------------------------

BACKEND_NAMES = ("interp", "cpu")

# Why the expected failures fail: case-name pattern -> cause, shown before the
# measured difference. Each was checked against onnx's reference implementation.
KNOWN_CAUSES = [
    (r"^test_attention_.*bf16",
     "the reference computes in bfloat16 numpy arithmetic, rounding every step (its sums term by term); "
     "lumen rounds once from f32: results 1 bf16 ulp apart"),
    (r"^test_attention_.*fp16",
     "the reference computes in float16 numpy arithmetic, rounding every step; lumen accumulates in f32: "
     "results 1 fp16 ulp apart"),
    (r"^test_dft_inverse",
     "the reference's numpy FFT runs in float32; lumen's DFT is an f64 product, so outputs that are 0 up to "
     "rounding differ by ~1e-6, over atol 1e-7"),
]


def _cause(name, message):
    for pattern, cause in KNOWN_CAUSES:
        if re.search(pattern, name):
            return f"{cause} ({message})"
    return message


def render_report(results):
    """The markdown report for {backend: {case: (outcome, reason)}}."""
    import onnx
    import onnx.defs
    all_cases = cases()
    names = sorted(all_cases)
    backends = [b for b in BACKEND_NAMES if b in results]
    floats = [n for n in names if is_float_case(all_cases[n])]
    lines = ["# ONNX conformance", "",
             "Generated by `make onnx-report` (`scripts/onnx_report.py`): the ONNX backend node tests that the",
             f"installed `onnx` {onnx.__version__} generates (`onnx.backend.test.case.node.collect_testcases()`,",
             f"{len(names)} cases, opsets up to {onnx.defs.onnx_opset_version()}) imported by `lumen::onnx` and run on each",
             "backend, compared with the expected outputs (onnx's rtol/atol; integers exactly). `make test` checks",
             "that a fresh run gives the outcomes recorded here (`tests/python/test_onnx_conformance.py`).", "",
             "- **passed**: every data set matches; **failed**: imported, but a result differs or compiling /",
             "  running raised (expected failures, listed below with the reason); **unsupported**: the importer",
             "  refused the model with a lumen::Error (op, attribute, element type, opset, run-time control flow).",
             "- A *float case* is one whose outputs include a floating-point tensor (float32, float16, bfloat16,",
             "  float64): the pass rate below is passed float cases over all float cases, unsupported ones included.",
             "  int64 and float64 are lumen's I64 and F64; float8 / float4 values are fed as their codes (uint8)",
             "  and 2- / 4-bit integers as int8 / uint8 (lumen holds them for storage: casts and movement only).", "",
             "| backend | float cases passed | pass rate (float) | all cases passed |",
             "| --- | --- | --- | --- |"]
    for b in backends:
        r = results[b]
        fp = sum(r[n][0] == "passed" for n in floats)
        ap = sum(r[n][0] == "passed" for n in names)
        lines.append(f"| {b} | {fp} / {len(floats)} | {100.0 * fp / len(floats):.1f}% | {ap} / {len(names)} |")
    lines += ["", "## Per op", "",
              "Cases are attributed to the op their name starts with (expanded function tests included).", "",
              "| op | cases | " + " | ".join(f"{b} passed / failed / unsupported" for b in backends) + " |",
              "| --- | --- | " + " | ".join("---" for _ in backends) + " |"]
    by_op = {}
    for n in names:
        by_op.setdefault(op_of(all_cases[n]), []).append(n)
    for op in sorted(by_op):
        cells = []
        for b in backends:
            counts = [sum(results[b][n][0] == o for n in by_op[op]) for o in ("passed", "failed", "unsupported")]
            cells.append(" / ".join(str(c) for c in counts))
        lines.append(f"| {op} | {len(by_op[op])} | " + " | ".join(cells) + " |")
    lines += ["", "## Cases that do not pass", "",
              "Outcome per backend and the reason (the first backend's that did not pass). Failed cases are the",
              "expected failures; unsupported ones carry the importer's error.", "",
              "| case | " + " | ".join(backends) + " | reason |", "| --- | " + " | ".join("---" for _ in backends) + " | --- |"]
    for n in names:
        outs = [results[b][n] for b in backends]
        if all(o[0] == "passed" for o in outs):
            continue
        first = next(o for o in outs if o[0] != "passed")
        reason = (_cause(n, first[1]) if first[0] == "failed" else first[1]).replace("|", "\\|")
        lines.append(f"| {n} | " + " | ".join(o[0] for o in outs) + f" | {reason} |")
    return "\n".join(lines) + "\n"


def read_report(path):
    """{case: {backend: outcome}} for the cases the report lists as not passing."""
    out, backends = {}, None
    with open(path) as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells and cells[0] == "case" and cells[-1] == "reason":
                backends = cells[1:-1]
                continue
            if backends and len(cells) >= len(backends) + 2 and cells[0].startswith("test_"):
                out[cells[0]] = dict(zip(backends, cells[1:1 + len(backends)]))
    return out

"""The ONNX backend node tests of the installed onnx package through lumen
(tests/python/onnx_conformance.py runs them), on each backend in LUMEN_BACKENDS.

Each case's outcome must be the one docs/onnx-conformance.md records: a case
recorded as passing must pass; a recorded failure is an expected failure
(xfail, with its reason); an unsupported case is skipped with lumen's reason.
A case whose outcome changed fails here: regenerate the report (make
onnx-report). Cases run in batches compiled as one program (one compiler run
per batch); the outcomes are written to LUMEN_ONNX_RESULTS (default
build/onnx_conformance.json) for scripts/onnx_report.py --check.
"""
import json
import os

import pytest

import onnx_conformance as oc

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "docs", "onnx-conformance.md")
BACKENDS = [b for b in os.environ.get("LUMEN_BACKENDS", "interp").split(",") if b in ("interp", "cpu")]
BATCH = 100

_results = {}  # backend -> {case: (outcome, reason)}


def _run_all(backend):
    if backend not in _results:
        cases = oc.cases()
        names = sorted(cases)
        out = {}
        for i in range(0, len(names), BATCH):
            out.update(oc.run_batch([cases[n] for n in names[i:i + BATCH]], backend))
        _results[backend] = out
        _save()
    return _results[backend]


def _save():
    path = os.environ.get("LUMEN_ONNX_RESULTS", os.path.join(ROOT, "build", "onnx_conformance.json"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({b: {n: list(r) for n, r in res.items()} for b, res in _results.items()}, f, indent=0, sort_keys=True)
    os.replace(tmp, path)


EXPECTED = oc.read_report(REPORT) if os.path.exists(REPORT) else {}


@pytest.mark.parametrize("name", sorted(oc.cases()))
def test_onnx_node_case(name, backend):  # backend: conftest parametrises over LUMEN_BACKENDS
    if backend not in BACKENDS:
        pytest.skip(f"the conformance run covers interp and cpu, not {backend}")
    outcome, reason = _run_all(backend)[name]
    expected = EXPECTED.get(name, {}).get(backend, "passed")
    if outcome != expected:
        pytest.fail(f"{name} on {backend}: {outcome} ({reason or 'matches'}), docs/onnx-conformance.md records "
                    f"{expected}: fix it, or regenerate the report (make onnx-report)")
    if outcome == "unsupported":
        pytest.skip(f"unsupported: {reason}")
    if outcome == "failed":
        pytest.xfail(f"expected failure: {reason}")


def test_report_lists_every_case():
    """The committed report and the installed onnx agree on the cases."""
    missing = sorted(set(EXPECTED) - set(oc.cases()))
    assert not missing, f"the report names cases the installed onnx lacks: {missing[:5]} (make onnx-report)"

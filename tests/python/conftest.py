"""pytest setup: the in-tree lumen package, backends to parametrise over, and
the op-coverage record that scripts/gen_ops_doc.py turns into docs/ops.md."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# LUMEN_PYTHON_DIR: another build of the package (make sanitize's).
sys.path.insert(0, os.environ.get("LUMEN_PYTHON_DIR") or os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import grad_harness  # noqa: E402
import harness  # noqa: E402

BACKENDS = os.environ.get("LUMEN_BACKENDS", "interp").split(",")


def pytest_generate_tests(metafunc):
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", BACKENDS)


@pytest.fixture(autouse=True)
def _track_ops():
    harness.CURRENT.clear()
    grad_harness.GRAD_CURRENT.clear()
    yield


def pytest_runtest_logreport(report):
    if report.when != "call":
        return
    checked = list(harness.CURRENT.items()) + [("grad:" + op, d) for op, d in grad_harness.GRAD_CURRENT.items()]
    for op, detail in checked:
        entry = harness.COVERAGE.setdefault(op, {"passed": 0, "failed": 0, "cases": set()})
        entry["passed" if report.passed else "failed"] += 1
        entry["cases"].update(detail)


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("LUMEN_OPS_COVERAGE", os.path.join(ROOT, "build", "ops_coverage.json"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = {}
    if os.path.exists(path):
        try:
            with open(path) as f:
                old = json.load(f)
        except (OSError, ValueError):
            old = {}
    for op, entry in harness.COVERAGE.items():
        old[op] = {"passed": entry["passed"], "failed": entry["failed"], "cases": sorted(entry["cases"])}
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(old, f, indent=1, sort_keys=True)
    os.replace(tmp, path)

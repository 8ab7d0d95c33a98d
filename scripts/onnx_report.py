#!/usr/bin/env python3
"""Writes docs/onnx-conformance.md: the ONNX backend node tests of the installed
onnx package run through lumen on interp and cpu (tests/python/onnx_conformance.py).

  onnx_report.py                       run every case on both backends, write the report
  onnx_report.py --check --results F   compare the outcomes a test run recorded in F
                                       (tests/python/test_onnx_conformance.py writes it)
                                       with the committed report; fail on any difference
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import onnx_conformance as oc  # noqa: E402

BATCH = 100


def run(backend):
    cases = oc.cases()
    names = sorted(cases)
    out = {}
    start = time.time()
    for i in range(0, len(names), BATCH):
        out.update(oc.run_batch([cases[n] for n in names[i:i + BATCH]], backend))
        print(f"onnx_report: {backend}: {min(i + BATCH, len(names))} / {len(names)} cases "
              f"({time.time() - start:.0f} s)", file=sys.stderr)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--results", default=os.path.join(ROOT, "build", "onnx_conformance.json"))
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "onnx-conformance.md"))
    args = parser.parse_args()
    if not args.check:
        results = {b: run(b) for b in oc.BACKEND_NAMES}
        tmp = args.out + ".tmp"
        with open(tmp, "w") as f:
            f.write(oc.render_report(results))
        os.replace(tmp, args.out)
        print(f"onnx_report: wrote {args.out}")
        return
    try:
        with open(args.results) as f:
            results = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"onnx_report: cannot read {args.results} ({e}); run tests/python/test_onnx_conformance.py first")
    committed = oc.read_report(args.out)
    problems = []
    for backend, outcomes in sorted(results.items()):
        for name, (outcome, reason) in sorted(outcomes.items()):
            expected = committed.get(name, {}).get(backend, "passed")
            if outcome != expected:
                problems.append(f"{name} on {backend}: {outcome} ({reason}), the report records {expected}")
    for p in problems[:50]:
        print("onnx_report:", p, file=sys.stderr)
    if problems:
        sys.exit(f"onnx_report: {len(problems)} outcomes differ from {args.out}; run make onnx-report")
    print(f"onnx_report: {args.out} matches the test run ({', '.join(sorted(results))})")


if __name__ == "__main__":
    main()

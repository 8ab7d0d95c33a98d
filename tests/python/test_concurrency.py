"""Programs called from several Python threads (run() releases the GIL): two
programs at once, and one program shared by threads, give exactly the outputs
of single-threaded calls."""
import threading

import numpy as np

import lumen


def _programs(n):
    g1, g2 = lumen.Graph(), lumen.Graph()
    a1, b1 = g1.input("a", (n, n)), g1.input("b", (n, n))
    a2, b2 = g2.input("a", (n, n)), g2.input("b", (n, n))
    p1 = lumen.compile(g1, [lumen.nn.functional.softmax(a1 @ b1, -1)])
    p2 = lumen.compile(g2, [(a2 * b2 + a2.exp()).sum(1)])
    return p1, p2


def _run_threads(count, body):
    errors = []

    def guarded(t):
        try:
            body(t)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors


def test_two_programs_from_two_threads_are_exact():
    n = 160
    rng = np.random.default_rng(0)
    inputs = [(rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)) for _ in range(2)]
    pairs = [_programs(n) for _ in range(2)]
    want = [[p(a=a, b=b).copy() for p in pairs[t]] for t, (a, b) in enumerate(inputs)]
    wrong = [0, 0]

    def body(t):
        a, b = inputs[t]
        for _ in range(300):
            for k, p in enumerate(pairs[t]):
                if not np.array_equal(p(a=a, b=b), want[t][k]):
                    wrong[t] += 1

    _run_threads(2, body)
    assert wrong == [0, 0]


def test_one_program_shared_by_four_threads():
    n = 96
    p, _ = _programs(n)
    rng = np.random.default_rng(1)
    inputs = [(rng.standard_normal((n, n)).astype(np.float32), rng.standard_normal((n, n)).astype(np.float32)) for _ in range(4)]
    want = [p(a, b).copy() for a, b in inputs]
    wrong = [0] * 4

    def body(t):
        a, b = inputs[t]
        for _ in range(200):
            if not np.array_equal(p(a, b), want[t]):
                wrong[t] += 1

    _run_threads(4, body)
    assert wrong == [0] * 4

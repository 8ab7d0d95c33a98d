"""Tensor comprehension rows (docs/tc.md): each standard layer written as a
comprehension, on the same shapes as its built-in row (`builtin` names it;
the report puts the two side by side), and research layers against the
fastest PyTorch formulation of the same math (eager and torch.compile)."""
from __future__ import annotations

from workloads import Workload

MATMUL = "def matmul(float(M,K) A, float(K,N) B) -> (C) { C(m,n) +=! A(m,k) * B(k,n) }"
SOFTMAX = """def softmax(float(N,C) X) -> (Y) {
  Mx(n) max=! X(n,c)
  E(n,c) = exp(X(n,c) - Mx(n))
  S(n) +=! E(n,c)
  Y(n,c) = E(n,c) / S(n)
}"""
CONV = """def conv(float(N,C,H,W) I, float(O,C,KH,KW) Wt) -> (Out) {
  Out(n,o,h,w) +=! I(n, c, h + kh, w + kw) * Wt(o,c,kh,kw)
}"""
CONTRACT3 = "def contract3(float(I,K) A, float(K,L) B, float(L,J) C) -> (O) { O(i,j) +=! A(i,k) * B(k,l) * C(l,j) }"
KRONECKER = """def kron_linear(float(N,P,Q) X, float(R,P) A, float(S,Q) B) -> (Y) {
  T(n,p,s) +=! X(n,p,q) * B(s,q)
  Y(n,r,s) +=! A(r,p) * T(n,p,s)
}"""
BLOCK_SCALED = """def block_scaled(float(M,K) X, float(K,N) Wq, float(G,N) Scale) -> (Y) {
  Y(m,n) +=! X(m, g*(K/G) + j) * Wq(g*(K/G) + j, n) * Scale(g,n) where j in 0:K/G
}"""


def _tc(text):
    import lumen
    fn = lumen.tc(text)
    return lambda g, *tensors: fn(*tensors)


def _torch():
    return __import__("torch")


def tc_workloads():
    rows = []
    for n in (512, 1024):
        rows.append(Workload(f"tc_sgemm_{n}", [(n, n), (n, n)], _tc(MATMUL), lambda a, b: a @ b, flops=2.0 * n ** 3,
                             builtin=f"sgemm_{n}"))
    rows.append(Workload("tc_softmax_4096", [(4096, 4096)], _tc(SOFTMAX), lambda x: _torch().softmax(x, -1),
                         bytes=2 * 4.0 * 4096 * 4096, builtin="softmax_4096"))

    def conv_padded(g, x, k):  # comprehensions read in bounds: pad with the built-in op first (they mix freely)
        import lumen
        import lumen.nn.functional as F
        return lumen.tc(CONV)(F.pad(x, (1, 1, 1, 1)), k)
    rows.append(Workload("tc_conv3x3_56", [(1, 64, 56, 56), (64, 64, 3, 3)], conv_padded,
                         lambda x, k: _torch().nn.functional.conv2d(x, k, padding=1), flops=2.0 * 64 * 64 * 9 * 56 * 56,
                         builtin="conv3x3_56"))
    # Research layers: the fastest PyTorch formulation of the same math.
    n = 128
    rows.append(Workload(f"tc_contract3_{n}", [(n, n)] * 3, _tc(CONTRACT3), lambda a, b, c: (a @ b) @ c,
                         flops=4.0 * n ** 3))
    N, P, Q, R, S = 256, 32, 32, 32, 32

    def torch_kron(x, a, b):
        t = _torch()
        return t.einsum("rp,nps->nrs", a, t.einsum("npq,sq->nps", x, b))
    rows.append(Workload("tc_kron_linear_256", [(N, P, Q), (R, P), (S, Q)], _tc(KRONECKER), torch_kron,
                         flops=2.0 * N * P * Q * S + 2.0 * N * R * P * S))
    M, K, Nn, G = 64, 1024, 1024, 32

    def torch_block_scaled(x, wq, scale):
        return x @ (wq * scale.repeat_interleave(K // G, 0))
    rows.append(Workload("tc_block_scaled_matmul_64", [(M, K), (K, Nn), (G, Nn)], _tc(BLOCK_SCALED), torch_block_scaled,
                         flops=2.0 * M * K * Nn))
    return rows


def render_tc_pairs(data):
    """Markdown: each comprehension row against its built-in row (same run, same threads)."""
    names = {w["name"]: w for w in data["workloads"]}
    pairs = [(w["name"], w["builtin"]) for w in data["workloads"] if w.get("builtin") in names]
    if not pairs:
        return []
    lines = ["## Tensor comprehensions vs built-in ops", "",
             "The same layer written as a comprehension (docs/tc.md) and with the built-in op, same shapes, same run: "
             "ratio = built-in ms / comprehension ms (1.00: as fast).", "",
             "| comprehension | built-in | threads | comprehension ms | built-in ms | ratio |", "| --- | --- | --- | --- | --- | --- |"]
    for t in sorted({r["threads"] for r in data["results"]}):
        for tc_name, builtin in pairs:
            get = {r["workload"]: r for r in data["results"] if r["impl"] == "lumen" and r["threads"] == t}
            a, b = get.get(tc_name, {}).get("median_ms"), get.get(builtin, {}).get("median_ms")
            if a is None or b is None:
                continue
            lines.append(f"| {tc_name} | {builtin} | {t} | {a:.2f} | {b:.2f} | {b / a:.2f} |")
    return lines + [""]

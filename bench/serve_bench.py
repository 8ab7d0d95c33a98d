#!/usr/bin/env python3
"""The serving rows of `make bench`, in a process of their own: `lumen serve`
(the batched engine) and llama.cpp's OpenAI-compatible server
(llama-cpp-python[server], when installed) on the bench's 110M Llama (seeded
random weights, the f32 GGUF of bench/models.py), each under the same load
from bench/serve_load.py: one client alone (the single-stream rate), then 16
concurrent clients; generated tokens/s, p50/p99 time to first token and
inter-token latency. Then the soak against lumen serve (`--soak N`: N
requests, random lengths, ~5% malformed or abandoned; zero failures and no
KV block in use at the end).

The last line printed is JSON: {"threads", "lumen": {...}, "llamacpp": {...}, "soak": {...}}.

  serve_bench.py THREADS [--requests 4] [--max-tokens 128] [--soak 2000]
"""
import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.environ.get("LUMEN_BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))

import serve_load  # noqa: E402

CONTEXT = 2048
VOCAB = 32000


class Process:
    """A server process; ready when `pattern` appears on its stderr (group 1: the port, when it prints one)."""

    def __init__(self, cmd, pattern, env=None, timeout=900):
        self.proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
        self.log, self.port, self.ready = [], None, threading.Event()
        threading.Thread(target=self._read, args=(pattern,), daemon=True).start()
        if not self.ready.wait(timeout) or self.proc.poll() is not None:
            self.stop()
            raise RuntimeError("server did not start: " + "".join(self.log[-20:])[-2000:])

    def _read(self, pattern):
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(pattern, line)
            if m and not self.ready.is_set():
                if m.groups():
                    self.port = int(m.group(1))
                self.ready.set()
        self.ready.set()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serving_gguf():
    """The 110M Llama's weights as an f32 GGUF with a character vocabulary (the bench's own GGUF has placeholder
    tokens, which no text encodes to): both servers tokenize the same text prompts to the same tokens."""
    import models
    files = models.llama_files()
    out = os.path.join(models.MODELS, "llama110m_ctx2048_serve_f32.gguf")
    if not os.path.exists(out):
        from lumen.gguf_export import export_llama
        chars = [chr(c) for c in range(33, 127)] + ["▁", "\n"]
        vocab = ["<unk>", "<s>", "</s>"] + chars
        vocab += [f"<t{i}>" for i in range(VOCAB - len(vocab))]
        types = [2, 3, 3] + [1] * (len(vocab) - 3)
        export_llama(files["dir"], out + ".tmp", "f32", vocab=vocab, token_types=types)
        os.replace(out + ".tmp", out)
    return out


def measure(url, requests, max_tokens, lumen=False):
    single = serve_load.run_load(url, 1, requests, max_tokens)
    before = serve_load.metrics(url) if lumen else {}
    load = serve_load.run_load(url, 16, requests, max_tokens)
    out = {"single": single, "load": load,
           "speedup_vs_single": load["tokens_per_second"] / single["tokens_per_second"] if single["tokens_per_second"] else 0.0}
    if lumen:  # the mean number of sequences a decode step advanced under the 16 clients
        after = serve_load.metrics(url)
        steps = after["lumen_decode_steps_total"] - before["lumen_decode_steps_total"]
        out["mean_batch"] = (after["lumen_decode_rows_total"] - before["lumen_decode_rows_total"]) / steps if steps else 0.0
    return out


def lumen_server(model, threads):
    cli = os.path.join(BUILD, "tools", "lumen")
    cmd = [cli, "serve", "-m", model, "--port", "0", "--quiet", "--threads", str(threads), "--max-queue", "0",
           "--capacity", str(CONTEXT), "--name", "llama110m"]
    return Process(cmd, r"serving '.*' on http://127\.0\.0\.1:(\d+)")


def llamacpp_server(model, threads):
    try:
        import llama_cpp.server.app  # noqa: F401
    except ImportError as e:
        raise LookupError(f"llama-cpp-python[server] is not installed ({e})") from e
    port = free_port()
    # interrupt_requests off: by default a new request interrupts the one streaming.
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1", "--port", str(port),
           "--n_threads", str(threads), "--n_threads_batch", str(threads), "--n_ctx", str(CONTEXT),
           "--interrupt_requests", "False", "--verbose", "False"]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    p = Process(cmd, r"Uvicorn running on", env=env)
    p.port = port
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("threads", type=int)
    ap.add_argument("--requests", type=int, default=4, help="requests per client")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--soak", type=int, default=0)
    ap.add_argument("--no-llamacpp", action="store_true")
    a = ap.parse_args()
    gguf = serving_gguf()
    out = {"threads": a.threads, "max_tokens": a.max_tokens, "requests_per_client": a.requests}
    server = lumen_server(gguf, a.threads)
    url = f"http://127.0.0.1:{server.port}"
    try:
        serve_load.stream_completion(url, "warm up", 4)
        out["lumen"] = measure(url, a.requests, a.max_tokens, lumen=True)
        if a.soak:
            soak = serve_load.run_soak(url, a.soak, 16, VOCAB, CONTEXT)
            soak["failures"] = soak["failures"][:20]
            out["soak"] = soak
    finally:
        server.stop()
    if a.no_llamacpp:
        out["llamacpp"] = {"missing": "not asked for (--no-llamacpp)"}
    else:
        try:
            peer = llamacpp_server(gguf, a.threads)
        except (LookupError, RuntimeError) as e:
            out["llamacpp"] = {"missing": str(e)[:300]}
        else:
            try:
                purl = f"http://127.0.0.1:{peer.port}"
                serve_load.stream_completion(purl, "warm up", 4)
                out["llamacpp"] = measure(purl, a.requests, a.max_tokens)
            finally:
                peer.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main()

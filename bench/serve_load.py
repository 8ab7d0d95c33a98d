#!/usr/bin/env python3
"""Load on an OpenAI-compatible server (`lumen serve`, llama-server, ...):
C concurrent clients each send R streaming completions; reported are the total
generated tokens/s, the single-stream rate (one client alone, measured first),
and p50/p99 time to first token and inter-token latency.

Tokens are counted from each stream's usage chunk (stream_options.include_usage),
so a server that sends several tokens in one chunk is counted correctly (a
server that sends no usage chunk, as llama-cpp-python's, is counted one token
per content chunk);
inter-token latency is the time between content chunks divided by the tokens
they carried (a chunk's token count taken as 1 when the usage is not known per chunk).

A soak (`--soak N`): N requests from C clients with random prompt and output
lengths, about 5% of them malformed (bad JSON, a token outside the
vocabulary, max_tokens 0, a context overflow, an unknown model) or abandoned
mid-stream; every well-formed one must succeed, every malformed one must get
an OpenAI-shaped 4xx, and afterwards /metrics must show nothing running and
no KV block in use.

  serve_load.py --url http://127.0.0.1:8080 [--clients 16] [--requests 4] [--max-tokens 128]
  serve_load.py --url http://127.0.0.1:8080 --soak 2000 --vocab 32000 --context 2048

`make bench` runs both through bench/serve_bench.py (lumen serve, and
llama.cpp's server when installed, on the bench's 110M Llama).
"""
import argparse
import json
import random
import re
import statistics
import threading
import time
import urllib.error
import urllib.request


def stream_completion(url, prompt, max_tokens, model=None):
    """One streaming completion: (time to first token s, [gaps between content chunks s], tokens, text).
    `prompt` is text or a list of token ids."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    if model:
        body["model"] = model
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    first, last, gaps, tokens, chunks, text = None, None, [], None, 0, []
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            for c in chunk.get("choices", []):
                if c.get("text"):
                    chunks += 1
                    now = time.perf_counter()
                    if first is None:
                        first = now - start
                    else:
                        gaps.append(now - last)
                    last = now
                    text.append(c["text"])
    if tokens is None:  # no usage chunk (llama-cpp-python's server sends none): one token per content chunk
        tokens = chunks
    return first if first is not None else time.perf_counter() - start, gaps, tokens, "".join(text)


def percentile(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def run_load(url, clients, requests, max_tokens, model=None, prompt="Once upon a time", vocab=None):
    """Runs the load; returns a dict of the measurements. With `vocab`, prompts
    are 16 token ids each (for models without a real vocabulary)."""
    results, errors = [], []

    def client(c):
        for i in range(requests):
            p = f"{prompt} ({c}, {i})"
            if vocab:
                p = [(c * 7919 + i * 104729 + k * 31 + 1) % vocab for k in range(16)]
            try:
                results.append(stream_completion(url, p, max_tokens, model))
            except Exception as e:  # noqa: BLE001 - counted and reported, the load goes on
                errors.append(repr(e))

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    tokens = sum(r[2] for r in results)
    ttft = [r[0] for r in results]
    itl = [g for r in results for g in r[1]]
    return {"clients": clients, "requests": len(results), "errors": errors, "seconds": seconds, "tokens": tokens,
            "tokens_per_second": tokens / seconds if seconds > 0 else 0.0,
            "ttft_p50_ms": 1e3 * percentile(ttft, 50), "ttft_p99_ms": 1e3 * percentile(ttft, 99),
            "itl_p50_ms": 1e3 * percentile(itl, 50), "itl_p99_ms": 1e3 * percentile(itl, 99),
            "ttft_mean_ms": 1e3 * statistics.fmean(ttft) if ttft else float("nan")}


def post(url, body=None, raw=None, timeout=600):
    """(status, parsed JSON or text) of a POST."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def metrics(url):
    """/metrics as {name: value}."""
    with urllib.request.urlopen(url + "/metrics", timeout=60) as r:
        text = r.read().decode()
    return {k: float(v) for k, v in re.findall(r"^(lumen_\w+(?:\{[^}]*\})?) (\S+)$", text, re.M)}


MALFORMED = ("invalid_json", "token_outside_vocabulary", "max_tokens_0", "context_overflow", "unknown_model")


def soak_request(url, rng, vocab, context, max_prompt, max_new, kind, model=None):
    """One soak request of `kind` ("whole", "stream", "cancel" or one of MALFORMED); None when it went as it
    should, else what went wrong."""
    prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, max_prompt))]
    wanted = rng.randint(1, max_new)
    body = {"prompt": prompt, "max_tokens": wanted, "temperature": rng.choice([0, 0.8]), "seed": rng.randrange(1000)}
    if model:
        body["model"] = model
    if kind in ("whole", "stream", "cancel"):
        if kind == "whole":
            status, r = post(url + "/v1/completions", body)
            if status != 200:
                return f"whole: {status} {r}"
            usage, choice = r["usage"], r["choices"][0]
            ok = 1 <= usage["completion_tokens"] <= wanted and choice["finish_reason"] in ("stop", "length")
            return None if ok and isinstance(choice["text"], str) else f"whole: {r}"
        if kind == "stream":
            _, _, tokens, _ = stream_completion(url, prompt, wanted, model)
            return None if 1 <= tokens <= wanted else f"stream: {tokens} tokens for max_tokens {wanted}"
        req = urllib.request.Request(url + "/v1/completions", data=json.dumps(dict(body, stream=True, max_tokens=max_new)).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            r.readline()  # the first event, then the client leaves
        return None
    expected = {"invalid_json": (400, "invalid_json"), "token_outside_vocabulary": (400, None),
                "max_tokens_0": (400, None), "context_overflow": (400, "context_length_exceeded"),
                "unknown_model": (404, "model_not_found")}[kind]
    if kind == "invalid_json":
        status, r = post(url + "/v1/completions", raw=b'{"prompt": [1, 2, ')
    else:
        if kind == "token_outside_vocabulary":
            body["prompt"] = prompt + [vocab + 5]
        elif kind == "max_tokens_0":
            body["max_tokens"] = 0
        elif kind == "context_overflow":
            body["prompt"] = [1] * context
        else:
            body["model"] = "no-such-model"
        status, r = post(url + "/v1/completions", body)
    shaped = isinstance(r, dict) and isinstance(r.get("error"), dict) and r["error"].get("message")
    if status != expected[0] or not shaped or (expected[1] and r["error"].get("code") != expected[1]):
        return f"{kind}: {status} {r}"
    return None


def run_soak(url, requests, clients, vocab, context, max_prompt=64, max_new=64, bad_fraction=0.05, seed=0,
             model=None):
    """The soak; returns its counts. Every well-formed request must succeed and the cache must end empty."""
    rng = random.Random(seed)
    kinds = []
    for _ in range(requests):
        if rng.random() < bad_fraction:
            kinds.append(rng.choice(MALFORMED + ("cancel",) * len(MALFORMED)))
        else:
            kinds.append(rng.choice(("whole", "stream")))
    seeds = [rng.randrange(2**32) for _ in range(requests)]
    failures, lock, index = [], threading.Lock(), [0]

    def client():
        while True:
            with lock:
                i = index[0]
                index[0] += 1
            if i >= requests:
                return
            try:
                problem = soak_request(url, random.Random(seeds[i]), vocab, context, max_prompt, max_new, kinds[i], model)
            except Exception as e:  # noqa: BLE001 - every failure is counted and reported
                problem = f"{kinds[i]}: {e!r}"
            if problem:
                with lock:
                    failures.append(problem)

    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    deadline = time.time() + 60  # abandoned streams end at their next token
    while True:
        m = metrics(url)
        if (m.get("lumen_requests_running", 0) == 0 and m.get("lumen_queue_depth", 0) == 0) or time.time() > deadline:
            break
        time.sleep(0.1)
    return {"requests": requests, "clients": clients, "seconds": seconds,
            "well_formed": sum(k in ("whole", "stream") for k in kinds), "malformed": sum(k in MALFORMED for k in kinds),
            "cancelled": kinds.count("cancel"), "failures": failures, "failed": len(failures),
            "running_after": m.get("lumen_requests_running"), "kv_blocks_in_use_after": m.get("lumen_kv_blocks_in_use"),
            "kv_blocks_free_after": m.get("lumen_kv_blocks_free"), "engine_failed": m.get("lumen_requests_failed_total")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--model")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--vocab", type=int, help="send token-id prompts from this vocabulary")
    ap.add_argument("--soak", type=int, default=0, help="run a soak of this many requests instead")
    ap.add_argument("--context", type=int, default=2048, help="the server's context (the soak overflows it)")
    a = ap.parse_args()
    if a.soak:
        r = run_soak(a.url, a.soak, a.clients, a.vocab or 32000, a.context, model=a.model)
        print(json.dumps({k: v for k, v in r.items() if k != "failures"}))
        for f in r["failures"][:20]:
            print("failure:", f)
        raise SystemExit(1 if r["failed"] or r["kv_blocks_in_use_after"] else 0)
    single = run_load(a.url, 1, a.requests, a.max_tokens, a.model, vocab=a.vocab)
    load = run_load(a.url, a.clients, a.requests, a.max_tokens, a.model, vocab=a.vocab)
    for name, r in [("single stream", single), (f"{a.clients} clients", load)]:
        print(f"{name}: {r['tokens']} tokens in {r['seconds']:.2f} s = {r['tokens_per_second']:.1f} tokens/s; "
              f"TTFT p50 {r['ttft_p50_ms']:.1f} ms p99 {r['ttft_p99_ms']:.1f} ms; "
              f"ITL p50 {r['itl_p50_ms']:.2f} ms p99 {r['itl_p99_ms']:.2f} ms; errors {len(r['errors'])}")
    if single["tokens_per_second"] > 0:
        print(f"concurrent / single-stream throughput: {load['tokens_per_second'] / single['tokens_per_second']:.2f}x")


if __name__ == "__main__":
    main()

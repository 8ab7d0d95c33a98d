#!/usr/bin/env python3
"""Load on an OpenAI-compatible server (`lumen serve`, llama-server, ...):
C concurrent clients each send R streaming completions; reported are the total
generated tokens/s, the single-stream rate (one client alone, measured first),
and p50/p99 time to first token and inter-token latency.

Tokens are counted from each stream's usage chunk (stream_options.include_usage),
so a server that sends several tokens in one chunk is counted correctly;
inter-token latency is the time between content chunks divided by the tokens
they carried (a chunk's token count taken as 1 when the usage is not known per chunk).

  serve_load.py --url http://127.0.0.1:8080 [--clients 16] [--requests 4] [--max-tokens 128]

Not part of `make bench` yet: the continuous-batching engine it is meant to
measure is not built (lumen/serve/README.md).
"""
import argparse
import json
import statistics
import threading
import time
import urllib.request


def stream_completion(url, prompt, max_tokens, model=None):
    """One streaming completion: (time to first token s, [gaps between content chunks s], tokens, text)."""
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    if model:
        body["model"] = model
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    first, last, gaps, tokens, text = None, None, [], 0, []
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
                    now = time.perf_counter()
                    if first is None:
                        first = now - start
                    else:
                        gaps.append(now - last)
                    last = now
                    text.append(c["text"])
    return first if first is not None else time.perf_counter() - start, gaps, tokens, "".join(text)


def percentile(values, q):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q / 100 * (len(values) - 1))))]


def run_load(url, clients, requests, max_tokens, model=None, prompt="Once upon a time"):
    """Runs the load; returns a dict of the measurements."""
    results, errors = [], []

    def client(c):
        for i in range(requests):
            try:
                results.append(stream_completion(url, f"{prompt} ({c}, {i})", max_tokens, model))
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--model")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=128)
    a = ap.parse_args()
    single = run_load(a.url, 1, a.requests, a.max_tokens, a.model)
    load = run_load(a.url, a.clients, a.requests, a.max_tokens, a.model)
    for name, r in [("single stream", single), (f"{a.clients} clients", load)]:
        print(f"{name}: {r['tokens']} tokens in {r['seconds']:.2f} s = {r['tokens_per_second']:.1f} tokens/s; "
              f"TTFT p50 {r['ttft_p50_ms']:.1f} ms p99 {r['ttft_p99_ms']:.1f} ms; "
              f"ITL p50 {r['itl_p50_ms']:.2f} ms p99 {r['itl_p99_ms']:.2f} ms; errors {len(r['errors'])}")
    if single["tokens_per_second"] > 0:
        print(f"concurrent / single-stream throughput: {load['tokens_per_second'] / single['tokens_per_second']:.2f}x")


if __name__ == "__main__":
    main()

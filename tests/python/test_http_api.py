"""End-to-end tests of the OpenAI-compatible HTTP API of a cluster's head
(http/http_server.h): `troupe cluster up --shards 2 --http-port 0` in
separate processes, driven with the official `openai` client and with raw
sockets, checked against the single-process `troupe generate`.
"""
import concurrent.futures
import json
import re
import socket
import subprocess
import time

import pytest
import requests

from conftest import DEFAULT_MODEL, TROUPE_BIN
from test_cluster import Cluster, THREADS

openai = pytest.importorskip("openai")

MODEL_ID = DEFAULT_MODEL.name


@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path):
    c = Cluster(shards=2, extra=("--http-port", "0"))
    yield c
    c.stop()


@pytest.fixture(scope="module")
def port(cluster):
    return cluster.info["http_port"]


@pytest.fixture(scope="module")
def client(port):
    return openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0, timeout=120)


# ------------------------------------------------------------------ helpers

def run(*args, timeout=300):
    return subprocess.run([str(TROUPE_BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def generate(prompt, *flags):
    """`troupe generate --json`: (text, summary line)."""
    p = run("generate", "--prompt", prompt, "--threads", THREADS, "--model", DEFAULT_MODEL, "--json", *flags)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return "".join(l["text"] for l in lines if "token" in l), lines[-1]


def openai_finish(reason):
    return {"eos": "stop", "stop": "stop", "length": "length"}[reason]


def request(port, method, path, body=b"", headers=None, timeout=60):
    """One raw HTTP/1.1 request on a fresh socket: (status, headers, body bytes)."""
    head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
    for k, v in (headers or {}).items():
        head += f"{k}: {v}\r\n"
    if body or method == "POST":
        head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head.encode() + b"\r\n" + body)
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    header, _, rest = data.partition(b"\r\n\r\n")
    lines = header.decode().split("\r\n")
    status = int(lines[0].split()[1])
    hdrs = {k.strip().lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:])}
    if hdrs.get("transfer-encoding") == "chunked":
        out = b""
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            out += rest[:size]
            rest = rest[size + 2:]
        rest = out
    return status, hdrs, rest


def post(port, path, obj):
    body = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
    status, _, data = request(port, "POST", path, body)
    return status, json.loads(data)


def assert_error(port, path, obj, status, *words):
    got, body = post(port, path, obj)
    assert got == status, body
    err = body["error"]
    assert set(err) >= {"message", "type", "code"}, body
    for w in words:
        assert w in err["message"], (w, err)
    return err


def gguf_token_bytes():
    """Each token id's raw bytes, read from the GGUF vocabulary (GPT-2 byte-unicode form) by hand."""
    gguf = pytest.importorskip("gguf")
    reader = gguf.GGUFReader(str(DEFAULT_MODEL))
    field = reader.fields["tokenizer.ggml.tokens"]
    tokens = [bytes(field.parts[i]).decode() for i in field.data]
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    decoder = {chr(c): b for b, c in zip(bs, cs)}
    return [bytes(decoder[ch] for ch in t) if all(ch in decoder for ch in t) else t.encode() for t in tokens]


def shard_cache_bytes(cluster):
    p = run("status", "--endpoint", cluster.endpoint, "--json")
    assert p.returncode == 0, p.stderr
    nodes = json.loads(p.stdout)["nodes"]
    return {k: v["cache_bytes_in_use"] for k, v in nodes.items() if k.startswith("shard-")}


def render_chat(messages):
    """The GGUF's own Jinja chat template, rendered by jinja2 (as in test_conformance.py)."""
    jinja2 = pytest.importorskip("jinja2")
    gguf = pytest.importorskip("gguf")
    reader = gguf.GGUFReader(str(DEFAULT_MODEL))
    field = reader.fields["tokenizer.chat_template"]
    source = bytes(field.parts[field.data[0]]).decode()
    return jinja2.Environment().from_string(source).render(messages=messages, add_generation_prompt=True)


# -------------------------------------------------------------------- tests

def test_cluster_json_records_the_served_port(cluster, port):
    info = cluster.info
    assert info["http_served"] is True
    assert isinstance(port, int) and port > 0
    assert info["nodes"][0]["http_port"] == port
    assert info["http_url"] == f"http://127.0.0.1:{port}/v1"
    assert info["job_endpoint"] == cluster.endpoint  # the old contract stays


def test_models_lists_the_served_model(client):
    models = client.models.list()
    assert [m.id for m in models.data] == [MODEL_ID]


def test_health(port):
    status, _, body = request(port, "GET", "/health")
    assert status == 200 and json.loads(body)["status"] == "ok"


@pytest.mark.parametrize("prompt", ["The capital of France is", "def fibonacci(n):", "1, 2, 3, 4,"])
def test_greedy_completion_equals_generate(client, prompt):
    want, summary = generate(prompt, "--max-tokens", "24")
    got = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=24, temperature=0)
    assert got.object == "text_completion"
    assert got.model == MODEL_ID
    assert got.choices[0].text == want
    assert got.choices[0].finish_reason == openai_finish(summary["finish_reason"])
    assert got.usage.prompt_tokens == summary["prompt_tokens"]
    assert got.usage.completion_tokens == summary["generated_tokens"]
    assert got.usage.total_tokens == summary["prompt_tokens"] + summary["generated_tokens"]


def test_prompt_as_a_list_of_one_string(client):
    want, _ = generate("The quick brown fox", "--max-tokens", "8")
    got = client.completions.create(model=MODEL_ID, prompt=["The quick brown fox"], max_tokens=8, temperature=0)
    assert got.choices[0].text == want


def test_streaming_chunks_concatenate_to_the_answer(client):
    prompt = "Once upon a time, in a small village,"
    want, summary = generate(prompt, "--max-tokens", "32")
    chunks = list(client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=32, temperature=0,
                                            stream=True, stream_options={"include_usage": True}))
    texts = [c.choices[0].text for c in chunks if c.choices]
    assert "".join(texts) == want
    assert len([t for t in texts if t]) >= 16  # one event per token, not one blob
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == openai_finish(summary["finish_reason"]) and not any(finishes[:-1])
    assert chunks[-1].usage.completion_tokens == summary["generated_tokens"]
    assert chunks[-1].usage.prompt_tokens == summary["prompt_tokens"]


def test_raw_stream_is_server_sent_events(port):
    status, hdrs, body = request(port, "POST", "/v1/completions",
                                 json.dumps({"prompt": "Hello", "max_tokens": 4, "temperature": 0,
                                             "stream": True}).encode())
    assert status == 200 and hdrs["content-type"].startswith("text/event-stream")
    events = body.decode().split("\n\n")
    assert events[-1] == "" and events[-2] == "data: [DONE]"
    for e in events[:-2]:
        assert e.startswith("data: ")
        json.loads(e[6:])


def test_chat_equals_generate_chat(client):
    prompt = "Name a planet."
    want, summary = generate(prompt, "--chat", "--max-tokens", "24")
    got = client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": prompt}],
                                         max_tokens=24, temperature=0)
    assert got.object == "chat.completion"
    assert got.choices[0].message.role == "assistant"
    assert got.choices[0].message.content == want
    assert got.usage.prompt_tokens == summary["prompt_tokens"]
    assert got.usage.completion_tokens == summary["generated_tokens"]
    # The same streamed: a role delta, then the content.
    chunks = list(client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": prompt}],
                                                 max_tokens=24, temperature=0, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == want
    assert chunks[-1].choices[0].finish_reason == openai_finish(summary["finish_reason"])


def test_system_message_equals_generate_system(client):
    want, _ = generate("Name a planet.", "--chat", "--system", "You are terse.", "--max-tokens", "16")
    got = client.chat.completions.create(
        model=MODEL_ID, max_tokens=16, temperature=0,
        messages=[{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a planet."}])
    assert got.choices[0].message.content == want


def test_multi_turn_conversation_uses_the_chat_template(client):
    messages = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital of France is Paris."},
        {"role": "user", "content": "And of Italy?"},
    ]
    rendered = render_chat(messages)
    ids = json.loads(run("tokenize", "--text", rendered, "--model", DEFAULT_MODEL).stdout)
    want, summary = generate(rendered, "--max-tokens", "24")  # the rendered text as a plain prompt
    assert summary["prompt_tokens"] == len(ids)
    got = client.chat.completions.create(model=MODEL_ID, messages=messages, max_tokens=24, temperature=0)
    assert got.usage.prompt_tokens == len(ids)
    assert got.choices[0].message.content == want
    # Content given as text parts is the same conversation.
    parts = [dict(m, content=[{"type": "text", "text": m["content"]}]) for m in messages]
    again = client.chat.completions.create(model=MODEL_ID, messages=parts, max_tokens=24, temperature=0)
    assert again.choices[0].message.content == want


def test_seeded_sampling_is_reproducible_and_equals_generate(client):
    prompt = "Write a haiku about autumn leaves."
    kw = dict(model=MODEL_ID, prompt=prompt, max_tokens=24, temperature=0.8, seed=1234)
    a = client.completions.create(**kw).choices[0].text
    b = client.completions.create(**kw).choices[0].text
    assert a == b
    want, _ = generate(prompt, "--max-tokens", "24", "--temperature", "0.8", "--seed", "1234")
    assert a == want
    c = client.completions.create(**dict(kw, seed=99)).choices[0].text
    assert c != a  # another seed, another answer (24 sampled tokens: a tie is vanishingly unlikely)


def test_extras_are_passed_through(client):
    prompt = "The quick brown fox"
    want, _ = generate(prompt, "--max-tokens", "16", "--temperature", "0.7", "--seed", "5", "--top-k", "20",
                       "--min-p", "0.05", "--top-a", "0.2", "--repeat-penalty", "1.3")
    got = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=16, temperature=0.7, seed=5,
                                    extra_body={"top_k": 20, "min_p": 0.05, "top_a": 0.2, "repetition_penalty": 1.3})
    assert got.choices[0].text == want


def test_stop_strings(client):
    prompt = "List three colours of the rainbow:"
    full, _ = generate(prompt, "--max-tokens", "32")
    words = re.findall(r"[A-Za-z]{4,}", full)
    assert len(words) >= 2, full
    stop = words[1]
    cut = full[:full.index(stop)]
    for s in (stop, [stop, "never-appears-123"]):
        got = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=32, temperature=0, stop=s)
        assert got.choices[0].text == cut
        assert got.choices[0].finish_reason == "stop"
    chunks = list(client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=32, temperature=0,
                                            stop=stop, stream=True))
    assert "".join(c.choices[0].text for c in chunks) == cut
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_length_finish_and_usage(client):
    got = client.completions.create(model=MODEL_ID, prompt="1, 2, 3, 4,", max_tokens=5, temperature=0,
                                    extra_body={"min_tokens": 5})
    assert got.choices[0].finish_reason == "length"
    assert got.usage.completion_tokens == 5


def test_bad_requests_get_400_naming_the_problem(port, client):
    c, ch = "/v1/completions", "/v1/chat/completions"
    assert_error(port, c, b"{not json", 400, "JSON")
    assert_error(port, c, b"[1, 2]", 400, "object")
    assert_error(port, c, b"[" * 100000 + b"]" * 100000, 400, "nested")
    assert_error(port, c, {"prompt": "hi", "temperature": "hot"}, 400, "temperature", "number")
    assert_error(port, c, {"prompt": "hi", "max_tokens": "ten"}, 400, "max_tokens", "integer")
    assert_error(port, c, {"prompt": "hi", "max_tokens": 2.5}, 400, "max_tokens")
    assert_error(port, c, {"prompt": "hi", "max_tokens": -1}, 400, "max_tokens")
    assert_error(port, c, {"prompt": "hi", "stream": "yes"}, 400, "stream", "boolean")
    assert_error(port, c, {"prompt": "hi", "stop": 5}, 400, "stop")
    assert_error(port, c, {"prompt": "hi", "top_p": 3}, 400, "top_p")
    assert_error(port, c, {"prompt": "hi", "n": 17}, 400, "n")
    assert_error(port, c, {"prompt": ["a", "b"]}, 400, "prompt")
    assert_error(port, c, {"prompt": [[1, 2], [3]]}, 400, "prompt")
    assert_error(port, c, {"prompt": [1, -2]}, 400, "prompt")
    assert_error(port, c, {"prompt": [1, 2, 99999999]}, 400, "not in the vocabulary")
    assert_error(port, c, {"max_tokens": 3}, 400, "prompt")
    assert_error(port, c, {"prompt": "hi", "logprobs": 9}, 400, "logprobs")
    assert_error(port, c, {"prompt": "hi", "presence_penalty": 3}, 400, "presence_penalty")
    assert_error(port, c, {"prompt": "hi", "logit_bias": {"abc": 1}}, 400, "logit_bias", "abc")
    assert_error(port, c, {"prompt": "hi", "logit_bias": {"5": 101}}, 400, "logit_bias")
    assert_error(port, c, {"prompt": "hi", "logprobs": 2, "top_logprobs": 2}, 400, "top_logprobs")
    assert_error(port, ch, {"messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2}, 400, "top_logprobs")
    assert_error(port, ch, {"messages": [{"role": "user", "content": "hi"}], "logprobs": True, "top_logprobs": 21},
                 400, "top_logprobs")
    assert_error(port, ch, {"messages": []}, 400, "messages")
    assert_error(port, ch, {"messages": "hi"}, 400, "messages")
    assert_error(port, ch, {"messages": [{"role": "wizard", "content": "hi"}]}, 400, "role")
    assert_error(port, ch, {"messages": [{"role": "user", "content": 7}]}, 400, "content")
    # As OpenAI: null content only for an assistant turn.
    assert_error(port, ch, {"messages": [{"role": "user", "content": None}]}, 400, "messages[0].content", "null")
    assert_error(port, ch, {"messages": [{"role": "system", "content": None},
                                         {"role": "user", "content": "hi"}]}, 400, "messages[0].content")
    assert_error(port, ch, {"messages": [{"role": "user"}]}, 400, "messages[0].content", "required")
    err = assert_error(port, c, {"prompt": "hello " * 9000, "max_tokens": 4}, 400, "context")
    assert err["code"] == "context_length_exceeded"
    # The official client sees them as BadRequestError.
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model=MODEL_ID, prompt="hi", n=17)
    assert e.value.status_code == 400 and "n" == e.value.body["param"]
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": "hi"}], max_tokens=-1)
    # And the server goes on serving.
    assert client.completions.create(model=MODEL_ID, prompt="Hi", max_tokens=2, temperature=0).usage.total_tokens > 0


def test_unknown_route_is_404(port, client):
    status, _, body = request(port, "GET", "/v1/nothing-here")
    assert status == 404 and "unknown route" in json.loads(body)["error"]["message"]
    status, _, body = request(port, "GET", "/v1/completions")  # wrong method
    assert status == 404 and "error" in json.loads(body)
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model=MODEL_ID, input="hi")


def test_huge_body_is_413_and_the_server_goes_on(port, client):
    limit = 4 << 20
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % (limit + 1) + b"a" * (limit + 1))
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    assert data.startswith(b"HTTP/1.1 413"), data[:200]
    body = data.partition(b"\r\n\r\n")[2]
    assert "exceeds" in json.loads(body)["error"]["message"]
    # A body of exactly the limit is read (and then refused as a bad prompt, not a size).
    status, _, _ = request(port, "POST", "/v1/completions", b" " * (limit - 2) + b"{}")
    assert status == 400
    assert client.completions.create(model=MODEL_ID, prompt="Hi", max_tokens=2, temperature=0).choices


def test_eight_concurrent_streams(client):
    prompts = [f"Tell me about the number {i}." for i in range(8)]
    want = {p: generate(p, "--max-tokens", "20")[0] for p in prompts}

    def stream(p):
        return "".join(c.choices[0].text for c in client.completions.create(
            model=MODEL_ID, prompt=p, max_tokens=20, temperature=0, stream=True) if c.choices)

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        got = dict(zip(prompts, pool.map(stream, prompts)))
    assert got == want


def test_client_that_disconnects_mid_stream_frees_its_cache(cluster, port, client):
    assert all(v == 0 for v in shard_cache_bytes(cluster).values())
    body = json.dumps({"prompt": "1, 2, 3, 4,", "max_tokens": 4000, "temperature": 0, "stream": True,
                       "min_tokens": 4000}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    data = b""
    while data.count(b"data: ") < 5:
        chunk = s.recv(4096)
        assert chunk, data
        data += chunk
    assert data.startswith(b"HTTP/1.1 200")
    assert any(v > 0 for v in shard_cache_bytes(cluster).values())  # the job holds cache now
    s.close()  # gone mid-answer
    deadline = time.time() + 30
    while time.time() < deadline:
        if all(v == 0 for v in shard_cache_bytes(cluster).values()):
            break
        time.sleep(0.3)
    assert all(v == 0 for v in shard_cache_bytes(cluster).values()), shard_cache_bytes(cluster)
    # And the others are served as before.
    assert client.completions.create(model=MODEL_ID, prompt="Hi", max_tokens=2, temperature=0).choices


def test_non_streaming_client_that_leaves_frees_its_cache(cluster, port, client):
    """Fault found by trying it: a client that left a non-streaming request kept its job running to the end."""
    assert all(v == 0 for v in shard_cache_bytes(cluster).values())
    body = json.dumps({"prompt": "1, 2, 3, 4,", "max_tokens": 4000, "temperature": 0,
                       "min_tokens": 4000}).encode()
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    deadline = time.time() + 30
    while time.time() < deadline and not any(v > 0 for v in shard_cache_bytes(cluster).values()):
        time.sleep(0.1)
    assert any(v > 0 for v in shard_cache_bytes(cluster).values())  # the job holds cache now
    time.sleep(0.5)
    s.close()  # gone before the answer
    deadline = time.time() + 15
    while time.time() < deadline and not all(v == 0 for v in shard_cache_bytes(cluster).values()):
        time.sleep(0.2)
    assert all(v == 0 for v in shard_cache_bytes(cluster).values()), shard_cache_bytes(cluster)
    assert client.completions.create(model=MODEL_ID, prompt="Hi", max_tokens=2, temperature=0).choices


def test_two_hundred_idle_connections_do_not_stop_the_api(port, client):
    """Fault found by trying it: 200 connections sending a request head and no body took every
    worker, and a normal request got no answer for >= 20 s."""
    idle = []
    try:
        for _ in range(200):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 100\r\n\r\n")
            idle.append(s)
        time.sleep(0.5)
        t0 = time.time()
        status, _, body = request(port, "GET", "/v1/models", timeout=10)
        assert status == 200 and time.time() - t0 < 3
        t0 = time.time()
        got = client.completions.create(model=MODEL_ID, prompt="Hi", max_tokens=4, temperature=0)
        assert got.choices[0].text and time.time() - t0 < 10
    finally:
        for s in idle:
            s.close()


EMOJI_PROMPT = "Write random emoji and unicode symbols: "


def test_sampled_unicode_answers_are_valid_text_everywhere(client):
    """Fault found by trying it: sampled answers whose bytes never form a character failed with
    HTTP 500 (a Token.text that was not UTF-8 made the whole message undecodable). Such bytes now
    come out as U+FFFD, as Python's and Hugging Face's lossy decoders give them, in `generate`,
    the job stream and HTTP alike."""
    vocab = gguf_token_bytes()
    replaced = 0
    for seed in range(10):
        p = run("generate", "--prompt", EMOJI_PROMPT, "--chat", "--temperature", "1.6", "--seed", seed,
                "--max-tokens", "160", "--threads", THREADS, "--model", DEFAULT_MODEL, "--json")
        assert p.returncode == 0, p.stderr
        lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
        tokens, summary = [l for l in lines if "token" in l], lines[-1]
        want = "".join(t["text"] for t in tokens)
        ids = [t["token"] for t in tokens]
        if summary["finish_reason"] == "eos":
            ids = ids[:-1]  # the eos token itself is not text
        assert want == b"".join(vocab[i] for i in ids).decode("utf-8", "replace"), seed
        replaced += "\ufffd" in want
        got = client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": EMOJI_PROMPT}],
                                             temperature=1.6, seed=seed, max_tokens=160)
        assert got.choices[0].message.content == want, seed
        if seed < 3:
            chunks = client.chat.completions.create(model=MODEL_ID, temperature=1.6, seed=seed, max_tokens=160,
                                                    messages=[{"role": "user", "content": EMOJI_PROMPT}], stream=True)
            assert "".join(c.choices[0].delta.content or "" for c in chunks) == want, seed
    assert replaced >= 1  # the case that failed is exercised: some answer held bytes that never form a character


def test_logprobs_equal_generate_on_chat_and_completions(client):
    """logprobs / top_logprobs as OpenAI returns them, equal to `troupe generate --logprobs`."""
    prompt = "Name three colours."
    p = run("generate", "--prompt", prompt, "--chat", "--max-tokens", "12", "--threads", THREADS, "--model",
            DEFAULT_MODEL, "--json", "--logprobs", "3")
    assert p.returncode == 0, p.stderr
    want = [json.loads(l) for l in p.stdout.splitlines() if '"token"' in l]
    vocab = gguf_token_bytes()
    got = client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": prompt}],
                                         max_tokens=12, temperature=0, logprobs=True, top_logprobs=3)
    content = got.choices[0].logprobs.content
    assert len(content) == len(want) == got.usage.completion_tokens
    for c, w in zip(content, want):
        assert bytes(c.bytes) == vocab[w["token"]]
        assert c.logprob == pytest.approx(w["logprob"], abs=1e-6)
        assert [a.logprob for a in c.top_logprobs] == pytest.approx([a["logprob"] for a in w["top_logprobs"]], abs=1e-6)
        assert [bytes(a.bytes) for a in c.top_logprobs] == [vocab[a["token"]] for a in w["top_logprobs"]]
        assert c.top_logprobs[0].logprob == pytest.approx(c.logprob)  # greedy: the chosen token is the most likely
    # Streamed: one chunk per token, carrying the same logprobs.
    chunks = client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": prompt}],
                                            max_tokens=12, temperature=0, logprobs=True, top_logprobs=3, stream=True)
    streamed = [t for c in chunks if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
    assert [t.logprob for t in streamed] == [t.logprob for t in content]
    # Completions: logprobs = N alternatives, OpenAI's legacy layout.
    text_prompt = "The capital of France is"
    p = run("generate", "--prompt", text_prompt, "--max-tokens", "6", "--threads", THREADS, "--model", DEFAULT_MODEL,
            "--json", "--logprobs", "2")
    want = [json.loads(l) for l in p.stdout.splitlines() if '"token"' in l]
    got = client.completions.create(model=MODEL_ID, prompt=text_prompt, max_tokens=6, temperature=0, logprobs=2)
    lp = got.choices[0].logprobs
    assert lp.token_logprobs == pytest.approx([w["logprob"] for w in want], abs=1e-6)
    assert [len(t) for t in lp.top_logprobs] == [2] * len(want)
    assert "".join(lp.tokens) == got.choices[0].text
    assert lp.text_offset == [sum(len(t) for t in lp.tokens[:i]) for i in range(len(lp.tokens))]
    # Without asking, none.
    assert client.completions.create(model=MODEL_ID, prompt=text_prompt, max_tokens=2,
                                     temperature=0).choices[0].logprobs is None


def test_penalties_bias_and_no_repeat_ngrams_equal_generate(client):
    """OpenAI's presence/frequency penalties and logit_bias, and Hugging Face's no_repeat_ngram_size:
    the cluster over HTTP answers as `troupe generate` with the same settings, and each takes effect."""
    prompt = "1, 2, 3, 1, 2, 3, 1, 2, 3,"
    plain, _ = generate(prompt, "--max-tokens", "16")
    first = json.loads(run("generate", "--prompt", prompt, "--max-tokens", "1", "--threads", THREADS, "--model",
                           DEFAULT_MODEL, "--json").stdout.splitlines()[0])["token"]
    cases = [
        ({"presence_penalty": 1.0, "frequency_penalty": 1.5}, ["--presence-penalty", "1", "--frequency-penalty", "1.5"]),
        ({"logit_bias": {str(first): -100}}, ["--logit-bias", f"{first}=-100"]),
        ({"extra_body": {"no_repeat_ngram_size": 2}}, ["--no-repeat-ngram-size", "2"]),
    ]
    for kw, flags in cases:
        want, _ = generate(prompt, "--max-tokens", "16", *flags)
        got = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=16, temperature=0, **kw)
        assert got.choices[0].text == want, kw
        assert want != plain, kw  # each setting changes this answer
    # The banned first token never appears; no bigram repeats across prompt and answer.
    p = run("generate", "--prompt", prompt, "--max-tokens", "16", "--threads", THREADS, "--model", DEFAULT_MODEL,
            "--json", "--logit-bias", f"{first}=-100")
    assert first not in [json.loads(l)["token"] for l in p.stdout.splitlines() if '"token"' in l]
    ids = json.loads(run("tokenize", "--text", prompt, "--model", DEFAULT_MODEL).stdout)
    p = run("generate", "--prompt", prompt, "--max-tokens", "16", "--threads", THREADS, "--model", DEFAULT_MODEL,
            "--json", "--no-repeat-ngram-size", "2")
    seq = ids + [json.loads(l)["token"] for l in p.stdout.splitlines() if '"token"' in l]
    answer_bigrams = [tuple(seq[i:i + 2]) for i in range(len(ids) - 1, len(seq) - 1)]
    earlier = {tuple(seq[i:i + 2]) for i in range(len(ids) - 1)}
    assert not earlier & set(answer_bigrams) and len(set(answer_bigrams)) == len(answer_bigrams)


def test_metrics_is_prometheus_text(port):
    status, hdrs, body = request(port, "GET", "/metrics")
    assert status == 200 and hdrs["content-type"].startswith("text/plain")
    text = body.decode()
    samples = {}
    try:
        from prometheus_client.parser import text_string_to_metric_families
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                samples[(s.name, s.labels.get("node"))] = s.value
    except ImportError:
        line = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{node="([^"\\]*)"\} (\S+)$')
        for l in text.splitlines():
            if l.startswith("# TYPE "):
                assert re.match(r"^# TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge)$", l), l
                continue
            m = line.match(l)
            assert m, l
            samples[(m.group(1), m.group(2))] = float(m.group(3))
    for node in ("head", "shard-0", "shard-1"):
        assert ("troupe_cache_bytes_in_use", node) in samples, sorted(samples)[:20]
    assert samples[("troupe_route_ready", "head")] == 1
    assert samples[("troupe_cache_budget_bytes", "shard-0")] > 0
    assert any(name.endswith("_total") for name, _ in samples)


def test_health_and_jobs_are_503_when_the_ring_cannot_serve(troupe_bin, model_path):
    import os
    import signal
    c = Cluster(shards=1, extra=("--http-port", "0"))
    try:
        port = c.info["http_port"]
        assert request(port, "GET", "/health")[0] == 200
        shard = [n for n in c.info["nodes"] if n["role"] == "shard"][0]
        os.kill(shard["pid"], signal.SIGKILL)
        deadline = time.time() + 30
        while time.time() < deadline and request(port, "GET", "/health")[0] != 503:
            time.sleep(0.2)
        status, _, body = request(port, "GET", "/health")
        assert status == 503 and json.loads(body)["error"]["code"] == "NO_ROUTE", body
        err = assert_error(port, "/v1/completions", {"prompt": "Hi", "max_tokens": 2}, 503)
        assert err["code"] in ("NO_ROUTE", "UNAVAILABLE"), err
        assert request(port, "GET", "/v1/models")[0] == 200  # the head itself still answers
    finally:
        c.stop()


def test_n_choices_share_one_prefill_and_each_equals_its_own_seed(client, cluster):
    # n = 3 sampled choices: choice i is the job with seed 7 + i, run alone
    # (generate); the later choices copy the first one's prompt cache.
    prompt = "Write three words that describe the sea at night, and explain why each one fits:"
    before = json.loads(run("status", "--endpoint", cluster.endpoint, "--json").stdout)["nodes"]["head"]
    r = client.completions.create(model=MODEL_ID, prompt=prompt, n=3, seed=7, temperature=0.9, max_tokens=16)
    after = json.loads(run("status", "--endpoint", cluster.endpoint, "--json").stdout)["nodes"]["head"]
    assert [c.index for c in r.choices] == [0, 1, 2]
    for i, choice in enumerate(r.choices):
        text, _ = generate(prompt, "--temperature", "0.9", "--seed", str(7 + i), "--max-tokens", "16")
        assert choice.text == text, i
    assert len({c.text for c in r.choices}) > 1, "different seeds, different samples"
    assert r.usage.completion_tokens > 16
    assert after["prompt_tokens_reused_total"] - before["prompt_tokens_reused_total"] >= 2 * 16
    # Streamed: the same choices, each chunk naming its index.
    texts = {}
    for chunk in client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": prompt}],
                                                n=2, seed=3, temperature=0.9, max_tokens=12, stream=True):
        for c in chunk.choices:
            texts[c.index] = texts.get(c.index, "") + (c.delta.content or "")
    whole = client.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": prompt}],
                                           n=2, seed=3, temperature=0.9, max_tokens=12)
    assert texts == {i: c.message.content for i, c in enumerate(whole.choices)}


def test_echo_scores_the_prompt_as_lm_evaluation_harness_asks(port):
    # lm-evaluation-harness's log-likelihood request (local-completions):
    # token ids of context + continuation, echo, logprobs 1, max_tokens 1;
    # it sums token_logprobs[ctxlen:-1] and calls the continuation greedy
    # when each of those tokens is its position's most likely. Reference:
    # `troupe score` in one process.
    text = "The capital of France is Paris, and the capital of Germany is Berlin."
    ref = json.loads(run("score", "--text", text, "--threads", THREADS, "--model", DEFAULT_MODEL).stdout)
    ids = ref["tokens"]
    url = f"http://127.0.0.1:{port}/v1/completions"
    body = {"model": MODEL_ID, "prompt": ids, "temperature": 0, "max_tokens": 1, "logprobs": 1, "seed": 1234,
            "echo": True}
    r = requests.post(url, json=body, timeout=120).json()
    choice = r["choices"][0]
    lp = choice["logprobs"]
    assert len(lp["tokens"]) == len(ids) + 1 and lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    assert lp["token_logprobs"][1:len(ids)] == pytest.approx(ref["logprobs"], abs=1e-5)
    assert choice["text"].startswith(text) and "".join(lp["tokens"]) == choice["text"]
    ctxlen = 6
    assert sum(lp["token_logprobs"][ctxlen:-1]) == pytest.approx(sum(ref["logprobs"][ctxlen - 1:]), abs=1e-4)
    greedy = all(tok == max(top.values()) for tok, top in zip(lp["token_logprobs"][ctxlen:-1],
                                                              lp["top_logprobs"][ctxlen:-1]))
    assert greedy == all(ref["argmax"][i - 1] == ids[i] for i in range(ctxlen, len(ids)))
    # max_tokens 0 returns the prompt only; a text prompt scores the same.
    r0 = requests.post(url, json={**body, "prompt": text, "max_tokens": 0}, timeout=120).json()
    assert r0["choices"][0]["text"] == text and r0["usage"]["completion_tokens"] == 0
    assert r0["choices"][0]["logprobs"]["token_logprobs"][1:] == pytest.approx(ref["logprobs"], abs=1e-5)
    # A prompt longer than one prefill chunk (512 tokens) comes back whole.
    long_text = " ".join(f"Line {i}: the lighthouse keeper counted ships." for i in range(80))
    ref = json.loads(run("score", "--text", long_text, "--threads", THREADS, "--model", DEFAULT_MODEL).stdout)
    assert len(ref["tokens"]) > 600
    r = requests.post(url, json={**body, "prompt": long_text, "max_tokens": 0}, timeout=300).json()
    assert r["choices"][0]["logprobs"]["token_logprobs"][1:] == pytest.approx(ref["logprobs"], abs=1e-5)

"""End-to-end tests of `troupe bridge --from redis://...` (broker/broker_bridge.h):
a real redis-server (started on a free port in a temporary directory, stopped
after), a real `troupe cluster up`, and the real bridge process. redis-py is
the operators' side: it adds job entries to the stream and reads the reply
streams back.

Checked: every job's reply stream holds its answer token for token equal to
`troupe submit`'s for the same flags, then one final record; an entry is
acknowledged only once its final record is published; malformed entries get
a BAD_REQUEST error record and are acknowledged; a bridge SIGKILLed mid-job and
started again finishes the job with every token index and the final record
exactly once (the head's durable queue kept the job running meanwhile: the
restarted bridge's submit under the same job id follows it from token 0, and
`troupe submit --attach` sees the same answer); a dead bridge's jobs are
taken over by live ones, each once.
"""
import json
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

from conftest import TROUPE_BIN
from test_cluster import Cluster

redis = pytest.importorskip("redis", reason="redis-py is a test dependency: scripts/setup.sh --with-test-deps")
REDIS_SERVER = shutil.which("redis-server")
pytestmark = pytest.mark.skipif(REDIS_SERVER is None,
                                reason="redis-server is a test dependency: scripts/setup.sh --with-test-deps")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """redis-server on a free port in a temporary directory, without persistence."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="troupe-test-redis-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.tmp.name,
             "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.client = redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True)
        deadline = time.time() + 20
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise
                time.sleep(0.1)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()


class Bridge:
    """`troupe bridge` reading `stream` as `consumer`; stop() always ends it."""

    def __init__(self, redis_port, endpoint, stream, consumer, *extra):
        self.url = f"redis://127.0.0.1:{redis_port}?stream={stream}&group=troupe&consumer={consumer}"
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(
            [str(TROUPE_BIN), "bridge", "--from", self.url, "--endpoint", endpoint, *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("troupe bridge: consuming"):
            self.stop()
            raise AssertionError(f"troupe bridge did not start: {line!r} {self.stderr()}")

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path):
    c = Cluster(shards=3)
    yield c
    c.stop()


@pytest.fixture(scope="module")
def server():
    s = RedisServer()
    yield s
    s.stop()


@pytest.fixture
def r(server):
    return server.client


# ------------------------------------------------------------------ helpers

def add_job(r, stream, prompt, max_tokens, **sampling):
    """XADDs a job entry (the JobSubmit as JSON); returns its entry id."""
    job = {"prompt": prompt, "sampling": {"max_tokens": max_tokens, **sampling}}
    return r.xadd(stream, {"job": json.dumps(job)})


def submit_tokens(cluster, prompt, max_tokens, **sampling):
    """`troupe submit --json` for the same job: [(token id, text)]."""
    flags = ["--max-tokens", str(max_tokens)]
    for key, value in sampling.items():
        flags += [f"--{key}", str(value)]
    p = subprocess.run([str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--prompt", prompt, "--json",
                        *flags], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return [(l["token"], l["text"]) for l in lines if "token" in l], lines[-1]


def answer_of(tokens):
    """The reply stream's token entries as `troupe submit --json` prints them:
    [(token id, text)] without the end marker (an `eos` token with no text),
    which the stream carries and the CLI leaves out; only the last entry may
    be a stop token."""
    assert all(f["eos"] == "false" for f in tokens[:-1]), "a stop token before the last entry"
    if tokens and tokens[-1]["eos"] == "true" and tokens[-1]["text"] == "":
        tokens = tokens[:-1]
    return [(int(f["token_id"]), f["text"]) for f in tokens]


def reply_of(r, entry_id):
    return [fields for _, fields in r.xrange(f"troupe:reply:{entry_id}")]


def final_of(replies):
    return [f for f in replies if f["type"] in ("finish", "error")]


def wait_until(predicate, timeout, what, on_each=None):
    deadline = time.time() + timeout
    while True:
        if on_each:
            on_each()
        if predicate():
            return
        assert time.time() < deadline, f"timed out after {timeout} s waiting for {what}"
        time.sleep(0.2)


def pending_ids(r, stream):
    return {p["message_id"] for p in r.xpending_range(stream, "troupe", "-", "+", 1000)}


def key(entry_id):
    """A stream entry id as a sortable (ms, seq)."""
    return tuple(int(x) for x in entry_id.split("-"))


def check_acked_only_after_final(r, stream, entry_ids):
    """Every entry the group delivered and no longer holds pending has its final record already."""
    groups = {g["name"]: g for g in r.xinfo_groups(stream)}
    last = groups["troupe"]["last-delivered-id"]
    pending = pending_ids(r, stream)
    for entry in entry_ids:
        if key(entry) <= key(last) and entry not in pending:
            assert final_of(reply_of(r, entry)), f"entry {entry} was acked before its final record"


# ------------------------------------------------------------------ tests

JOBS = [
    ("The capital of France is", 24, {}),
    ("Write a haiku about autumn leaves.", 40, {}),
    ("def fibonacci(n):", 32, {"temperature": 0.8, "seed": 11}),
    ("List three colours of the rainbow:", 16, {}),
    ("Once upon a time, in a small village,", 48, {"temperature": 0.7, "top_k": 40, "seed": 5}),
    ("1, 2, 3, 4,", 20, {}),
]


def test_jobs_get_their_whole_answers(cluster, server, r):
    stream = "t1:jobs"
    ids = [add_job(r, stream, prompt, n, **sampling) for prompt, n, sampling in JOBS]
    bridge = Bridge(server.port, cluster.endpoint, stream, "b1", "--concurrency", "4")
    try:
        wait_until(lambda: all(final_of(reply_of(r, i)) for i in ids), 300, "every final record",
                   on_each=lambda: check_acked_only_after_final(r, stream, ids))
        wait_until(lambda: not pending_ids(r, stream), 30, "the last acks")
    finally:
        assert bridge.stop() == 0, bridge.stderr()
    for entry, (prompt, n, sampling) in zip(ids, JOBS):
        replies = reply_of(r, entry)
        want, summary = submit_tokens(cluster, prompt, n, **{k.replace("_", "-"): v for k, v in sampling.items()})
        tokens = [f for f in replies if f["type"] == "token"]
        assert [int(f["index"]) for f in tokens] == list(range(len(tokens))), entry
        assert answer_of(tokens) == want, prompt
        assert all(f["entry"] == entry for f in replies)
        assert replies[-1]["type"] == "finish" and len(final_of(replies)) == 1, replies[-1]
        finish = json.loads(replies[-1]["finish"])
        assert replies[-1]["reason"] == summary["finish_reason"]
        assert finish["generated_tokens"] == summary["generated_tokens"] == int(replies[-1]["generated_tokens"])
        assert json.loads(tokens[0]["token"])["index"] == 0
    assert r.xpending(stream, "troupe")["pending"] == 0
    # Jobs ran side by side (--concurrency 4): some answers overlap in time.
    spans = [(key(r.xrange(f"troupe:reply:{i}")[0][0]), key(r.xrange(f"troupe:reply:{i}")[-1][0])) for i in ids]
    assert any(a[0] < b[1] and b[0] < a[1] for a in spans for b in spans if a != b), spans


def test_malformed_entries_get_an_error_and_are_acked(cluster, server, r):
    stream = "t2:jobs"
    bad = [
        r.xadd(stream, {"job": "not json"}),
        r.xadd(stream, {"job": json.dumps({"promt": "typo"})}),
        r.xadd(stream, {"prompt": "no job field"}),
        r.xadd(stream, {"job": json.dumps({"prompt": "x", "sampling": {"max_tokens": 4, "top_p": 5}})}),
        r.xadd(stream, {"job": "{}", "reply": ""}),
    ]
    r.set("t2:not-a-stream", "x")
    bad.append(r.xadd(stream, {"job": "{}", "reply": "t2:not-a-stream"}))
    good = add_job(r, stream, "The quick brown fox", 8)
    custom = r.xadd(stream, {"job": json.dumps({"prompt": "Hi", "sampling": {"max_tokens": 2}}),
                             "reply": "t2:answers"})
    bridge = Bridge(server.port, cluster.endpoint, stream, "b2")
    try:
        wait_until(lambda: all(final_of(reply_of(r, i)) for i in bad + [good]) and r.xlen("t2:answers") >= 3,
                   120, "every final record")
        wait_until(lambda: not pending_ids(r, stream), 30, "the acks")
        assert bridge.proc.poll() is None, "the bridge died on a malformed entry"
    finally:
        assert bridge.stop() == 0, bridge.stderr()
    whys = ["not a JobSubmit in JSON", "promt", "unknown field 'prompt'", "top_p", "'reply' is empty",
            "reply stream 't2:not-a-stream' cannot be used: redis XREVRANGE: WRONGTYPE"]
    for entry, why in zip(bad, whys):
        replies = reply_of(r, entry)
        assert len(replies) == 1, replies
        assert replies[0]["type"] == "error" and replies[0]["code"] == "BAD_REQUEST", replies[0]
        assert why in replies[0]["text"], replies[0]
    assert reply_of(r, good)[-1]["type"] == "finish"
    answers = [f for _, f in r.xrange("t2:answers")]
    assert [f["type"] for f in answers] == ["token", "token", "finish"] and answers[0]["entry"] == custom


def test_bridge_killed_mid_job_finishes_it_exactly_once(cluster, server, r):
    stream = "t3:jobs"
    jobs = [("Explain what a CPU does, step by step.", 160, {}),
            ("Tell me a long story about a dragon.", 120, {"temperature": 0.9, "seed": 3})]
    ids = [add_job(r, stream, prompt, n, **sampling) for prompt, n, sampling in jobs]
    bridge = Bridge(server.port, cluster.endpoint, stream, "b3", "--concurrency", "2")
    try:
        wait_until(lambda: all(r.xlen(f"troupe:reply:{i}") >= 5 for i in ids), 120, "the first tokens")
    finally:
        bridge.kill()  # mid-job: tokens published, no final record, nothing acked
    assert not any(final_of(reply_of(r, i)) for i in ids), "the jobs ended before the kill: make them longer"
    assert pending_ids(r, stream) == set(ids)
    published = {i: r.xlen(f"troupe:reply:{i}") for i in ids}

    bridge = Bridge(server.port, cluster.endpoint, stream, "b3", "--concurrency", "2")  # the same consumer
    try:
        wait_until(lambda: all(final_of(reply_of(r, i)) for i in ids), 300, "the final records after the restart")
        wait_until(lambda: not pending_ids(r, stream), 30, "the acks")
    finally:
        assert bridge.stop() == 0, bridge.stderr()
    for entry, (prompt, n, sampling) in zip(ids, jobs):
        replies = reply_of(r, entry)
        tokens = [f for f in replies if f["type"] == "token"]
        assert len(tokens) > published[entry] - 1, "nothing published after the restart"
        assert [int(f["index"]) for f in tokens] == list(range(len(tokens))), "a token index lost or repeated"
        assert len(final_of(replies)) == 1 and replies[-1]["type"] == "finish", replies[-1]
        want, _ = submit_tokens(cluster, prompt, n, **sampling)
        assert answer_of(tokens) == want, prompt


def test_a_dead_bridges_jobs_are_taken_over_once(cluster, server, r):
    """Bridge a dies mid-job; b and c (claim idle 2 s) take its jobs over —
    each job once: a running bridge's heartbeat keeps the other off it."""
    stream = "t4:jobs"
    jobs = [("Explain what a CPU does, step by step.", 150, {}),
            ("Tell me a long story about a dragon.", 130, {"temperature": 0.9, "seed": 4})]
    ids = [add_job(r, stream, prompt, n, **sampling) for prompt, n, sampling in jobs]
    a = Bridge(server.port, cluster.endpoint, stream, "a", "--concurrency", "2")
    try:
        wait_until(lambda: all(r.xlen(f"troupe:reply:{i}") >= 3 for i in ids), 120, "the first tokens",
                   on_each=lambda: a.proc.poll() is None or pytest.fail(f"bridge a died: {a.stderr()}"))
    except AssertionError:
        raise AssertionError(f"bridge a: {a.stderr()} replies: {[r.xlen(f'troupe:reply:{i}') for i in ids]}")
    finally:
        a.kill()
    assert not any(final_of(reply_of(r, i)) for i in ids), "the jobs ended before the kill: make them longer"
    others = [Bridge(server.port, cluster.endpoint, stream, name, "--claim-idle", "2") for name in ("b", "c")]
    try:
        wait_until(lambda: all(final_of(reply_of(r, i)) for i in ids), 300, "the final records after the takeover")
        wait_until(lambda: not pending_ids(r, stream), 30, "the acks")
    finally:
        for b in others:
            assert b.stop() == 0, b.stderr()
    logs = "".join(b.stderr() for b in others)
    assert logs.count("took over pending entry") == len(ids), logs
    for entry, (prompt, n, sampling) in zip(ids, jobs):
        replies = reply_of(r, entry)
        tokens = [f for f in replies if f["type"] == "token"]
        assert [int(f["index"]) for f in tokens] == list(range(len(tokens))), "a token index lost or repeated"
        assert len(final_of(replies)) == 1 and replies[-1]["type"] == "finish", replies[-1]
        want, _ = submit_tokens(cluster, prompt, n, **sampling)
        assert answer_of(tokens) == want, prompt


def test_killed_bridges_job_goes_on_on_the_head_and_is_reattached(cluster, server, r):
    """With the durable queue the head keeps running a job whose bridge died;
    the restarted bridge's resubmission (same job id) is answered with that
    job's stream, never a second run, and the reply stream stays exactly once."""
    stream = "t5:jobs"
    prompt, n = "Explain what a CPU does, step by step.", 140
    entry = add_job(r, stream, prompt, n)
    bridge = Bridge(server.port, cluster.endpoint, stream, "b5")
    try:
        wait_until(lambda: r.xlen(f"troupe:reply:{entry}") >= 3, 120, "the first tokens")
    finally:
        bridge.kill()
    job_id = reply_of(r, entry)[0]["job_id"]
    # The job is the head's now: attach to it from the start, as a client would.
    p = subprocess.run([str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--attach", job_id, "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    attached = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    want, _ = submit_tokens(cluster, prompt, n)
    assert [(l["token"], l["text"]) for l in attached if "token" in l] == want

    bridge = Bridge(server.port, cluster.endpoint, stream, "b5")
    try:
        wait_until(lambda: final_of(reply_of(r, entry)), 120, "the final record after the restart")
        wait_until(lambda: not pending_ids(r, stream), 30, "the ack")
    finally:
        assert bridge.stop() == 0, bridge.stderr()
    replies = reply_of(r, entry)
    tokens = [f for f in replies if f["type"] == "token"]
    assert [int(f["index"]) for f in tokens] == list(range(len(tokens)))
    assert answer_of(tokens) == want
    assert len(final_of(replies)) == 1 and replies[-1]["type"] == "finish"
    assert json.loads(replies[-1]["finish"])["job_id"] == job_id

"""End-to-end tests of the ring across processes: `troupe cluster up` (a head
and shard nodes as separate processes, CURVE links) and `troupe submit`,
checked token for token against the single-process `troupe generate`.

Every cluster runs in a temporary directory on OS-chosen ports and is stopped
(SIGTERM, then SIGKILL of anything left, by the pids in cluster.json) even
when a test fails.
"""
import concurrent.futures
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import DEFAULT_MODEL, ROOT, TROUPE_BIN

sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
from troupe_client import Client  # noqa: E402

PROMPTS = [
    "The capital of France is",
    "Write a haiku about autumn leaves.",
    "def fibonacci(n):",
    "List three colours of the rainbow:",
    "Once upon a time, in a small village,",
    "Explain what a CPU does in one sentence.",
    "The quick brown fox",
    "Translate 'good morning' into Spanish:",
    "1, 2, 3, 4,",
    "What is the boiling point of water?",
]
THREADS = "1"


def _alive(pid):
    """True while `pid` runs (a zombie has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except FileNotFoundError:
        return False


class Cluster:
    """`troupe cluster up` in a temporary directory; stop() always cleans up."""

    def __init__(self, shards=3, extra=(), prepare=None, model=DEFAULT_MODEL):
        """`prepare(dir)` runs before `cluster up` (keys or files to put there first)."""
        self.tmp = tempfile.TemporaryDirectory(prefix="troupe-test-cluster-")
        self.dir = pathlib.Path(self.tmp.name)
        if prepare:
            prepare(self.dir)
        self.log = open(self.dir / "cluster-up.log", "w+")
        self.proc = subprocess.Popen(
            [str(TROUPE_BIN), "cluster", "up", "--shards", str(shards), "--dir", str(self.dir),
             *(() if "--base-port" in extra else ("--base-port", "0")),
             "--threads", THREADS, "--model", str(model), *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.endpoint = None
        try:
            self.endpoint = self.proc.stdout.readline().strip()  # printed once the ring answers
            assert self.endpoint.startswith("tcp://"), f"cluster up failed: {self.stderr()}"
            self.info = json.loads((self.dir / "cluster.json").read_text())
        except BaseException:
            self.stop()
            raise

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def node_pids(self):
        try:
            return [n["pid"] for n in json.loads((self.dir / "cluster.json").read_text())["nodes"]]
        except (FileNotFoundError, ValueError):
            return []

    def stop(self):
        pids = self.node_pids()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in pids:  # whatever is left, never leave it behind
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.log.close()
        self.tmp.cleanup()


@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path):
    c = Cluster(shards=3, extra=("--cache-budget-mb", "32"))
    yield c
    c.stop()


def run(*args, timeout=300):
    return subprocess.run([str(TROUPE_BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def json_lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def generate(prompt, *flags):
    p = run("generate", "--prompt", prompt, "--threads", THREADS, "--model", DEFAULT_MODEL, "--json", *flags)
    assert p.returncode == 0, p.stderr
    return json_lines(p.stdout)


def submit(cluster, prompt, *flags):
    p = run("submit", "--endpoint", cluster.endpoint, "--prompt", prompt, "--json", *flags)
    assert p.returncode == 0, f"submit failed: {p.stderr}"
    return json_lines(p.stdout)


def tokens(lines):
    return [l["token"] for l in lines if "token" in l]


def summary(lines):
    return lines[-1]


def test_cluster_json_names_every_node(cluster):
    info = cluster.info
    roles = [n["role"] for n in info["nodes"]]
    assert roles == ["head", "shard", "shard", "shard"]
    head = info["nodes"][0]
    assert head["job_endpoint"] == cluster.endpoint
    assert "http_port" in head
    assert [n["layers"] for n in info["nodes"][1:]] == [[0, 10], [10, 20], [20, 30]]
    assert info["curve"] is True
    for n in info["nodes"]:
        assert _alive(n["pid"]) and n["endpoints"]["nodes"].startswith("tcp://127.0.0.1:")


def test_greedy_equals_generate(cluster):
    for prompt in PROMPTS:
        want = generate(prompt, "--max-tokens", "32")
        got = submit(cluster, prompt, "--max-tokens", "32")
        assert tokens(got) == tokens(want), prompt
        assert [l["text"] for l in got[:-1]] == [l["text"] for l in want[:-1]], prompt
        for key in ("prompt_tokens", "generated_tokens", "finish_reason"):
            assert summary(got)[key] == summary(want)[key], (prompt, key)
        # The keys only a cluster has follow the documented ones.
        keys = list(summary(got))
        assert keys[:len(summary(want))] == list(summary(want)), keys
        assert keys[len(summary(want)):] == ["queue_seconds", "total_seconds", "replays", "head_peak_rss_mb", "job_id"], keys
        assert summary(got)["job_id"] > 0
        assert summary(got)["replays"] == 0 and summary(got)["head_peak_rss_mb"] > 0
        assert 0 <= summary(got)["queue_seconds"] <= summary(got)["total_seconds"]


def test_seeded_sampling_equals_generate(cluster):
    for i, prompt in enumerate(PROMPTS):
        flags = ("--max-tokens", "32", "--temperature", "0.8", "--seed", str(1000 + i))
        assert tokens(submit(cluster, prompt, *flags)) == tokens(generate(prompt, *flags)), prompt


def test_chat_equals_generate(cluster):
    flags = ("--chat", "--system", "You are terse.", "--max-tokens", "24")
    prompt = "Name a planet."
    assert tokens(submit(cluster, prompt, *flags)) == tokens(generate(prompt, *flags))


def test_sixteen_concurrent_jobs_equal_single_process(cluster):
    jobs = [(f"{PROMPTS[i % len(PROMPTS)]} (variant {i})", 8 + 4 * i) for i in range(16)]
    want = {p: tokens(generate(p, "--max-tokens", str(n))) for p, n in jobs}
    with concurrent.futures.ThreadPoolExecutor(max_workers=16) as pool:
        got = dict(zip([p for p, _ in jobs],
                       pool.map(lambda job: tokens(submit(cluster, job[0], "--max-tokens", str(job[1]))), jobs)))
    mismatched = [p for p, _ in jobs if got[p] != want[p]]
    assert not mismatched, (
        f"{len(mismatched)} of 16 concurrent answers differ from the single process "
        f"(batched rows must be bit-identical to unbatched ones): {mismatched}")


def cache_bytes_in_use(cluster):
    p = run("status", "--endpoint", cluster.endpoint, "--json")
    assert p.returncode == 0, p.stderr
    nodes = json.loads(p.stdout)["nodes"]
    shards = {k: v for k, v in nodes.items() if k.startswith("shard-")}
    assert len(shards) == 3, nodes
    return {k: v["cache_bytes_in_use"] for k, v in shards.items()}


def test_cache_full_fails_only_that_job(cluster):
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        others = [pool.submit(submit, cluster, p, "--max-tokens", "24") for p in PROMPTS[:3]]
        # 8000 positions x 7.5 KiB per position on a 10-layer shard > the 32 MiB budget.
        full = run("submit", "--endpoint", cluster.endpoint, "--prompt", "Tell me everything.",
                   "--max-tokens", "8000", "--json")
        answers = [f.result() for f in others]
    assert full.returncode != 0
    assert "CACHE_FULL" in full.stderr and "budget" in full.stderr, full.stderr
    for prompt, got in zip(PROMPTS[:3], answers):
        assert tokens(got) == tokens(generate(prompt, "--max-tokens", "24")), prompt


def test_cache_memory_back_to_baseline_after_200_jobs(cluster):
    def settled():
        deadline = time.time() + 10
        while True:
            used = cache_bytes_in_use(cluster)
            if all(v == 0 for v in used.values()) or time.time() > deadline:
                return used
            time.sleep(0.1)

    baseline = settled()
    assert all(v == 0 for v in baseline.values()), baseline
    # One SDK connection for the 200 jobs: a `troupe submit` process each would spend most of this test loading
    # libtorch (~1 s a start on 2 vCPUs); the command line's submit is tested above and below.
    with Client.from_cluster(cluster.dir) as client:
        for i in range(200):
            result = client.generate(f"Job number {i}:", max_tokens=1 + i % 4)
            assert 1 <= len(result.tokens) <= 1 + i % 4, (i, result)
    assert settled() == baseline
    # Finished jobs' caches stay parked for prefix reuse, within the budget.
    p = json.loads(run("status", "--endpoint", cluster.endpoint, "--json").stdout)["nodes"]
    for name, v in p.items():
        if name.startswith("shard-"):
            assert v["cache_bytes_parked"] + v["cache_bytes_in_use"] <= v["cache_budget_bytes"], (name, v)


def test_a_client_that_stops_cancels_its_job_and_one_killed_leaves_it_running(cluster):
    def long_job():
        return subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--prompt", "Count:",
                                 "--max-tokens", "3000", "--min-tokens", "3000", "--json", "--job-id", str(job_id)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_freed():
        deadline = time.time() + 10
        while any(v > 0 for v in cache_bytes_in_use(cluster).values()):
            assert time.time() < deadline, "the session of a cancelled job was not closed"
            time.sleep(0.1)

    # Ctrl-C / SIGTERM: the client cancels its job, the cache frees.
    job_id = 7001
    job = long_job()
    assert job.stdout.readline().startswith("{")  # running
    assert any(v > 0 for v in cache_bytes_in_use(cluster).values())
    job.send_signal(signal.SIGINT)
    _, err = job.communicate(timeout=30)
    assert job.returncode == 1 and "CANCELLED" in err, err
    wait_freed()
    status = run("job", "status", "--endpoint", cluster.endpoint, job_id, "--json")
    assert json.loads(status.stdout)["state"] == "aborted", status.stdout
    # Killed outright (or a lost connection): the job goes on, its answer
    # kept for attach; `troupe job cancel` stops it.
    job_id = 7002
    job = long_job()
    assert job.stdout.readline().startswith("{")
    job.kill()
    job.wait()
    time.sleep(1)
    status = json.loads(run("job", "status", "--endpoint", cluster.endpoint, job_id, "--json").stdout)
    assert status["state"] == "running" and status["tokens"] > 1, status
    cancelled = json.loads(run("job", "cancel", "--endpoint", cluster.endpoint, job_id, "--json").stdout)
    assert cancelled["state"] == "aborted" and cancelled["error"]["code"] == "CANCELLED", cancelled
    wait_freed()


def head_counters(cluster):
    p = run("status", "--endpoint", cluster.endpoint, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["nodes"]["head"]


def test_a_job_that_fits_later_waits_for_cache_instead_of_failing(cluster):
    # Each 10-layer shard has a 32 MiB budget (~4,300 positions). A long job
    # reserves 3,000+ of them; a second job of the same size cannot fit
    # beside it, but will once the first is done: it waits its turn (the
    # head tells its client it is queued) and then answers exactly as the
    # single process does. The first job is cancelled once the second waits
    # (its client's Ctrl-C), rather than run for up to 3,000 tokens.
    queued_before = head_counters(cluster)["jobs_queued_total"]
    first = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--prompt", "Count:",
                              "--max-tokens", "3000", "--min-tokens", "200", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = None
    try:
        assert first.stdout.readline().startswith("{")  # holding its cache
        second = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--prompt",
                                   "Say hello in French.", "--json", "--chat", "--max-tokens", "3000"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        told = []
        for line in second.stderr:  # until it is told it waits (or the job ends without being told)
            told.append(line)
            if "waits for KV cache" in line:
                break
        # Told while it waits, with its place in the queue (JobStatus.queue_position).
        assert re.search(r"job \d+ waits for KV cache \(0 queued jobs ahead\)", "".join(told)), "".join(told)
        assert first.poll() is None, "the first job ended before the second was told it waits"
        first.send_signal(signal.SIGINT)  # the first job ends: its cache frees, the second runs
        _, err = first.communicate(timeout=60)
        assert first.returncode == 1 and "CANCELLED" in err, err
        out, err = second.communicate(timeout=300)
        assert second.returncode == 0, f"submit failed: {err}"
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert tokens(json_lines(out)) == tokens(generate("Say hello in French.", "--chat", "--max-tokens", "3000"))
    assert head_counters(cluster)["jobs_queued_total"] == queued_before + 1


def resident_file_pages(pid, path):
    """File offsets (page-aligned) of `path`'s pages mapped into process `pid`.

    Reads /proc/PID/maps for the file's mappings and the "present" bit of each
    page in /proc/PID/pagemap (visible without privileges; PFNs are not)."""
    page = os.sysconf("SC_PAGE_SIZE")
    resident = set()
    target = str(pathlib.Path(path).resolve())
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or fields[5] != target:
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            file_off = int(fields[2], 16)
            pagemap.seek(lo // page * 8)
            entries = pagemap.read((hi - lo) // page * 8)
            for i in range(len(entries) // 8):
                if int.from_bytes(entries[8 * i:8 * i + 8], "little") >> 63:
                    resident.add(file_off + i * page)
    return resident


def thp_setting(name):
    """The selected value of a transparent huge page setting ("[madvise]" -> "madvise"), "" if absent."""
    try:
        m = re.search(r"\[(\w[\w+]*)\]", pathlib.Path(f"/sys/kernel/mm/transparent_hugepage/{name}").read_text())
    except OSError:
        return ""
    return m.group(1) if m else ""


def anon_huge_bytes(pid):
    for line in open(f"/proc/{pid}/smaps_rollup"):
        if line.startswith("AnonHugePages:"):
            return int(line.split()[1]) * 1024
    return 0


def test_shard_touches_only_its_layers(cluster):
    # A shard maps the whole file but must fault in only the header and the
    # tensors of its own layers: no page of another layer's tensors (nor of
    # the embedding or output tensors) may be resident, except within one
    # huge page (2 MiB, the largest folio a file mapping may be faulted in
    # with) of something the shard does read, and the file's last page (part
    # of the model fingerprint). Its own layers it runs from a copy in 2 MB
    # pages (pipeline/model/weight_arena.h), handing the file's pages back,
    # unless the kernel grants no huge pages: then from the mapping.
    import gguf  # the reference GGUF reader, independent of ours

    submit(cluster, "Warm every layer up.", "--max-tokens", "2")
    reader = gguf.GGUFReader(DEFAULT_MODEL)
    size = os.path.getsize(DEFAULT_MODEL)
    slack = 2 * 2**20
    for node in cluster.info["nodes"][1:]:
        lo, hi = node["layers"]

        def own(name):
            return name.startswith("blk.") and lo <= int(name.split(".")[1]) < hi

        owned = [(0, reader.data_offset)] + [(t.data_offset, t.data_offset + t.n_bytes)
                                             for t in reader.tensors if own(t.name)]
        near = [(max(0, a - slack), b + slack) for a, b in owned] + [(size - slack, size)]
        resident = resident_file_pages(node["pid"], DEFAULT_MODEL)
        stray = sorted(p for p in resident if not any(a <= p < b for a, b in near))
        foreign = {t.name for t in reader.tensors for p in stray[:50]
                   if t.data_offset <= p < t.data_offset + t.n_bytes}
        assert not stray, f"{node['id']} (layers {lo}..{hi}) faulted in {len(stray)} pages of {sorted(foreign)}"
        layers = owned[1:]  # the layers' tensors, without the header
        layer_bytes = sum(b - a for a, b in layers)
        resident_layer_bytes = os.sysconf("SC_PAGE_SIZE") * sum(1 for p in resident
                                                                if any(a <= p < b for a, b in layers))
        if thp_setting("enabled") == "never":
            assert resident_layer_bytes > 0.5 * layer_bytes, node["id"]
            continue
        # The norm vectors are read from the mapping, each with the kernel's
        # read-around (64 KiB): ~9 % of the default model's layer bytes.
        assert resident_layer_bytes < 0.25 * layer_bytes, f"{node['id']} kept its layers' file pages"
        if thp_setting("defrag") in ("always", "madvise", "defer+madvise"):  # huge pages on request
            assert anon_huge_bytes(node["pid"]) > 0.9 * layer_bytes, f"{node['id']}: its layers are not in 2 MB pages"


def test_submit_to_dead_endpoint_times_out(troupe_bin):
    p = run("submit", "--endpoint", "tcp://127.0.0.1:1", "--prompt", "hi", "--timeout", "2", timeout=60)
    assert p.returncode != 0
    assert "no answer" in p.stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_killing_cluster_up_leaves_no_process(troupe_bin, model_path, sig):
    c = Cluster(shards=3)
    try:
        pids = c.node_pids()
        assert len(pids) == 4 and all(_alive(p) for p in pids)
        c.proc.send_signal(sig)
        c.proc.wait(timeout=30)
        deadline = time.time() + 15
        while any(_alive(p) for p in pids) and time.time() < deadline:
            time.sleep(0.1)
        assert not [p for p in pids if _alive(p)], f"left behind after {sig.name}"
    finally:
        c.stop()


def test_a_dead_shard_fails_its_jobs_with_a_clear_error(troupe_bin, model_path):
    c = Cluster(shards=3)
    try:
        job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", "Count slowly:",
                                "--max-tokens", "4000", "--min-tokens", "4000", "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = job.stdout.readline()  # the job is running
        assert first.startswith("{"), job.stderr.read()
        shard = c.info["nodes"][2]
        os.kill(shard["pid"], signal.SIGKILL)
        _, err = job.communicate(timeout=30)
        assert job.returncode != 0
        assert "UNAVAILABLE" in err and shard["id"] in err, err
        late = run("submit", "--endpoint", c.endpoint, "--prompt", "Anyone there?", timeout=60)
        assert late.returncode != 0 and "NO_ROUTE" in late.stderr, late.stderr
        assert c.proc.poll() is None, "cluster up must keep running when a shard dies"
    finally:
        c.stop()


def _shard_status(cluster):
    p = run("status", "--endpoint", cluster.endpoint, "--json")
    assert p.returncode == 0, p.stderr
    return {k: v for k, v in json.loads(p.stdout)["nodes"].items() if k.startswith("shard-")}


@pytest.mark.parametrize("victim_layers,sig", [(0, signal.SIGKILL), (1, signal.SIGKILL), (1, signal.SIGSTOP)])
def test_a_dead_shard_loses_no_work_when_a_replica_serves_its_layers(troupe_bin, model_path, victim_layers, sig):
    # Two replicas of each half of the model. Mid-answer, the shard serving
    # the job's first (or second) half is killed with SIGKILL (its sockets
    # close: the head sees it at once) or frozen with SIGSTOP (a hung process
    # or a cut cable: nothing closes, its heartbeats stop for 10 s). The
    # answer goes on over the replica and comes out token for token what the
    # single process computes, with no error and no gap.
    n = 160
    prompt = "Tell me a long story about a lighthouse keeper."
    expected = generate(prompt, "--max-tokens", str(n), "--min-tokens", str(n))
    c = Cluster(shards=2, extra=("--replicas", "2"))
    try:
        job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", prompt,
                                "--max-tokens", str(n), "--min-tokens", str(n), "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = [job.stdout.readline() for _ in range(8)]  # running, then a few tokens
        assert all(l.startswith("{") for l in lines), job.stderr.read()
        busy = [k for k, v in _shard_status(c).items() if v["cache_bytes_in_use"] > 0]
        span = c.info["nodes"][1 + 2 * victim_layers]["layers"]
        victims = [nd for nd in c.info["nodes"][1:] if nd["id"] in busy and nd["layers"] == span]
        assert len(victims) == 1, (busy, span)
        os.kill(victims[0]["pid"], sig)
        out, err = job.communicate(timeout=120)
        if sig == signal.SIGSTOP:
            os.kill(victims[0]["pid"], signal.SIGKILL)
        assert job.returncode == 0, err
        got = json_lines("".join(lines) + out)
        assert tokens(got) == tokens(expected), f"differs after killing {victims[0]['id']}"
        assert got[-1]["done"] and got[-1]["generated_tokens"] == n
        assert got[-1]["replays"] == 1  # the head's Finish record counts the reroute
        status = _shard_status(c)
        assert victims[0]["id"] not in status or status[victims[0]["id"]].get("unreachable")
        head = json.loads(run("status", "--endpoint", c.endpoint, "--json").stdout)["nodes"]["head"]
        assert head["sessions_resumed_total"] == 1, head
        # Nothing is left open anywhere.
        deadline = time.time() + 10
        while any(v["cache_bytes_in_use"] for v in _shard_status(c).values() if "cache_bytes_in_use" in v):
            assert time.time() < deadline, _shard_status(c)
            time.sleep(0.1)
        assert c.proc.poll() is None
    finally:
        c.stop()


def _free_port_range(n):
    import random
    import socket
    for _ in range(50):
        base = random.randint(20000, 60000 - n)
        socks = []
        try:
            for port in range(base, base + n):
                s = socket.socket()
                s.bind(("127.0.0.1", port))
                socks.append(s)
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    pytest.skip("no free port range")


def test_replicas_on_fixed_ports_share_the_work(troupe_bin, model_path):
    base = _free_port_range(2 + 4)
    c = Cluster(shards=2, extra=("--replicas", "2", "--base-port", str(base), "--http-port", str(base + 100)))
    try:
        nodes = c.info["nodes"]
        assert [n["id"] for n in nodes] == ["head", "shard-0", "shard-0-r1", "shard-1", "shard-1-r1"]
        assert nodes[0]["endpoints"]["nodes"] == f"tcp://127.0.0.1:{base}"
        assert c.endpoint == f"tcp://127.0.0.1:{base + 1}"
        assert nodes[0]["http_port"] == base + 100
        assert [n["layers"] for n in nodes[1:]] == [[0, 15], [0, 15], [15, 30], [15, 30]]
        # Routes go by measured speed (scheduling/registry.h): one job at a
        # time takes the faster replica every time; jobs at once spread by load.
        expected = {prompt: tokens(generate(prompt, "--max-tokens", "12")) for prompt in PROMPTS[:4]}
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            got = dict(zip(expected, pool.map(lambda p: tokens(submit(c, p, "--max-tokens", "12")), expected)))
        assert got == expected
        status = json.loads(run("status", "--endpoint", c.endpoint, "--json").stdout)["nodes"]
        for n in nodes[1:]:
            assert status[n["id"]]["sessions_opened_total"] >= 2, status  # the probe + its share of 4 at once
    finally:
        c.stop()


def _non_loopback_ip():
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))  # no packet is sent; picks the outgoing interface
        ip = s.getsockname()[0]
    except OSError:
        return None
    finally:
        s.close()
    return None if ip.startswith("127.") else ip


def test_hand_written_node_configs_with_a_curve_job_endpoint(troupe_bin, model_path, tmp_path):
    """`troupe node --config` with configs written by hand; the job endpoint on
    a non-loopback address is CURVE and `submit` needs --server-key."""
    ip = _non_loopback_ip()
    if ip is None:
        pytest.skip("no non-loopback address")
    keys = {}
    (tmp_path / "keys").mkdir()
    for node in ("head", "shard-a", "client"):
        p = run("keys", "generate", "--out", tmp_path / "keys" / node)
        assert p.returncode == 0, p.stderr
        keys[node] = (tmp_path / "keys" / node / "node.pub").read_text().split("=", 1)[1].strip()
        allow = tmp_path / ("clients" if node == "client" else "allow")  # client keys open no node link
        allow.mkdir(exist_ok=True)
        (allow / f"{node}.pub").write_text((tmp_path / "keys" / node / "node.pub").read_text())
    procs = []

    def start(name, text):
        cfg = tmp_path / f"{name}.yaml"
        cfg.write_text(text)
        log = open(tmp_path / f"{name}.log", "w")
        procs.append(subprocess.Popen([str(TROUPE_BIN), "node", "--config", str(cfg)], stdout=log, stderr=log))
        ready = tmp_path / f"{name}.ready.json"
        deadline = time.time() + 60
        while not ready.exists():
            assert procs[-1].poll() is None, (tmp_path / f"{name}.log").read_text()
            assert time.time() < deadline
            time.sleep(0.05)
        return json.loads(ready.read_text())

    common = f"""model: {DEFAULT_MODEL}
threads: 1
security:
  curve: true
  allowlist: allow
"""
    try:
        head = start("head", f"""id: head
roles: [head]
endpoints:
  listen: tcp://127.0.0.1:0
  jobs: tcp://{ip}:0
{common}  secret_key: keys/head/node.key
  client_allowlist: clients
peers:
  - {{id: shard-a, public_key: "{keys['shard-a']}"}}
ready_file: head.ready.json
""")
        start("shard-a", f"""id: shard-a
roles: [shard]
layers: [0, 30]
endpoints:
  listen: tcp://127.0.0.1:0
{common}  secret_key: keys/shard-a/node.key
head: head
peers:
  - {{id: head, endpoint: "{head['node_endpoint']}", public_key: "{keys['head']}"}}
ready_file: shard-a.ready.json
""")
        ep = head["job_endpoint"]
        assert ep.startswith(f"tcp://{ip}:")
        flags = ("--max-tokens", "12")
        deadline = time.time() + 30
        while True:  # until the shard has announced itself
            p = run("submit", "--endpoint", ep, "--prompt", "Hello there", "--json", "--server-key", keys["head"],
                    "--client-key", tmp_path / "keys" / "client" / "node.key", *flags, timeout=60)
            if p.returncode == 0 or time.time() > deadline or "NO_ROUTE" not in p.stderr:
                break
            time.sleep(0.2)
        assert p.returncode == 0, p.stderr
        assert tokens(json_lines(p.stdout)) == tokens(generate("Hello there", *flags))
        # Without keys the CURVE job endpoint does not talk to us: a clear timeout, not a hang.
        plain = run("submit", "--endpoint", ep, "--prompt", "Hello", "--timeout", "2", timeout=60)
        assert plain.returncode != 0 and "no answer" in plain.stderr
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def test_a_full_queue_answers_busy_and_the_queued_job_still_runs(troupe_bin, model_path):
    # One shard whose budget holds one long job; a queue of one. The second
    # job waits for cache, the third is refused BUSY (429 over HTTP), and
    # both accepted jobs complete.
    c = Cluster(shards=1, extra=("--cache-budget-mb", "10", "--max-queued-jobs", "1"))
    try:
        def long_job():
            return subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", "Count:",
                                     "--max-tokens", "300", "--min-tokens", "300", "--json"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = long_job()
        assert first.stdout.readline().startswith("{")  # running
        second = long_job()
        assert "waits for KV cache" in second.stderr.readline()
        third = run("submit", "--endpoint", c.endpoint, "--prompt", "Count:", "--max-tokens", "300")
        assert third.returncode == 1 and "BUSY: the head's queue is full: 1 jobs wait" in third.stderr, third.stderr
        import requests
        r = requests.post(f"http://127.0.0.1:{c.info['http_port']}/v1/completions",
                          json={"prompt": "Count:", "max_tokens": 300}, timeout=60)
        assert r.status_code == 429 and r.json()["error"]["code"] == "queue_full", r.text
        for job in (first, second):
            out, err = job.communicate(timeout=300)
            assert job.returncode == 0, err
            assert json_lines(out)[-1]["generated_tokens"] == 300
    finally:
        c.stop()

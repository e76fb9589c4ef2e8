"""The admin console's JSON API (issue 11, items 1, 2 and 5) against a real
`troupe cluster up`: /api/v1/cluster, nodes, coverage, jobs, sessions, a
session's per-hop timeline and the metric history; a running job appears,
moves and finishes; its timeline names every hop of its route in ring order
with each stage's own times and the network's share; a SIGSTOPped shard turns
stale within the heartbeat TTL and ok again after SIGCONT; bad requests get
their error; off loopback the views need the admin key."""
import json
import os
import signal
import subprocess
import threading
import time

import pytest
import requests

from test_cluster import DEFAULT_MODEL, TROUPE_BIN, Cluster, json_lines, run

OPS = "sk-ops-0123456789"  # the admin key
ALICE = "sk-alice-0123456789"  # a user key


@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path):
    c = Cluster(shards=3, extra=("--cache-budget-mb", "32", "--http-port", "0"))
    yield c
    c.stop()


@pytest.fixture(scope="module")
def api(cluster):
    base = f"http://127.0.0.1:{cluster.info['http_port']}/api/v1"

    def get(path, status=200, **kw):
        r = requests.get(base + path, timeout=10, **kw)
        assert r.status_code == status, (path, r.status_code, r.text)
        return r.json()
    return get


def _wait(what, check, timeout=30):
    deadline = time.time() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _submit(cluster, *flags):
    return subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--json", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_cluster_nodes_and_coverage_show_every_node_and_layer(api):
    c = api("/cluster")
    assert c["n_layers"] == 30 and c["route_ready"] is True and c["route_problem"] == ""
    assert c["model"] == DEFAULT_MODEL.name and c["version"] and c["nodes"] == 4
    nodes = {n["id"]: n for n in api("/nodes")["nodes"]}
    assert set(nodes) == {"head", "shard-0", "shard-1", "shard-2"}
    assert nodes["head"]["role"] == "head" and "sampler" in nodes["head"]["stages"]
    for i in range(3):
        n = _wait(f"shard-{i}'s first heartbeat details",
                  lambda: (lambda n: n if n["rss_bytes"] > 0 else None)(
                      {x["id"]: x for x in api("/nodes")["nodes"]}[f"shard-{i}"]))
        assert n["role"] == "shard" and n["layers"] == [10 * i, 10 * i + 10]
        assert n["state"] == "ok" and n["detail"] == ""
        assert n["cache_budget_bytes"] == 32 << 20
        assert n["version"] == c["version"] and n["device"]
        assert 0 <= n["last_heartbeat_ms"] < 10_000
    cov = api("/coverage")
    assert cov["n_layers"] == 30 and cov["replicas"] == [1] * 30
    assert sorted((s["node"], s["begin"], s["end"]) for s in cov["spans"]) == [
        ("shard-0", 0, 10), ("shard-1", 10, 20), ("shard-2", 20, 30)]


def test_a_running_job_shows_its_progress_route_and_per_hop_timeline(cluster, api):
    proc = _submit(cluster, "--chat", "--prompt", "Tell me a long story about a lighthouse keeper.",
                   "--max-tokens", "160", "--min-tokens", "160")
    try:
        job = _wait("the job to run", lambda: next((j for j in api("/jobs")["jobs"] if j["state"] == "running"), None))
        assert job["route"] == ["head", "shard-0", "shard-1", "shard-2", "head"], job
        assert job["max_tokens"] == 160 and isinstance(job["job_id"], str) and isinstance(job["session_id"], str)
        first = job["tokens"]
        later = _wait("its tokens to move", lambda: next(
            (j for j in api("/jobs")["jobs"] if j["job_id"] == job["job_id"] and j["tokens"] > first + 5), None))
        assert later["state"] == "running"
        sessions = api("/sessions")["sessions"]
        assert [s["session_id"] for s in sessions] == [job["session_id"]]
        assert sessions[0]["prompt_tokens"] > 0
        timeline = api(f"/sessions/{job['session_id']}/timeline")
        assert timeline["job_id"] == job["job_id"]
        steps = timeline["steps"]
        assert steps and len(steps) <= 64
        decode = [s for s in steps if s["tokens"] == 1 and s["index"] > 0]
        assert decode, steps
        for s in decode:
            hops = [(h["node"], h["stage"]) for h in s["hops"]]
            assert hops == [("head", "embedding"), ("shard-0", "shard"), ("shard-1", "shard"), ("shard-2", "shard"),
                            ("head", "lm_head"), ("head", "sampler")], hops
            own = sum(h["queue_ms"] + h["compute_ms"] + h["send_ms"] for h in s["hops"])
            assert all(h["compute_ms"] > 0 for h in s["hops"] if h["stage"] == "shard"), s
            assert s["total_ms"] > 0 and s["network_ms"] >= 0
            assert abs(s["total_ms"] - own - s["network_ms"]) < 0.01 or s["network_ms"] == 0
        assert [s["index"] for s in decode] == sorted(s["index"] for s in decode)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        done = json_lines(out)[-1]
        ended = _wait("the job to end", lambda: next(
            (j for j in api("/jobs")["jobs"] if j["job_id"] == job["job_id"] and j["state"] == "completed"), None))
        assert ended["tokens"] == done["generated_tokens"] == 160
        assert api("/sessions")["sessions"] == []
        # The ended session's timeline stays to look at.
        assert api(f"/sessions/{job['session_id']}/timeline")["steps"]
        history = api("/metrics/history?seconds=120")
        assert history["interval_s"] == 1
        tps = [v for _, v in history["series"]["tokens_per_s"]]
        assert max(tps) > 5, tps
        assert {"queue_depth", "cache_bytes", "sessions", "errors_per_s"} <= set(history["series"])
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_stopped_shard_turns_stale_and_comes_back(cluster, api):
    pid = next(n["pid"] for n in cluster.info["nodes"] if n["id"] == "shard-1")
    state = lambda: {n["id"]: n for n in api("/nodes")["nodes"]}["shard-1"]
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.time()
        stale = _wait("shard-1 to turn stale", lambda: (lambda n: n if n["state"] == "stale" else None)(state()),
                      timeout=20)
        assert time.time() - started < 8  # three missed heartbeats, well within the registry's 10 s TTL
        assert "no heartbeat" in stale["detail"]
        assert api("/coverage")["replicas"][10:20] == [0] * 10  # no usable replica left: a gap
        _wait("the head to give up routing through it (TTL)", lambda: api("/cluster")["route_ready"] is False,
              timeout=15)
    finally:
        os.kill(pid, signal.SIGCONT)
    _wait("shard-1 to be ok again", lambda: state()["state"] == "ok", timeout=20)
    _wait("the route to be back", lambda: api("/cluster")["route_ready"], timeout=20)


def test_bad_requests_get_their_error(api):
    e = api("/sessions/12345/timeline", status=404)["error"]
    assert "no timeline of session 12345" in e["message"]
    assert "seconds" in api("/metrics/history?seconds=abc", status=400)["error"]["message"]
    assert api("/nope", status=404)["error"]["code"] == "not_found"
    assert api("/sessions/99999999999999999999999/timeline", status=400)["error"]["code"] == "invalid_session_id"


def test_off_loopback_the_views_need_the_admin_key(troupe_bin, model_path, tmp_path):
    (tmp_path / "keys.txt").write_text(f"alice {ALICE}\n")
    (tmp_path / "admin.txt").write_text(f"ops {OPS}\n")
    c = Cluster(shards=1, extra=("--http-port", "0", "--http-host", "0.0.0.0", "--api-key-file",
                                 tmp_path / "keys.txt", "--admin-key-file", tmp_path / "admin.txt"))
    try:
        base = f"http://127.0.0.1:{c.info['http_port']}"
        assert requests.get(base + "/api/v1/nodes", timeout=10).status_code == 401
        user = requests.get(base + "/api/v1/nodes", headers={"Authorization": f"Bearer {ALICE}"}, timeout=10)
        assert user.status_code == 403 and user.json()["error"]["code"] == "admin_key_required"
        ok = requests.get(base + "/api/v1/nodes", headers={"Authorization": f"Bearer {OPS}"}, timeout=10)
        assert ok.status_code == 200 and {n["id"] for n in ok.json()["nodes"]} == {"head", "shard-0"}
        page = requests.get(base + "/", timeout=10)  # the page itself holds no data
        assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
        assert requests.get(base + "/console.js", timeout=10).status_code == 200
        # The key is never logged.
        logs = c.stderr() + "".join(p.read_text() for p in (c.dir / "logs").glob("*.log"))
        assert OPS not in logs and ALICE not in logs
    finally:
        c.stop()

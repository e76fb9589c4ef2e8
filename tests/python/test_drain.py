"""Drain (issue 10, item 4): a shard leaves without losing work. `troupe
admin drain NODE` (the job endpoint), POST /admin/nodes/NODE/drain (the
admin key) and SIGTERM on the shard itself all do the same: no new session
goes to it, its running jobs move to a replica by replay — token for token
the single process's answer — or, without a replica, finish where they are
(bounded, and said), then the node leaves and `troupe status` no longer
shows it; started again, it rejoins.
"""
import json
import os
import signal
import subprocess
import time

import pytest
import requests

from test_cluster import TROUPE_BIN, Cluster, generate, json_lines, run, tokens
from test_join import _status, _wait

# Long enough that four jobs are still running when the drain comes (the
# kernels decode ~280 tok/s; at 160 tokens the jobs were over before it).
N = 480
PROMPTS = ["Tell me a long story about a lighthouse keeper.", "Describe a walk through an old forest.",
           "Write about a city that never sleeps.", "Explain how a steam engine works, step by step."]


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def _start_jobs(c, prompts):
    jobs = []
    for p in prompts:
        job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", p, "--max-tokens",
                                str(N), "--min-tokens", str(N), "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        jobs.append((job, [job.stdout.readline() for _ in range(4)]))  # accepted, then tokens flowing
    return jobs


def _finish(jobs, expected):
    replays = 0
    for (job, lines), want in zip(jobs, expected):
        out, err = job.communicate(timeout=300)
        assert job.returncode == 0, err
        got = json_lines("".join(lines) + out)
        split = next((i for i, (a, b) in enumerate(zip(tokens(got), want)) if a != b), None)
        assert tokens(got) == want, (f"differs at token {split} of {len(tokens(got))} (expected {len(want)}), "
                                     f"replays {got[-1].get('replays')}:\n{tokens(got)}\n{want}")
        replays += got[-1]["replays"]
    return replays


def _busiest(c, span):
    """The shard of `span` holding the most sessions now, as its cluster.json entry."""
    status = _status(c)
    nodes = [n for n in c.info["nodes"][1:] if n["layers"] == span]
    return max(nodes, key=lambda n: status.get(n["id"], {}).get("sessions_open", 0))


def _expected(prompts):
    return [tokens(generate(p, "--max-tokens", str(N), "--min-tokens", str(N))) for p in prompts]


def _log(c, node_id):
    return (c.dir / "logs" / f"{node_id}.log").read_text()


def test_admin_drain_moves_four_running_jobs_to_replicas_and_the_node_leaves(troupe_bin, model_path):
    expected = _expected(PROMPTS)
    c = Cluster(shards=2, extra=("--replicas", "2", "--cache-budget-mb", "64"))
    try:
        jobs = _start_jobs(c, PROMPTS)
        victim = _busiest(c, [15, 30])
        assert _status(c)[victim["id"]]["sessions_open"] > 0
        p = run("admin", "drain", "--endpoint", c.endpoint, victim["id"], "--json")
        assert p.returncode == 0, p.stderr
        drained = json.loads(p.stdout)
        print(f"\n{drained['text']}")
        assert drained["node"] == victim["id"] and drained["moved"] >= 1 and drained["staying"] == 0
        assert _finish(jobs, expected) == drained["moved"]  # each moved job replayed once, none lost
        _wait("the drained node to leave", lambda: not _alive(victim["pid"]), timeout=30)
        assert "drained: no session left; leaving" in _log(c, victim["id"])
        _wait("status to forget it", lambda: victim["id"] not in _status(c), timeout=30)
        # The cluster goes on over the replicas.
        p = run("submit", "--endpoint", c.endpoint, "--prompt", PROMPTS[0], "--max-tokens", str(N), "--min-tokens",
                str(N), "--json")
        assert p.returncode == 0, p.stderr
        assert tokens(json_lines(p.stdout)) == expected[0]
        # Refusals name what is wrong.
        p = run("admin", "drain", "--endpoint", c.endpoint, "nobody")
        assert p.returncode != 0 and "no shard node 'nobody'" in p.stderr, p.stderr
        p = run("admin", "drain", "--endpoint", c.endpoint, "head")
        assert p.returncode != 0 and "the head is not drained" in p.stderr, p.stderr
    finally:
        c.stop()


def test_sigterm_drains_a_shard_and_started_again_it_rejoins(troupe_bin, model_path):
    expected = _expected(PROMPTS[:2])
    c = Cluster(shards=2, extra=("--replicas", "2", "--cache-budget-mb", "64"))
    try:
        jobs = _start_jobs(c, PROMPTS[:2])
        victim = _busiest(c, [0, 15])
        os.kill(victim["pid"], signal.SIGTERM)
        assert _finish(jobs, expected) >= 1
        _wait("the node to leave", lambda: not _alive(victim["pid"]), timeout=30)
        log = _log(c, victim["id"])
        assert "SIGTERM: draining" in log and "drained: no session left; leaving" in log, log
        assert "is draining: " in (c.dir / "logs" / "head.log").read_text()
        _wait("status to forget it", lambda: victim["id"] not in _status(c), timeout=30)
        # Started again (same id, key and layers), it rejoins and serves.
        back = subprocess.Popen(
            [str(TROUPE_BIN), "node", "--join", c.info["nodes"][0]["endpoints"]["nodes"], "--id", victim["id"],
             "--layers", "0:15", "--secret-key", str(c.dir / "keys" / victim["id"] / "node.key"),
             "--allowlist", str(c.dir / "keys" / "allowlist"), "--head-key", str(c.dir / "keys" / "head" / "node.pub"),
             "--threads", "1", "--cache-budget-mb", "64"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait("it to rejoin", lambda: _status(c).get(victim["id"], {}).get("draining") == 0, timeout=60)
            for _ in range(3):  # replicas take turns: the new one serves too
                p = run("submit", "--endpoint", c.endpoint, "--prompt", PROMPTS[0], "--max-tokens", "8", "--json")
                assert p.returncode == 0, p.stderr
            assert _status(c)[victim["id"]]["steps_total"] > 0
        finally:
            back.send_signal(signal.SIGINT)
            back.wait(timeout=20)
    finally:
        c.stop()


def test_without_a_replica_a_drain_waits_for_the_running_job_and_new_jobs_hear_why(troupe_bin, model_path):
    [expected] = _expected(PROMPTS[:1])
    c = Cluster(shards=2, extra=("--cache-budget-mb", "64"))
    try:
        [(job, lines)] = _start_jobs(c, PROMPTS[:1])
        victim = c.info["nodes"][2]
        os.kill(victim["pid"], signal.SIGTERM)
        _wait("the head to hear of the drain", lambda: _status(c)[victim["id"]].get("draining") == 1, timeout=10)
        p = run("submit", "--endpoint", c.endpoint, "--prompt", "Hello", "--max-tokens", "4")
        assert p.returncode != 0 and "NO_ROUTE" in p.stderr and "is draining" in p.stderr, p.stderr
        assert _alive(victim["pid"])  # still serving the running job
        out, err = job.communicate(timeout=300)
        assert job.returncode == 0, err
        got = json_lines("".join(lines) + out)
        assert tokens(got) == expected and got[-1]["replays"] == 0
        _wait("the node to leave", lambda: not _alive(victim["pid"]), timeout=30)
        log = _log(c, victim["id"])
        assert "draining: 1 session(s) still running (waiting up to 120 s)" in log, log
        assert "finishing on it (no other node serves its layers now)" in (c.dir / "logs" / "head.log").read_text()
    finally:
        c.stop()


def test_the_http_admin_route_drains_with_the_admin_key_only(troupe_bin, model_path, tmp_path):
    (tmp_path / "admin.txt").write_text("ops sk-ops-0123456789\n")
    c = Cluster(shards=1, extra=("--replicas", "2", "--http-port", "0", "--admin-key-file", tmp_path / "admin.txt"))
    try:
        url = f"http://127.0.0.1:{c.info['http_port']}/admin/nodes/shard-0-r1/drain"
        ids = [n["id"] for n in c.info["nodes"]]
        assert "shard-0-r1" in ids, ids
        r = requests.post(url, timeout=30)
        assert r.status_code in (401, 403), r.text
        r = requests.post(url, headers={"Authorization": "Bearer sk-ops-0123456789"}, json={"timeout_seconds": 30},
                          timeout=30)
        assert r.status_code == 200, r.text
        assert r.json()["node"] == "shard-0-r1" and r.json()["moved"] == 0
        pid = next(n["pid"] for n in c.info["nodes"] if n["id"] == "shard-0-r1")
        _wait("it to leave", lambda: not _alive(pid), timeout=30)
        r = requests.post(url.replace("shard-0-r1", "nobody"), headers={"Authorization": "Bearer sk-ops-0123456789"},
                          timeout=30)
        assert r.status_code == 400 and "no shard node 'nobody'" in r.text, r.text
    finally:
        c.stop()

"""Bursts (scheduling/burst_gate.h): the steps one batch sends on stay one
batch at the next stage. K sessions released together decode in batches of
about K at every shard and at the LM head — not in fragments that each read
every weight again — each batch's steps travel to the next node as one
StepBurst message, and their sampled answers equal the same jobs run alone.

Real processes: `troupe cluster up` (head + 2 shards, CURVE links), jobs from
the Python SDK, batch sizes from the nodes' own counters (`troupe status`).
"""
import json
import pathlib
import subprocess
import sys
import threading
import time

from conftest import ROOT
from test_cluster import TROUPE_BIN, Cluster, run
from test_metrics import _scrape

sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
from troupe_client import Client  # noqa: E402

# 16: a batch of all of them takes the lane kernels for every quantized
# matrix (11 to 16 rows, kernels_avx512_lanes.cpp); one of fewer rows, the
# pair kernels (kernels_avx512_pairs.cpp).
SESSIONS = 16
TOKENS = 40
PROMPTS = [f"Tell me a short story about a lighthouse keeper (take {i})" for i in range(SESSIONS)]


def _counters(cluster):
    p = run("status", "--endpoint", cluster.endpoint, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["nodes"]


def _jobs_together(cluster_dir, seeds):
    """Every job from its own client thread, released at once."""
    clients = [Client.from_cluster(cluster_dir) for _ in PROMPTS]
    start = threading.Barrier(len(PROMPTS))
    results = [None] * len(PROMPTS)

    def one(i):
        start.wait()
        results[i] = clients[i].generate(PROMPTS[i], max_tokens=TOKENS, min_tokens=TOKENS, temperature=0.9,
                                         top_p=0.95, seed=seeds[i])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(PROMPTS))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    finally:
        for c in clients:
            c.close()
    assert all(r is not None for r in results), "a job did not finish"
    return [list(r.tokens) for r in results]


def test_concurrent_sessions_decode_as_one_batch_and_answer_as_alone():
    # A long wait bound: the mechanism, not this machine's load, is under test.
    c = Cluster(shards=2, extra=("--burst-wait-ms", "50"))
    try:
        seeds = [11 * (i + 1) for i in range(SESSIONS)]
        before = _counters(c)
        together = _jobs_together(c.dir, seeds)
        after = _counters(c)
        for node in ("shard-0", "shard-1", "head"):
            rows = after[node]["batch_rows_total"] - before[node]["batch_rows_total"]
            batches = after[node]["batches_total"] - before[node]["batches_total"]
            # 16 x 40 decode steps (and 16 prefills, which may run alone): in
            # bursts of 16 that is ~60 batches; alone or in pairs, 320 or more.
            assert rows / batches >= 3.0, (
                f"{node}: {rows} rows in {batches} batches — the sessions did not stay one batch")
            # Each batch of two or more sessions goes on as one StepBurst
            # message (the head's: its embedding's, to shard-0).
            bursts = after[node]["step_bursts_sent_total"] - before[node]["step_bursts_sent_total"]
            assert bursts >= batches / 2, f"{node}: {bursts} StepBurst messages for {batches} batches"
        with Client.from_cluster(c.dir) as client:
            alone = [list(client.generate(PROMPTS[i], max_tokens=TOKENS, min_tokens=TOKENS, temperature=0.9,
                                          top_p=0.95, seed=seeds[i]).tokens) for i in range(SESSIONS)]
        assert together == alone, "answers decoded in one batch differ from the same jobs alone"
    finally:
        c.stop()


def _queues_over(families, node, stage, ms):
    """Steps of `stage` on `node` whose queue wait (arrival to compute) passed `ms`."""
    count, under = None, None
    for s in families["troupe_step_queue_ms"].samples:
        if s.labels.get("node") != node or s.labels.get("stage") != stage:
            continue
        if s.name.endswith("_count"):
            count = s.value
        elif s.name.endswith("_bucket") and s.labels["le"] != "+Inf" and float(s.labels["le"]) == ms:
            under = s.value
    assert count and under is not None, (node, stage)
    return count - under


def test_a_session_ending_inside_a_burst_leaves_no_one_waiting():
    """Jobs of different lengths: each end shrinks the burst (the sampler
    counts only the steps that go on), so no stage waits out burst_wait_ms
    (1 s here) for a member that will never come: no step of any stage
    queues 500 ms or more."""
    c = Cluster(shards=2, extra=("--burst-wait-ms", "1000", "--node-metrics", "--http-port", "0"))
    try:
        clients = [Client.from_cluster(c.dir) for _ in PROMPTS]
        start = threading.Barrier(len(PROMPTS))
        results = [None] * len(PROMPTS)

        def one(i):
            start.wait()
            results[i] = clients[i].generate(PROMPTS[i], max_tokens=8 + 8 * i, min_tokens=8 + 8 * i, seed=i)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(len(PROMPTS))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        for cl in clients:
            cl.close()
        assert all(r is not None for r in results), "a job hung behind a burst that lost a member"
        assert [len(r.tokens) for r in results] == [8 + 8 * i for i in range(SESSIONS)]
        for n in c.info["nodes"]:
            if n["role"] == "shard":
                assert _queues_over(_scrape(n["metrics_url"]), n["id"], "shard", 500) == 0, n["id"]
        head = _scrape(f"http://127.0.0.1:{c.info['http_port']}/metrics")
        assert _queues_over(head, "head", "lm_head", 500) == 0
    finally:
        c.stop()


def test_sessions_started_apart_merge_into_one_batch():
    """Jobs that reach the head a quarter second apart start as groups of one,
    a stage apart; the sampler holds each group's next steps for the others
    due back to the same first shard (scheduling/burst_joiner.h), and they
    merge into one batch. With 1 ms they stayed apart (2.2 rows a batch in a
    run here). `cluster up` writes 10 ms, not a node's 1 ms: its nodes share
    this machine's cores, so groups apart only take turns."""
    c = Cluster(shards=2, extra=("--burst-wait-ms", "50"))  # a long bound, as above
    try:
        before = _counters(c)
        jobs = []
        for p in PROMPTS[:4]:  # four groups of one
            jobs.append(subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", p,
                                          "--max-tokens", "160", "--min-tokens", "160"],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            time.sleep(0.25)
        for job in jobs:
            _, err = job.communicate(timeout=300)
            assert job.returncode == 0, err
        after = _counters(c)
        for node in ("shard-0", "shard-1"):
            rows = after[node]["batch_rows_total"] - before[node]["batch_rows_total"]
            batches = after[node]["batches_total"] - before[node]["batches_total"]
            # 692 rows: merged, ~190 batches (3.7 rows each); apart, ~320 (2.2).
            assert rows / batches >= 3.0, f"{node}: {rows} rows in {batches} batches — the groups did not merge"
    finally:
        c.stop()


def test_cluster_up_writes_its_own_burst_wait():
    c = Cluster(shards=1)
    try:
        for name in ("head.yaml", "shard-0.yaml"):
            assert "burst_wait_ms: 10\n" in (c.dir / name).read_text(), name
    finally:
        c.stop()

"""Metrics and logs (issue 11, item 4) against a real `troupe cluster up
--node-metrics`: the head's /metrics (the whole cluster) and every shard's
own /metrics parse with prometheus_client's parser; per-stage step latency
histograms and batch sizes are there with their stage labels, counters move
as jobs run; every node logs one JSON object per line and a job's end is a
line that carries its job and session ids."""
import json

import pytest
import requests

from test_cluster import Cluster, json_lines, run

parser = pytest.importorskip("prometheus_client.parser")


def _families(text):
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def _value(families, name, **labels):
    """The sample `name` (a counter's without its _total; a histogram's _bucket, _sum or _count) with `labels`."""
    for family in families.values():
        for s in family.samples:
            if s.name in (name, name + "_total") and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    raise KeyError((name, labels))


@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path):
    c = Cluster(shards=3, extra=("--cache-budget-mb", "32", "--http-port", "0", "--node-metrics"))
    yield c
    c.stop()


def _scrape(url):
    r = requests.get(url, timeout=10)
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain"), r.text
    return _families(r.text)


def test_every_node_serves_metrics_that_parse_and_move(cluster):
    head_url = f"http://127.0.0.1:{cluster.info['http_port']}/metrics"
    shards = [n for n in cluster.info["nodes"] if n["role"] == "shard"]
    assert len(shards) == 3 and all(n.get("metrics_url") for n in shards), cluster.info["nodes"]
    before = {n["id"]: _scrape(n["metrics_url"]) for n in shards}
    head_before = _scrape(head_url)
    p = run("submit", "--endpoint", cluster.endpoint, "--chat", "--prompt", "Name three rivers.", "--max-tokens", "24",
            "--json")
    assert p.returncode == 0, p.stderr
    generated = json_lines(p.stdout)[-1]["generated_tokens"]
    for n in shards:
        after = _scrape(n["metrics_url"])
        node = n["id"]
        # Counters move by the job's steps (prefill + one per generated token after the first).
        moved = _value(after, "troupe_steps", node=node) - _value(before[node], "troupe_steps", node=node)
        assert moved >= generated, (node, moved, generated)
        # Histograms of the shard stage: queue wait, compute, batch sizes, cumulative buckets to +Inf.
        for name in ("troupe_step_compute_ms", "troupe_step_queue_ms", "troupe_batch_sessions"):
            fam = after[name]
            assert fam.type == "histogram", (name, fam.type)
            count = _value(after, name + "_count", node=node, stage="shard")
            assert count >= moved if name != "troupe_batch_sessions" else count > 0
            inf = _value(after, name + "_bucket", node=node, stage="shard", le="+Inf")
            assert inf == count
        assert _value(after, "troupe_step_compute_ms_sum", node=node, stage="shard") > 0
        assert _value(after, "troupe_cache_budget_bytes", node=node) == 32 << 20
        assert _value(after, "troupe_burst_wait_ms", node=node) == 10  # what `cluster up` writes
        assert "troupe_step_bytes_sent" in after  # bytes on the wire per link (to=...)
    head = _scrape(head_url)
    # The head's /metrics is the whole cluster's: every node, and the head's own stages.
    for n in shards:
        assert _value(head, "troupe_steps", node=n["id"]) > 0
    assert (_value(head, "troupe_tokens_generated", node="head")
            - _value(head_before, "troupe_tokens_generated", node="head")) == generated
    for stage in ("embedding", "lm_head", "sampler"):
        assert _value(head, "troupe_step_compute_ms_count", node="head", stage=stage) > 0, stage
    assert _value(head, "troupe_queue_depth", node="head") == 0
    for name in ("troupe_reroutes", "troupe_drains", "troupe_jobs_accepted"):
        assert name in head, name


def test_logs_are_json_lines_and_each_job_has_one_with_its_ids(cluster):
    p = run("submit", "--endpoint", cluster.endpoint, "--prompt", "Hello", "--max-tokens", "4", "--json")
    assert p.returncode == 0, p.stderr
    job_id = str(json_lines(p.stdout)[-1]["job_id"])
    for n in cluster.info["nodes"]:
        lines = [l for l in open(n["log"]).read().splitlines() if l.strip()]
        assert lines, n["id"]
        for line in lines:
            entry = json.loads(line)  # every line is one JSON object
            assert entry["node"] == n["id"] and entry["level"] in ("debug", "info", "warn", "error"), entry
            assert entry["time"].endswith("Z") and entry["msg"], entry
    head_log = next(n["log"] for n in cluster.info["nodes"] if n["id"] == "head")
    ends = [json.loads(l) for l in open(head_log).read().splitlines() if l.strip()]
    ends = [e for e in ends if e.get("job_id") == job_id]
    assert ends, f"no log line of job {job_id}"
    assert any("completed" in e["msg"] and e.get("session_id") for e in ends), ends

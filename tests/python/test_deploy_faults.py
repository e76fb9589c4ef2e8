"""Faults found by deploying across machines as a new operator would (issue
10, item 6), each with hand-written node configs and real processes:

* a head named at one address in its shards' `peers` and advertised at
  another (a second IP, a DNS name, NAT: here a delaying relay standing in
  for the NAT address, and a head listening on 0.0.0.0) — the shards once
  tore their link to the head down on every heartbeat and step, and went
  deaf for good after a few jobs;
* refusals that were silent: a key missing from the head's allowlist, the
  head's key missing from a shard's, a shard's missing from another shard's
  (shard to shard), a wrong head key, a node with another model. Each is now logged where it happens (with node,
  key and address), counted in `troupe status`, named by /health (503 with
  the reason) and by a job's error — at once, not after a 120 s timeout.
"""
import time

import yaml

from delay_relay import DelayRelay
from conftest import DEFAULT_MODEL
from hand_cluster import HandCluster, free_port, health, status, troupe, wait_for
from make_cut_model import write_cut_model
from test_cluster import generate, json_lines, tokens

SPANS = [(0, 15), (15, 30)]


def _head(c, port, http=True, **extra):
    cfg = {
        "roles": ["head"],
        "endpoints": {"listen": f"tcp://0.0.0.0:{port}", "advertise": f"tcp://127.0.0.1:{port}",
                      "jobs": "tcp://127.0.0.1:0", **({"http": "127.0.0.1:0"} if http else {})},
        "security": {"curve": True, "secret_key": "keys/head/node.key", "allowlist": "keys/allowlist"},
        "peers": [{"id": f"shard-{i}", "public_key": c.public_key(f"shard-{i}")} for i in range(len(SPANS))],
    }
    cfg.update(extra)
    return c.write("head", cfg)


def _shard(c, i, head_endpoint, allowlist="keys/allowlist", head_key=None):
    others = [{"id": f"shard-{j}", "public_key": c.public_key(f"shard-{j}")} for j in range(len(SPANS)) if j != i]
    return c.write(f"shard-{i}", {
        "roles": ["shard"], "layers": list(SPANS[i]), "cache_budget_mb": 32,
        "endpoints": {"listen": "tcp://127.0.0.1:0"},
        "security": {"curve": True, "secret_key": f"keys/shard-{i}/node.key", "allowlist": allowlist},
        "head": "head",
        "peers": [{"id": "head", "endpoint": head_endpoint, "public_key": head_key or c.public_key("head")}, *others],
    })


def _up(c):
    """Starts every node; the head's ready file (job endpoint, HTTP port)."""
    c.start("head", *[f"shard-{i}" for i in range(len(SPANS))])
    head = c.ready("head")
    for i in range(len(SPANS)):
        c.ready(f"shard-{i}")
    return head


def _joined(c, head):
    wait_for("both shards to join", lambda: status(head["job_endpoint"])["nodes"]["head"]["route_ready"] == 1)


def test_a_head_named_at_two_addresses_keeps_one_link_and_answers_every_job(tmp_path):
    c = HandCluster(tmp_path, ["head", "shard-0", "shard-1"])
    port = free_port()
    relay = DelayRelay(port, delay_ms=15)  # the head's "other address" (NAT), 30 ms round trip
    try:
        _head(c, port)
        for i in range(len(SPANS)):
            _shard(c, i, f"tcp://127.0.0.1:{relay.port}")  # heartbeats go here, steps to the advertised one
        head = _up(c)
        _joined(c, head)
        prompt = "Name three rivers in Europe."
        expected = tokens(generate(prompt, "--max-tokens", "24"))
        for k in range(6):
            p = troupe("submit", "--endpoint", head["job_endpoint"], "--prompt", prompt, "--max-tokens", "24",
                       "--json", timeout=90)
            assert p.returncode == 0, f"job {k}: {p.stderr}\n{c.all_logs()}"
            assert tokens(json_lines(p.stdout)) == expected, f"job {k}"
        last = c.log("shard-1")
        assert "node 'head' is also named at tcp://127.0.0.1:" in last, last
        assert last.count("is also named at") == 1, last  # said once, not per step
        assert "dialling" not in last, last  # never re-dialled
        for name in ("shard-0", "shard-1"):
            assert status(head["job_endpoint"])["nodes"][name]["send_errors_total"] == 0
    finally:
        c.stop()
        relay.close()


def test_a_key_missing_from_a_shards_allowlist_is_named_everywhere_and_fails_jobs_fast(tmp_path):
    c = HandCluster(tmp_path, ["head", "shard-0", "shard-1"])
    # shard-1 allows the head but not shard-0: the shard-to-shard hop is refused.
    c.allowlist(tmp_path / "keys" / "shard-1-allows", ["head", "shard-1"])
    port = free_port()
    try:
        _head(c, port)
        _shard(c, 0, f"tcp://127.0.0.1:{port}")
        _shard(c, 1, f"tcp://127.0.0.1:{port}", allowlist="keys/shard-1-allows")
        head = _up(c)
        _joined(c, head)
        t0 = time.time()
        p = troupe("submit", "--endpoint", head["job_endpoint"], "--prompt", "Hi", "--max-tokens", "8", "--json",
                   timeout=90)
        took = time.time() - t0
        assert p.returncode != 0, p.stdout
        assert "cannot reach" in p.stderr and "shard-1" in p.stderr, p.stderr
        assert took < 20, f"the job failed only after {took:.0f} s"
        shard0, shard1 = c.log("shard-0"), c.log("shard-1")
        key0 = open(c.public_key("shard-0")).read().split()[-1].strip('"')
        assert "refused a CURVE handshake from 127.0.0.1 (node 'shard-0', key " in shard1, shard1
        assert "public key not in allowlist — add its node.pub to this node's allowlist" in shard1, shard1
        assert "node 'shard-1' at tcp://127.0.0.1:" in shard0 and "refused the CURVE key of 'shard-0'" in shard0, shard0
        assert "shard 'shard-0' cannot reach 'shard-1'" in c.log("head"), c.log("head")
        # /health and status say so while it lasts; a new job is refused at once, naming it.
        code, body = health(head["http_port"])
        assert code == 503, body
        assert "shard 'shard-0' (layers 0-15) cannot reach 'shard-1'" in body["reason"], body
        s = status(head["job_endpoint"])
        assert "cannot reach 'shard-1'" in s["route_problem"], s
        refused = {k: v for k, v in s["nodes"]["shard-1"].items() if k.startswith("handshakes_refused_total")}
        assert any('peer="shard-0"' in k and v >= 1 for k, v in refused.items()), s["nodes"]["shard-1"]
        assert any(k.startswith("link_refusals_total") and 'peer="shard-1"' in k for k in s["nodes"]["shard-0"]), s
        t0 = time.time()
        p = troupe("submit", "--endpoint", head["job_endpoint"], "--prompt", "Hi", "--max-tokens", "8", timeout=60)
        assert p.returncode != 0 and "NO_ROUTE" in p.stderr and "cannot reach 'shard-1'" in p.stderr, p.stderr
        assert time.time() - t0 < 5
        assert key0  # (the key shard-1 names is shard-0's)
    finally:
        c.stop()


def test_a_key_missing_from_the_heads_allowlist_makes_the_shard_unusable_and_says_why(tmp_path):
    c = HandCluster(tmp_path, ["head", "shard-0", "shard-1"], allow=["head", "shard-0"])
    port = free_port()
    try:
        _head(c, port, peers=[{"id": "shard-0", "public_key": c.public_key("shard-0")},
                              {"id": "shard-1", "public_key": c.public_key("shard-1"), "layers": [15, 30],
                               "endpoint": "tcp://127.0.0.1:1"}])  # a config peer: routable without announcing
        _shard(c, 0, f"tcp://127.0.0.1:{port}")
        c.allowlist(tmp_path / "keys" / "shard-1-allows", ["head", "shard-0", "shard-1"])
        _shard(c, 1, f"tcp://127.0.0.1:{port}", allowlist="keys/shard-1-allows")
        head = _up(c)
        wait_for("the head to refuse shard-1's key", lambda: "refused a CURVE handshake" in c.log("head"))
        assert "(node 'shard-1', key " in c.log("head") and "not in allowlist" in c.log("head"), c.log("head")
        wait_for("shard-1 to log the refusal",
                 lambda: "node 'head' at tcp://127.0.0.1:" in c.log("shard-1")
                 and "refused the CURVE key of 'shard-1'" in c.log("shard-1"), timeout=20)
        code, body = wait_for("/health to say 503", lambda: (lambda r: r[0] == 503 and r)(health(head["http_port"])),
                              timeout=20)
        assert "shard 'shard-1' (layers 15-30) is unusable: this head refused its CURVE key" in body["reason"], body
        p = troupe("submit", "--endpoint", head["job_endpoint"], "--prompt", "Hi", "--max-tokens", "8", timeout=60)
        assert p.returncode != 0 and "NO_ROUTE" in p.stderr and "refused its CURVE key" in p.stderr, p.stderr
        s = status(head["job_endpoint"])["nodes"]["head"]
        assert any(k.startswith("handshakes_refused_total") and 'peer="shard-1"' in k for k in s), s
    finally:
        c.stop()


def test_the_heads_key_missing_from_a_shards_allowlist_makes_it_unusable_and_says_why(tmp_path):
    c = HandCluster(tmp_path, ["head", "shard-0", "shard-1"])
    c.allowlist(tmp_path / "keys" / "no-head", ["shard-0", "shard-1"])  # shard-0 lets every shard in, not the head
    port = free_port()
    try:
        _head(c, port)
        _shard(c, 0, f"tcp://127.0.0.1:{port}", allowlist="keys/no-head")
        _shard(c, 1, f"tcp://127.0.0.1:{port}")
        head = _up(c)
        # shard-0 announces (its link to the head is fine); the head dials it back and is refused.
        wait_for("the head to name its refused link",
                 lambda: "node 'shard-0' at tcp://127.0.0.1:" in c.log("head")
                 and "refused the CURVE key of 'head'" in c.log("head"), timeout=30)
        assert "(node 'head', key " in c.log("shard-0") and "not in allowlist" in c.log("shard-0"), c.log("shard-0")
        code, body = wait_for("/health to say 503", lambda: (lambda r: r[0] == 503 and r)(health(head["http_port"])),
                              timeout=20)
        assert "shard 'shard-0' (layers 0-15) is unusable: node 'shard-0' at" in body["reason"], body
        p = troupe("submit", "--endpoint", head["job_endpoint"], "--prompt", "Hi", "--max-tokens", "8", timeout=60)
        assert p.returncode != 0 and "NO_ROUTE" in p.stderr, p.stderr
        s = status(head["job_endpoint"])
        assert any(k.startswith("link_refusals_total") and 'peer="shard-0"' in k for k in s["nodes"]["head"]), s
    finally:
        c.stop()


def test_a_wrong_head_key_in_a_shards_peers_is_named_by_the_shard_and_the_head(tmp_path):
    c = HandCluster(tmp_path, ["head", "shard-0", "shard-1", "stranger"])
    port = free_port()
    try:
        _head(c, port, peers=[{"id": "shard-0", "public_key": c.public_key("shard-0"), "layers": [0, 15],
                               "endpoint": "tcp://127.0.0.1:1"},
                              {"id": "shard-1", "public_key": c.public_key("shard-1")}])
        # shard-0 dials the head with someone else's public key; the head knows shard-0
        # from its config (so routes would go through it) — at its real address:
        shard0 = _shard(c, 0, f"tcp://127.0.0.1:{port}", head_key=c.public_key("stranger"))
        _shard(c, 1, f"tcp://127.0.0.1:{port}")
        c.start("shard-0")
        s0_ready = c.ready("shard-0")
        head_cfg = c.dir / "head.yaml"
        head_cfg.write_text(head_cfg.read_text().replace("tcp://127.0.0.1:1", s0_ready["node_endpoint"]))
        c.start("head", "shard-1")
        head = c.ready("head")
        c.ready("shard-1")
        wait_for("shard-0 to name its failing link",
                 lambda: "handshake with node 'head' at tcp://127.0.0.1:" in c.log("shard-0"), timeout=30)
        assert "is the public key 'shard-0' has for it" in c.log("shard-0"), c.log("shard-0")
        code, body = wait_for("/health to say 503", lambda: (lambda r: r[0] == 503 and r)(health(head["http_port"])),
                              timeout=30)
        assert "shard 'shard-0' (layers 0-15) is unusable: it cannot reach this head: handshake with node 'head'" \
            in body["reason"], body
        assert shard0.exists()
    finally:
        c.stop()


def test_a_node_with_another_model_is_counted_and_shown_in_status(tmp_path):
    cut = tmp_path / "cut-20.gguf"
    write_cut_model(DEFAULT_MODEL, cut, 20)  # fewer layers: another model
    c = HandCluster(tmp_path / "c", ["head", "shard-0", "shard-1"])
    port = free_port()
    try:
        _head(c, port)
        _shard(c, 0, f"tcp://127.0.0.1:{port}")
        _shard(c, 1, f"tcp://127.0.0.1:{port}")
        cfg = c.dir / "shard-1.yaml"
        d = yaml.safe_load(cfg.read_text())
        d["model"], d["layers"] = str(cut), [15, 20]
        cfg.write_text(yaml.safe_dump(d))
        c.start("head", "shard-0", "shard-1")
        head = c.ready("head")
        wait_for("the head to refuse shard-1", lambda: "refused node 'shard-1' serves model" in c.log("head"))
        s = status(head["job_endpoint"])
        refused = [k for k in s["nodes"]["head"] if k.startswith("announces_refused_total")]
        assert any('peer="shard-1"' in k and 'reason="other model"' in k for k in refused), s["nodes"]["head"]
        # shard-0 may join after shard-1 is refused; once it has, only layers 15-29 lack a shard
        c.ready("shard-0")
        code, body = wait_for("/health to name layer 15 as the gap",
                              lambda: (lambda r: "layer 15 of" in r[1].get("reason", "") and r)(
                                  health(head["http_port"])), timeout=30)
        assert code == 503 and "no shard serves layer 15 of 30" in body["reason"], body
    finally:
        c.stop()

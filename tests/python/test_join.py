"""Nodes that join by themselves (issue 10, item 1): `troupe node --join HEAD
--layers auto` asks the head which layers are served, takes the span that
most raises the weakest coverage, announces itself with its own CURVE key
(which the head learns, because its allowlist holds it, and puts into routes
so the shards before it can dial it), and answers jobs. A node whose model
is not the head's is refused, by name, at both ends: at the coverage
question (another architecture), or at its announce (same header, other
weights: the layer digests differ)."""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import threading
import time

import gguf

from test_cluster import DEFAULT_MODEL, TROUPE_BIN, Cluster, generate, json_lines, run, tokens
from make_cut_model import write_cut_model


def _status(cluster):
    p = run("status", "--endpoint", cluster.endpoint, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["nodes"]


def _wait(what, check, timeout=60):
    deadline = time.time() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


def _add_joiner_key(d):
    """A key the head's peers never name, but its allowlist (and every shard's) holds."""
    out = run("keys", "generate", "--out", d / "keys" / "joiner")
    assert out.returncode == 0, out.stderr
    (d / "keys" / "allowlist").mkdir(parents=True, exist_ok=True)
    shutil.copy(d / "keys" / "joiner" / "node.pub", d / "keys" / "allowlist" / "joiner.pub")


def _head_endpoint(c):
    return c.info["nodes"][0]["endpoints"]["nodes"]


def _start_node(c, node_id, *flags, model=DEFAULT_MODEL, key="joiner", env=None):
    log = open(c.dir / f"{node_id}.log", "w+")
    proc = subprocess.Popen(
        [str(TROUPE_BIN), "node", "--join", _head_endpoint(c), "--id", node_id, "--model", str(model),
         "--secret-key", str(c.dir / "keys" / key / "node.key"), "--allowlist", str(c.dir / "keys" / "allowlist"),
         "--head-key", str(c.dir / "keys" / "head" / "node.pub"), "--threads", "1", "--cache-budget-mb", "32",
         *flags], stdout=log, stderr=log, env=None if env is None else {**os.environ, **env})
    return proc, log


def _read(log):
    log.flush()
    log.seek(0)
    return log.read()


def _stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_node_with_layers_auto_closes_a_gap_and_jobs_then_succeed(troupe_bin, model_path):
    prompt = "Name three rivers in Europe."
    expected = generate(prompt, "--max-tokens", "24")
    c = Cluster(shards=3, extra=("--cache-budget-mb", "32"), prepare=_add_joiner_key)
    joiner = None
    try:
        victim = c.info["nodes"][2]
        assert victim["id"] == "shard-1" and victim["layers"] == [10, 20]
        os.kill(victim["pid"], signal.SIGKILL)
        _wait("the head to drop shard-1", lambda: _status(c)["head"]["route_ready"] == 0)
        joiner, log = _start_node(c, "joiner", "--layers", "auto")
        _wait("the joiner to be routed", lambda: _status(c)["head"]["route_ready"] == 1)
        text = _read(log)
        assert "layers auto: 10-20 of 30" in text, text
        status = _status(c)
        assert (status["joiner"]["layer_begin"], status["joiner"]["layer_end"]) == (10, 20), status["joiner"]
        assert "shard 'joiner' joined: layers 10-20" in c.stderr() + (c.dir / "logs" / "head.log").read_text()
        # The ring runs through it: shard-0 dials it with the key from the route.
        for _ in range(2):
            p = run("submit", "--endpoint", c.endpoint, "--prompt", prompt, "--max-tokens", "24", "--json")
            assert p.returncode == 0, p.stderr + _read(log)
            assert tokens(json_lines(p.stdout)) == tokens(expected)
        assert _status(c)["joiner"]["steps_total"] > 0
    finally:
        if joiner:
            _stop(joiner)
        c.stop()


def _corrupt_copy(src, dst, tensor="blk.15.ffn_down.weight"):
    """A byte-for-byte copy with one byte of `tensor` flipped: same header, other weights."""
    shutil.copy(src, dst)
    reader = gguf.GGUFReader(str(src), "r")
    t = next(t for t in reader.tensors if t.name == tensor)
    at = t.data_offset + t.n_bytes // 2
    with open(dst, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ 0x5A]))


def test_a_node_with_another_model_is_refused_at_both_ends(troupe_bin, model_path, tmp_path):
    cut = tmp_path / "cut-20.gguf"
    write_cut_model(DEFAULT_MODEL, cut, 20)
    tampered = tmp_path / "tampered.gguf"
    _corrupt_copy(DEFAULT_MODEL, tampered)
    c = Cluster(shards=3, extra=("--cache-budget-mb", "32"), prepare=_add_joiner_key)
    procs = []
    try:
        head_log = lambda: (c.dir / "logs" / "head.log").read_text()
        # Another architecture: refused when it asks which layers to take; it exits naming both models.
        other, log = _start_node(c, "other", "--layers", "auto", model=cut)
        procs.append(other)
        assert other.wait(timeout=60) == 1
        text = _read(log)
        assert "refused" in text and "cut-20.gguf" in text and DEFAULT_MODEL.name in text, text
        _wait("the head's log line", lambda: "refused node 'other' serves model cut-20.gguf" in head_log())
        # Same header, one weight changed in layer 15: refused at its announce,
        # never routed, however long it keeps announcing.
        bad, log = _start_node(c, "tampered", "--layers", "10:20", model=tampered)
        procs.append(bad)
        _wait("the head to refuse the tampered weights",
              lambda: "refused node 'tampered' serves model tampered.gguf with other weights in layers 10-20"
              in head_log())
        time.sleep(2)
        assert "tampered" not in _status(c), "a node with other weights was routed"
        assert bad.poll() is None  # it keeps running (and says why in its log), the cluster keeps serving
        p = run("submit", "--endpoint", c.endpoint, "--prompt", "Hi", "--max-tokens", "4", "--json")
        assert p.returncode == 0, p.stderr
    finally:
        for p in procs:
            _stop(p)
        c.stop()


# SmolLM2's largest layer is 2.11 MiB: with a 32 MiB cache budget and the
# 96 MiB allowance for the process, 160.5 MiB holds 15 layers and not 16.
HALF_MODEL_BUDGET_MB = "160.5"


def _spans(status):
    """Layer spans of the live shards that take sessions (the head and draining nodes left out)."""
    return sorted((n["layer_begin"], n["layer_end"]) for i, n in status.items()
                  if i != "head" and not n.get("draining") and n.get("layer_end", 0) > n.get("layer_begin", 0))


def test_a_node_moves_when_the_cluster_becomes_lopsided_and_loses_no_job(troupe_bin, model_path):
    """Two config shards (0-15, 15-30) and three auto joiners that hold 15
    layers each settle as 3/2 replicas; the config shard on 15-30 dies (3/1),
    one joiner on 0-15 drains, starts again in the same process and takes
    15-30 (2/2). Jobs run throughout, greedy and sampled, and every one
    answers as the single process does."""
    greedy = ("Name three rivers in Europe.", ("--max-tokens", "24"))
    sampled = ("Write a haiku about rain.", ("--max-tokens", "24", "--temperature", "0.8", "--top-p", "0.9",
                                             "--seed", "11"))
    expected = {p: tokens(generate(p, *f)) for p, f in (greedy, sampled)}
    c = Cluster(shards=2, extra=("--cache-budget-mb", "32"), prepare=_add_joiner_key)
    joiners = []
    stop_jobs = threading.Event()
    outcomes = []
    try:
        assert [n["layers"] for n in c.info["nodes"][1:]] == [[0, 15], [15, 30]]
        for i, want in enumerate(((0, 15), (15, 30), (0, 15))):
            proc, log = _start_node(c, f"joiner-{i}", "--layers", "auto", "--memory-budget-mb", HALF_MODEL_BUDGET_MB,
                                    "--rebalance-seconds", "3")
            joiners.append((proc, log))
            _wait(f"joiner-{i} to join", lambda: f"joiner-{i}" in _status(c))
            assert f"layers auto: {want[0]}-{want[1]} of 30 (room for 15" in _read(log), _read(log)
        _wait("3 and 2 replicas", lambda: _spans(_status(c)) == [(0, 15)] * 3 + [(15, 30)] * 2)
        time.sleep(8)  # balanced: several rebalance checks pass and nobody moves
        assert _spans(_status(c)) == [(0, 15)] * 3 + [(15, 30)] * 2
        assert all("moving" not in _read(log) for _, log in joiners)

        def jobs():
            while not stop_jobs.is_set():
                for prompt, flags in (greedy, sampled):
                    p = run("submit", "--endpoint", c.endpoint, "--prompt", prompt, *flags, "--json")
                    outcomes.append((prompt, p.returncode, p.stderr,
                                     tokens(json_lines(p.stdout)) if p.returncode == 0 else None))

        worker = threading.Thread(target=jobs)
        worker.start()
        os.kill(c.info["nodes"][2]["pid"], signal.SIGKILL)  # shard-1, the config node on 15-30: now 3/1
        _wait("a joiner to move to 15-30 (2/2)", lambda: _spans(_status(c)) == [(0, 15)] * 2 + [(15, 30)] * 2,
              timeout=90)
        time.sleep(3)
        stop_jobs.set()
        worker.join(timeout=120)
        logs = {i: _read(log) for i, (_, log) in enumerate(joiners)}
        moved = [i for i, text in logs.items() if "the cluster is lopsided: moving from layers 0-15 to 15-30" in text]
        assert moved and 1 not in moved, logs
        for i in moved:
            text = logs[i]
            assert "weakest coverage 1 -> 2" in text and "starting again to choose layers anew" in text, text
            assert text.count("layers auto:") == 2, text
            assert joiners[i][0].poll() is None  # the same process, serving again
        head_log = (c.dir / "logs" / "head.log").read_text()
        # Drained, it left the registry; started again, it joins on its new layers.
        assert all(f"node 'joiner-{i}' is draining" in head_log for i in moved), head_log
        assert any(re.search(f"shard 'joiner-{i}' joined( again)?: layers 15-30", head_log) for i in moved), head_log
        assert outcomes, "no job ran during the move"
        for prompt, code, err, got in outcomes:
            assert code == 0, err
            assert got == expected[prompt], (prompt, got)
        # The cluster stays balanced: no further moves.
        time.sleep(8)
        assert _spans(_status(c)) == [(0, 15)] * 2 + [(15, 30)] * 2
    finally:
        stop_jobs.set()
        for proc, _ in joiners:
            _stop(proc)
        c.stop()


def test_a_node_started_again_to_move_takes_the_span_it_set_out_for_on_a_tie(troupe_bin, model_path):
    """Two nodes that drain to move at the same moment start again to a tie
    (each span served once); each takes the span it set out for
    (TROUPE_MOVE_TO, set by the process it was), not both the lowest one."""
    c = Cluster(shards=2, extra=("--cache-budget-mb", "32"), prepare=_add_joiner_key)
    nodes = []
    try:
        flags = ("--layers", "auto", "--memory-budget-mb", HALF_MODEL_BUDGET_MB, "--rebalance-seconds", "0")
        plain = _start_node(c, "joiner-plain", *flags)
        nodes.append(plain)
        _wait("joiner-plain to join", lambda: "joiner-plain" in _status(c))
        assert "layers auto: 0-15 of 30" in _read(plain[1]), _read(plain[1])  # a tie: the lowest begin
        _stop(plain[0])
        _wait("joiner-plain to leave", lambda: _spans(_status(c)) == [(0, 15), (15, 30)])
        mover = _start_node(c, "joiner-mover", *flags, env={"TROUPE_MOVE_TO": "15-30"})
        nodes.append(mover)
        _wait("joiner-mover to join", lambda: "joiner-mover" in _status(c))
        assert "layers auto: 15-30 of 30" in _read(mover[1]), _read(mover[1])
        assert _spans(_status(c)) == [(0, 15), (15, 30), (15, 30)]
    finally:
        for proc, _ in nodes:
            _stop(proc)
        c.stop()

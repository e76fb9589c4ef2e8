"""A mixed cluster (issue 12): shards on the torch backend beside shards on
the quantized kernels, on the same wire.

The two backends compute the same model with different roundings (the
kernels quantize activations to 8 bits, the f32 torch backend does not), so
a ring that mixes them gives an answer of its own; what must hold is what a
user relies on:

* the mixed ring answers, deterministically, and starts as the kernels do;
* a job fails over between a torch replica and a kernel replica, both ways,
  without losing or repeating a token: the tokens before the failure are the
  uninterrupted run's, the answer is whole (indices checked by the client,
  one replay), and the rest is exactly what the surviving route computes
  from that history — checked against a fresh job whose prompt is the
  history as token ids (the kernels compute a prefill as decoding did, bit
  for bit; the torch backend up to rounding).

Which replica a new session takes is steered with link speed (routes prefer
fast links): the replica that should serve first is dialled directly, the
other through a delaying relay (this kernel has no netem). The relay is slow
only while routes are chosen; once the first replica is killed, the job can
only go on over the second, so the relay stops delaying and the rest of the
answer runs at full speed.
"""
import json
import os
import pathlib
import signal
import subprocess
import sys

from conftest import ROOT
from delay_relay import DelayRelay
from test_cluster import TROUPE_BIN, Cluster, json_lines, run, tokens
from test_join import _add_joiner_key, _start_node, _status, _stop, _wait
from test_routing import _free_port

sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
from troupe_client import Client  # noqa: E402

N = 40
PROMPT = "Tell me a long story about a lighthouse keeper."
JOB = ("--prompt", PROMPT, "--max-tokens", str(N), "--min-tokens", str(N))


def _join(c, node_id, *flags, slow=False):
    """A [15, 30) replica; slow = behind a 500 ms relay (a 1 s round trip): a route's cost is its links' round
    trips plus its nodes' step times × (1 + their sessions), and a torch shard's step on a 2-vCPU machine busy
    with another test can take a hundred milliseconds (a 240 ms round trip was not always enough), so the slow
    link must cost far more than that for the fast-linked replica to be chosen."""
    relay = None
    if slow:
        port = _free_port()
        relay = DelayRelay(port, delay_ms=500)
        flags += ("--listen", f"tcp://127.0.0.1:{port}", "--advertise", f"tcp://127.0.0.1:{relay.port}")
    proc, log = _start_node(c, node_id, "--layers", "15:30", *flags)
    want = (lambda s: s.get(node_id, {}).get("rtt_ms", 0) > 800) if slow else \
        (lambda s: 0 < s.get(node_id, {}).get("rtt_ms", 0) < 20)
    _wait(f"{node_id} to join and be measured", lambda: want(_status(c)), timeout=90)
    return proc, relay


def _submit(c):
    p = run("submit", "--endpoint", c.endpoint, *JOB, "--json")
    assert p.returncode == 0, p.stderr
    return tokens(json_lines(p.stdout))


def _fail_over(c, victim, proc, survivor, relay):
    """The job runs on `victim` uninterrupted once, then again killed mid-answer; `relay` (the survivor's slow
    link) stops delaying once the victim is dead."""
    before = _status(c)
    whole = _submit(c)
    assert _status(c)[victim]["steps_total"] > before[victim]["steps_total"], "the job did not run on " + victim
    job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, *JOB, "--json"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [job.stdout.readline() for _ in range(6)]
    assert all(l.startswith("{") for l in lines), job.stderr.read()
    os.kill(proc.pid, signal.SIGKILL)
    relay.delay = 0  # the survivor is the only route left: no choice to steer any more
    out, err = job.communicate(timeout=300)
    assert job.returncode == 0, err
    got = json_lines("".join(lines) + out)
    answer = tokens(got)
    assert len(answer) == N and got[-1]["replays"] == 1
    assert answer[:6] == whole[:6]
    # The history the survivor replayed is the uninterrupted run's up to the
    # first token that differs; from there on the answer is the survivor's.
    d = next((i for i, (a, b) in enumerate(zip(answer, whole)) if a != b), N)
    print(f"\n{victim} -> {survivor}: the answer follows the uninterrupted one for {d} of {N} tokens")
    if d < N:
        prompt_ids = json.loads(run("tokenize", "--text", PROMPT).stdout)
        with Client(c.endpoint) as client:
            rest = client.generate(prompt_ids + answer[:d], max_tokens=N - d, min_tokens=N - d)
        assert rest.tokens == answer[d:]
    assert _status(c)[survivor]["steps_total"] > 0


def test_a_mixed_ring_answers_and_fails_over_both_ways(troupe_bin, model_path):
    kernels = tokens(json_lines(run("generate", *JOB, "--json").stdout))
    c = Cluster(shards=2, extra=("--cache-budget-mb", "32"), prepare=_add_joiner_key)
    procs, relays = [], []
    try:
        shard1 = c.info["nodes"][2]
        assert shard1["id"] == "shard-1" and shard1["layers"] == [15, 30]
        os.kill(shard1["pid"], signal.SIGKILL)  # [15, 30) is left to the nodes joined below
        _wait("the head to drop shard-1", lambda: _status(c)["head"]["route_ready"] == 0)

        # The ring through a torch shard: kernels for [0, 15), torch for [15, 30).
        torch1, _ = _join(c, "torch-1", "--backend", "torch")
        procs.append(torch1)
        mixed = _submit(c)
        assert _submit(c) == mixed
        shared = next((i for i, (a, b) in enumerate(zip(mixed, kernels)) if a != b), N)
        print(f"\nthe mixed ring's answer shares {shared} of {N} tokens with the kernels' single process")
        assert shared >= 4
        assert _status(c)["torch-1"]["steps_total"] > 0

        # torch -> kernels: the torch replica (fast link) serves and dies; a kernel replica (slow link) takes over.
        kernels2, relay = _join(c, "kernels-2", slow=True)
        procs.append(kernels2)
        relays.append(relay)
        _fail_over(c, "torch-1", torch1, "kernels-2", relay)

        # kernels -> torch: a kernel replica (fast link) serves and dies; a torch replica (slow link) takes over.
        _stop(kernels2)
        _wait("the head to drop kernels-2", lambda: "kernels-2" not in _status(c), timeout=30)
        kernels3, _ = _join(c, "kernels-3")
        torch4, relay = _join(c, "torch-4", "--backend", "torch", slow=True)
        procs += [kernels3, torch4]
        relays.append(relay)
        _fail_over(c, "kernels-3", kernels3, "torch-4", relay)
    finally:
        for p in procs:
            _stop(p)
        for r in relays:
            r.close()
        c.stop()

"""Routes by measured speed (issue 10, item 2). The head pings every shard
and hears each one's compute per step in its heartbeats; a route is the
cheapest path by estimated step time. A replica behind a slow link (a
delaying relay: this kernel has no netem qdisc) is left alone while a fast
one serves the same span; when the fast one dies mid-answer the answer goes
on over the slow one, token for token the same."""
import json
import os
import signal
import socket
import subprocess
import time

from delay_relay import DelayRelay
from test_cluster import TROUPE_BIN, Cluster, generate, json_lines, run, tokens
from test_join import _add_joiner_key, _read, _start_node, _status, _stop, _wait


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_sessions_take_the_fast_replica_and_fail_over_to_the_slow_one(troupe_bin, model_path):
    n = 48
    prompt = "Tell me a long story about a lighthouse keeper."
    expected = generate(prompt, "--max-tokens", str(n), "--min-tokens", str(n))
    c = Cluster(shards=2, extra=("--cache-budget-mb", "32"), prepare=_add_joiner_key)
    port = _free_port()
    relay = DelayRelay(port, delay_ms=40)  # 80 ms round trip to the slow replica
    slow = None
    try:
        fast = c.info["nodes"][2]
        assert fast["id"] == "shard-1" and fast["layers"] == [15, 30]
        slow, log = _start_node(c, "slow", "--layers", "15:30", "--listen", f"tcp://127.0.0.1:{port}",
                                "--advertise", f"tcp://127.0.0.1:{relay.port}")
        # Joined, and both round trips measured (pings every 2 s).
        _wait("the slow replica to join and be measured",
              lambda: _status(c).get("slow", {}).get("rtt_ms", 0) > 40, timeout=90)
        status = _status(c)
        assert status["shard-1"]["rtt_ms"] < 20, status["shard-1"]
        print("round trips: fast", status["shard-1"]["rtt_ms"], "ms, slow", status["slow"]["rtt_ms"], "ms")

        for i in range(3):
            p = run("submit", "--endpoint", c.endpoint, "--prompt", f"Question {i}: name a colour.",
                    "--max-tokens", "6", "--json")
            assert p.returncode == 0, p.stderr
        status = _status(c)
        assert status["slow"]["steps_total"] == 0, "a session took the slow replica while the fast one was idle"
        assert status["shard-1"]["steps_total"] > 0

        # The fast replica dies mid-answer: the job goes on over the slow one.
        job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", prompt,
                                "--max-tokens", str(n), "--min-tokens", str(n), "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = [job.stdout.readline() for _ in range(6)]
        assert all(l.startswith("{") for l in lines), job.stderr.read()
        os.kill(fast["pid"], signal.SIGKILL)
        out, err = job.communicate(timeout=180)
        assert job.returncode == 0, err
        got = json_lines("".join(lines) + out)
        assert tokens(got) == tokens(expected)
        assert got[-1]["replays"] == 1
        assert _status(c)["slow"]["steps_total"] > 0
    finally:
        if slow:
            _stop(slow)
        relay.close()
        c.stop()

"""Separate stage nodes (issue 10, item 3): the embedding and the LM head as
nodes of their own (`roles: [embedding, lm_head]`; `cluster up
--stage-nodes N`), the head keeping only the scheduler and the sampler
(`head_stages: []`). The ring answers token for token as the single
process, greedy and sampled; a stage node dying mid-answer is replaced by
another, and the answer goes on unchanged.
"""
import json
import os
import signal
import subprocess

from test_cluster import TROUPE_BIN, Cluster, generate, json_lines, run, tokens
from test_join import _status

N = 256  # long enough to be mid-answer when the LM-head node dies
PROMPT = "Tell me a long story about a lighthouse keeper."


def test_stage_nodes_serve_the_ring_and_one_dying_mid_answer_loses_nothing(troupe_bin, model_path):
    greedy = tokens(generate(PROMPT, "--max-tokens", str(N), "--min-tokens", str(N)))
    sampled = tokens(generate(PROMPT, "--max-tokens", "24", "--temperature", "0.8", "--seed", "7"))
    c = Cluster(shards=2, extra=("--stage-nodes", "2", "--cache-budget-mb", "32"))
    try:
        stages = [n for n in c.info["nodes"] if n["role"] == "stages"]
        assert [n["id"] for n in stages] == ["stages-0", "stages-1"]
        head_log = (c.dir / "logs" / "head.log").read_text()
        assert "stage node 'stages-0' joined: embedding, LM head" in head_log, head_log
        p = run("submit", "--endpoint", c.endpoint, "--prompt", PROMPT, "--max-tokens", "24", "--temperature", "0.8",
                "--seed", "7", "--json")
        assert p.returncode == 0, p.stderr
        assert tokens(json_lines(p.stdout)) == sampled
        status = _status(c)
        assert all(status[n["id"]]["runs_lm_head"] == 1 and status[n["id"]]["runs_embedding"] == 1 for n in stages)
        assert sum(status[n["id"]]["steps_total"] for n in stages) > 0

        before = {n["id"]: status[n["id"]]["batches_total"] for n in stages}  # LM head batches
        job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", PROMPT,
                                "--max-tokens", str(N), "--min-tokens", str(N), "--json"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = [job.stdout.readline() for _ in range(6)]
        assert all(l.startswith("{") for l in lines), job.stderr.read()
        status = _status(c)
        lm_head = max(stages, key=lambda n: status[n["id"]]["batches_total"] - before[n["id"]])
        os.kill(lm_head["pid"], signal.SIGKILL)
        out, err = job.communicate(timeout=300)
        assert job.returncode == 0, err
        got = json_lines("".join(lines) + out)
        assert tokens(got) == greedy
        assert got[-1]["replays"] == 1
        other = next(n for n in stages if n["id"] != lm_head["id"])
        assert _status(c)[other["id"]]["batches_total"] > status[other["id"]]["batches_total"]
    finally:
        c.stop()

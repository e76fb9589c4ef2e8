"""Spot checks (issue 14, item 3): with `--spot-check-fraction 1` the head
runs every session a second time with one span on another replica of its
layers (a shadow) and compares the LM head's digests of the two runs'
final hidden states, position by position (scheduling/spot_checks.h).

Honest replicas agree at every position — the kernels are deterministic and
batch-invariant, and the shadow's replay prefill computes bit for bit what
decoding did — and answers stay those of the single process. A shard that
lies (node config test_fault: corrupt_output; its output is 1 % off) is
quarantined once two replicas that agree with each other both disagree with
it: it takes no new session, its jobs go on over the honest replicas, the
head logs and counts it, and `status`, /metrics and the console show it.
Leaving and coming back as a new process does not lift it."""
import concurrent.futures
import json
import re
import urllib.request

from test_cluster import Cluster, generate, run, submit, summary, tokens
from test_join import _add_joiner_key, _start_node, _status, _stop, _wait

PROMPTS = ["The capital of France is", "Write a haiku about autumn leaves.", "def fibonacci(n):",
           "Once upon a time, in a small village,"]
FLAGS = ("--max-tokens", "16", "--temperature", "0.8")


def _head_log(c):
    return (c.dir / "logs" / "head.log").read_text()


def _console_nodes(c):
    with urllib.request.urlopen(f"{c.info['http_url'].rsplit('/v1', 1)[0]}/api/v1/nodes", timeout=10) as r:
        return {n["id"]: n for n in json.loads(r.read())["nodes"]}


def test_honest_replicas_agree_and_a_lying_shard_is_quarantined(troupe_bin, model_path):
    c = Cluster(shards=3, extra=("--cache-budget-mb", "32", "--spot-check-fraction", "1"), prepare=_add_joiner_key)
    honest = liar = None
    try:
        refs = [tokens(generate(p, *FLAGS, "--seed", str(i))) for i, p in enumerate(PROMPTS)]
        honest, _ = _start_node(c, "honest", "--layers", "10:20")
        _wait("the second replica of layers 10-20", lambda: "honest" in _status(c))

        # Honest replicas: every job is checked, every position agrees, answers are the single process's.
        for i, p in enumerate(PROMPTS):
            assert tokens(submit(c, p, *FLAGS, "--seed", str(i))) == refs[i], p
        head = _status(c)["head"]
        assert head["spot_checks_total"] >= len(PROMPTS) - 1, head
        assert head["spot_check_positions_total"] >= 8 * (len(PROMPTS) - 1), head
        assert head["spot_check_mismatches_total"] == 0, _head_log(c)
        assert head["nodes_quarantined"] == 0

        # A third replica that lies. Jobs run three at a time until the head quarantines it.
        liar, liar_log = _start_node(c, "liar", "--layers", "10:20", "--test-fault", "corrupt_output")
        _wait("the lying replica", lambda: "liar" in _status(c))

        def job(i):
            p = run("submit", "--endpoint", c.endpoint, "--prompt", PROMPTS[i % len(PROMPTS)], "--json", *FLAGS,
                    "--seed", str(i))
            return p.returncode, p.stderr, p.stdout

        quarantined = lambda: _status(c)["liar"].get("quarantined") == 1
        jobs = 0
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            while not quarantined():
                assert jobs < 60, "the liar was not quarantined after 60 jobs:\n" + _head_log(c)
                for code, err, out in pool.map(job, range(jobs, jobs + 3)):
                    assert code == 0, err  # no job fails: those on the liar move to honest replicas
                    assert summary([json.loads(l) for l in out.splitlines() if l.strip()])["generated_tokens"] > 0
                jobs += 3
        log = _head_log(c)
        assert re.search(r"spot check: shards '[\w-]+' and '[\w-]+' computed different hidden states with layers "
                         r"10-20 for session \d+ at position \d+; one of them is wrong", log), log
        m = re.search(r"spot check: quarantined shard 'liar': its hidden states differed from those of "
                      r"'(honest|shard-1)' and '(honest|shard-1)', which agree \(layers 10-20\)", log)
        assert m and m.group(1) != m.group(2), log
        assert "quarantined shard 'honest'" not in log and "quarantined shard 'shard-1'" not in log, log
        head = _status(c)["head"]
        assert head["nodes_quarantined"] == 1
        assert head["spot_check_mismatches_total"] >= 2
        console = _console_nodes(c)
        assert console["liar"]["state"] == "quarantined", console["liar"]
        assert "which agree (layers 10-20)" in console["liar"]["detail"]
        assert console["honest"]["state"] == "ok" and console["shard-1"]["state"] == "ok"
        with urllib.request.urlopen(c.info["http_url"].rsplit("/v1", 1)[0] + "/metrics", timeout=10) as r:
            metrics = r.read().decode()
        assert 'troupe_quarantined{node="liar"} 1' in metrics, metrics

        # Afterwards the liar gets nothing, and answers are the single process's again.
        steps = _status(c)["liar"]["steps_total"]
        for i, p in enumerate(PROMPTS):
            assert tokens(submit(c, p, *FLAGS, "--seed", str(i))) == refs[i], p
        assert _status(c)["liar"]["steps_total"] == steps
        assert liar.poll() is None  # quarantined, not killed: the operator decides

        # Gone past the registry's ttl and back (a new process): still quarantined, and still unused.
        liar.kill()
        liar.wait()
        _wait("the liar to leave the registry", lambda: "liar" not in _status(c), timeout=60)
        liar, _ = _start_node(c, "liar", "--layers", "10:20", "--test-fault", "corrupt_output")
        _wait("the liar back, quarantined", lambda: _status(c).get("liar", {}).get("quarantined") == 1)
        # The console lists a node that left as lost until its next look at the registry (a tick).
        _wait("the console to show the liar quarantined", lambda: _console_nodes(c)["liar"]["state"] == "quarantined")
        for i, p in enumerate(PROMPTS[:2]):
            assert tokens(submit(c, p, *FLAGS, "--seed", str(i))) == refs[i], p
        assert _status(c)["liar"]["steps_total"] == 0
    finally:
        for proc in (honest, liar):
            if proc:
                _stop(proc)
        c.stop()

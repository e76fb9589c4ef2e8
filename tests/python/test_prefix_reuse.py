"""Prefix reuse end to end (issue 8, part 4 item 2): a finished job's caches
stay parked on its shards, and a new job whose prompt starts with the same
tokens copies those positions instead of prefilling them — with the same
answer as without reuse (the single process `troupe generate`), and never at
the cost of a running job when the cache budget is tight (parked caches are
evicted, least recently used first)."""
import concurrent.futures
import json

import pytest
import requests

from test_cluster import Cluster, generate, json_lines, run, tokens

SYSTEM = ("You are a meticulous assistant for a railway company. Always answer in one sentence, mention the "
          "station name, and never invent timetables. Be polite and brief.")
QUESTIONS = ["When does the first train leave?", "Where can I buy a ticket?", "Is there a cafe on platform 2?",
             "Can I bring my bicycle?", "How late is the last train?", "Where is the lost property office?"]


def submit(c, question, *flags):
    p = run("submit", "--endpoint", c.endpoint, "--chat", "--system", SYSTEM, "--prompt", question,
            "--max-tokens", 32, "--json", *flags)
    assert p.returncode == 0, p.stderr
    return json_lines(p.stdout)


def reference(question):
    return tokens(generate(question, "--chat", "--system", SYSTEM, "--max-tokens", "32"))


def nodes(c):
    return json.loads(run("status", "--endpoint", c.endpoint, "--json").stdout)["nodes"]


def test_a_shared_system_prompt_is_copied_not_prefilled_and_answers_do_not_change(troupe_bin, model_path):
    c = Cluster(shards=2)
    try:
        first = submit(c, QUESTIONS[0])
        second = submit(c, QUESTIONS[1])
        assert first[-1]["cached_tokens"] == 0
        assert second[-1]["cached_tokens"] >= 30, "the system prompt's tokens come from the first job's cache"
        assert second[-1]["cached_tokens"] < second[-1]["prompt_tokens"]
        assert tokens(first) == reference(QUESTIONS[0])
        assert tokens(second) == reference(QUESTIONS[1])
        n = nodes(c)
        assert n["head"]["prompt_tokens_reused_total"] == second[-1]["cached_tokens"]
        for shard in ("shard-0", "shard-1"):
            assert n[shard]["prefix_positions_copied_total"] == second[-1]["cached_tokens"]
        # An HTTP client resending the whole conversation prefills only the new turn.
        url = f"http://127.0.0.1:{c.info['http_port']}/v1/chat/completions"
        history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTIONS[2]}]
        r1 = requests.post(url, json={"messages": history, "temperature": 0, "max_tokens": 24}, timeout=120).json()
        history += [r1["choices"][0]["message"], {"role": "user", "content": "Thanks. And on platform 3?"}]
        r2 = requests.post(url, json={"messages": history, "temperature": 0, "max_tokens": 24}, timeout=120).json()
        assert r2["usage"]["prompt_tokens_details"]["cached_tokens"] >= r1["usage"]["prompt_tokens"] - 1
    finally:
        c.stop()


def test_without_reuse_nothing_is_copied(troupe_bin, model_path):
    c = Cluster(shards=1, extra=("--no-prefix-reuse",))
    try:
        submit(c, QUESTIONS[0])
        again = submit(c, QUESTIONS[1])
        assert again[-1]["cached_tokens"] == 0
        assert tokens(again) == reference(QUESTIONS[1])
        assert nodes(c)["shard-0"]["cache_bytes_parked"] == 0, "nothing parked"
    finally:
        c.stop()


def test_a_tight_cache_budget_evicts_parked_caches_never_a_running_job(troupe_bin, model_path):
    # About three sessions of ~100 positions fit in 4 MiB per shard: parked
    # caches must make way for every new job, while jobs run side by side.
    c = Cluster(shards=2, extra=("--cache-budget-mb", "4"))
    try:
        expected = {q: reference(q) for q in QUESTIONS}
        for q in QUESTIONS:  # one after the other: each parks, the next evicts the oldest
            assert tokens(submit(c, q)) == expected[q], q
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            got = list(pool.map(lambda q: submit(c, q), QUESTIONS * 2))
        for q, lines in zip(QUESTIONS * 2, got):
            assert lines[-1]["done"] and tokens(lines) == expected[q], q
        n = nodes(c)
        assert n["shard-0"]["sessions_evicted_total"] > 0
        assert n["head"]["prompt_tokens_reused_total"] > 0
        for shard in ("shard-0", "shard-1"):
            assert 0 < n[shard]["cache_bytes_parked"] <= 4 * 1024 * 1024
            assert n[shard]["cache_bytes_in_use"] == 0
    finally:
        c.stop()

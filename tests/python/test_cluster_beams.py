"""Beam search through the ring (`troupe submit --num-beams`): the beams are
rows of one session, every step carries one token per row and each row's
parent (Step.parent_rows), and the shards reorder their cache rows before
running it. The cluster's sequences equal the single process's
(`troupe generate`, itself checked against a Python reference in
test_beam_search.py), the shards count their reorders (beam_reorders_total),
and a shard killed mid-search costs nothing when a replica serves its layers:
the sampler replays every beam's tokens over the new route.
"""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import TROUPE_BIN
from test_cluster import Cluster, _shard_status, generate, json_lines, run, submit

SETTINGS = [
    ("What is the capital of Italy?", ("--chat", "--num-beams", "2", "--early-stopping", "true")),
    ("What is the capital of Italy?", ("--chat", "--num-beams", "4", "--length-penalty", "2")),
    ("Say hello.", ("--chat", "--num-beams", "4", "--length-penalty", "0.5", "--early-stopping", "never")),
    ("The quick brown fox", ("--num-beams", "3", "--num-return-sequences", "2")),
]


def sequences(lines):
    return [(l["tokens"], l["text"], l["finish_reason"]) for l in lines if "sequence" in l]


@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path):
    c = Cluster(shards=2)
    yield c
    c.stop()


@pytest.mark.parametrize("prompt,flags", SETTINGS)
def test_cluster_beams_equal_generate(cluster, prompt, flags):
    flags = (*flags, "--max-tokens", "24")
    expected = generate(prompt, *flags)
    got = submit(cluster, prompt, *flags)
    assert sequences(expected), expected
    assert sequences(got) == sequences(expected)
    for g, e in zip([l for l in got if "sequence" in l], [l for l in expected if "sequence" in l]):
        assert g["score"] == pytest.approx(e["score"], rel=1e-12)
    assert got[-1]["done"] and got[-1]["generated_tokens"] == expected[-1]["generated_tokens"]
    assert got[-1]["finish_reason"] == expected[-1]["finish_reason"]


def test_shards_count_their_reorders(cluster):
    before = {k: v["beam_reorders_total"] for k, v in _shard_status(cluster).items()}
    expected = generate("Say hello.", "--chat", "--num-beams", "4", "--max-tokens", "16", "--early-stopping", "never")
    submit(cluster, "Say hello.", "--chat", "--num-beams", "4", "--max-tokens", "16", "--early-stopping", "never")
    after = {k: v["beam_reorders_total"] for k, v in _shard_status(cluster).items()}
    copies = expected[-1]["beam_cache_copies"]  # the single process refilled as many rows
    assert copies >= 3  # at least the first step's fan-out from the prompt's row
    for shard in after:
        assert after[shard] - before.get(shard, 0) == copies, (before, after)


def test_http_beams_are_choices_equal_to_generate(cluster):
    # The official client, Hugging Face's names as extras: one choice per
    # returned sequence, best first, as `troupe generate` returns them.
    import openai
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{cluster.info['http_port']}/v1", api_key="unused",
                           max_retries=0, timeout=120)
    expected = generate("The quick brown fox", "--num-beams", "3", "--num-return-sequences", "2",
                        "--length-penalty", "0.5", "--early-stopping", "true", "--max-tokens", "24")
    r = client.completions.create(model="troupe", prompt="The quick brown fox", max_tokens=24, extra_body={
        "num_beams": 3, "num_return_sequences": 2, "length_penalty": 0.5, "early_stopping": True})
    assert [c.text for c in r.choices] == [t for _, t, _ in sequences(expected)]
    assert [c.finish_reason for c in r.choices] == [{"eos": "stop", "length": "length"}[f]
                                                    for _, _, f in sequences(expected)]
    assert r.usage.completion_tokens == sum(len(toks) for toks, _, _ in sequences(expected))
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="troupe", prompt="x", temperature=0.7, extra_body={"num_beams": 2})
    assert "temperature" in e.value.body["message"]


def test_cluster_refuses_bad_beam_settings_by_name(cluster):
    p = run("submit", "--endpoint", cluster.endpoint, "--prompt", "hi", "--num-beams", "2", "--top-p", "0.5")
    assert p.returncode != 0 and "top_p" in p.stderr, p.stderr


@pytest.mark.parametrize("victim_layers", [0, 1])
def test_a_dead_shard_loses_no_beams_when_a_replica_serves_its_layers(troupe_bin, model_path, victim_layers):
    # min_tokens = max_tokens: no eos, so the search runs all its steps and the
    # kill lands mid-search; the sampler replays every beam over the replica.
    n = 64
    prompt = "Tell me a long story about a lighthouse keeper."
    flags = ("--num-beams", "3", "--num-return-sequences", "3", "--max-tokens", str(n), "--min-tokens", str(n))
    expected = generate(prompt, *flags)
    c = Cluster(shards=2, extra=("--replicas", "2"))
    try:
        job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", prompt, *flags,
                                "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Wait until the search is under way: some reorders counted on a busy shard.
        deadline = time.time() + 60
        while True:
            status = _shard_status(c)
            busy = [k for k, v in status.items() if v.get("cache_bytes_in_use", 0) > 0]
            if busy and sum(status[k]["steps_total"] for k in busy) >= 2 * 8:
                break
            assert time.time() < deadline and job.poll() is None, (status, job.poll())
            time.sleep(0.05)
        span = c.info["nodes"][1 + 2 * victim_layers]["layers"]
        victims = [nd for nd in c.info["nodes"][1:] if nd["id"] in busy and nd["layers"] == span]
        assert len(victims) == 1, (busy, span)
        os.kill(victims[0]["pid"], signal.SIGKILL)
        out, err = job.communicate(timeout=180)
        assert job.returncode == 0, err
        got = json_lines(out)
        assert sequences(got) == sequences(expected), f"differs after killing {victims[0]['id']}"
        assert got[-1]["replays"] == 1, got[-1]
        head = json.loads(run("status", "--endpoint", c.endpoint, "--json").stdout)["nodes"]["head"]
        assert head["sessions_resumed_total"] == 1, head
    finally:
        c.stop()

"""Kept sessions end to end (issue 8, part 4 item 1): `troupe submit --session
NAME --keep` opens a conversation whose KV cache stays on its shards, later
jobs with `--session NAME` prefill only their new tokens — and every turn's
answer is exactly the answer of one job holding the whole conversation: a
fresh /v1/completions job whose prompt is the conversation's token ids
(prefilled from scratch), and, where the model's answers are tokenized the
canonical way, the HTTP chat job given the whole message list."""
import json
import os
import signal
import subprocess
import time

import pytest
import requests

from test_cluster import TROUPE_BIN, Cluster, json_lines, run, tokens

TURNS = ["What is the capital of France?", "And of Germany?", "Which of the two is bigger?"]
N = 24


def submit(c, prompt, *flags, check=True):
    p = run("submit", "--endpoint", c.endpoint, "--chat", "--prompt", prompt, "--max-tokens", N, "--json", *flags)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def answer(lines):
    return "".join(l["text"] for l in lines if "token" in l)


def nodes(c):
    p = run("status", "--endpoint", c.endpoint, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["nodes"]


def post(c, path, body):
    r = requests.post(f"http://127.0.0.1:{c.info['http_port']}/v1/{path}", timeout=120, json=body)
    assert r.status_code == 200, r.text
    return r.json()


def whole_conversation(c, history):
    """One HTTP chat job holding the whole conversation, rendered from text."""
    body = post(c, "chat/completions", {"messages": history, "temperature": 0, "max_tokens": N})
    return body["choices"][0]["message"]["content"], body["usage"]


def whole_context(c, ids):
    """One HTTP completion job whose prompt is the conversation's token ids."""
    body = post(c, "completions", {"prompt": ids, "temperature": 0, "max_tokens": N})
    return body["choices"][0]["text"], body["usage"]


def chat_tokens(text, continuation):
    p = run("tokenize", "--chat", "--text", text, *(["--continuation"] if continuation else []))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


IM_END = 2  # SmolLM2's <|im_end|>, its end-of-turn (eos) token


@pytest.fixture(scope="module")
def cluster(troupe_bin, model_path):
    # Without prefix reuse, so that the reference jobs prefill from scratch.
    c = Cluster(shards=2, extra=("--kept-session-ttl", "10", "--no-prefix-reuse"))
    yield c
    c.stop()


def test_three_turns_equal_the_whole_conversation_and_prefill_only_what_is_new(cluster):
    history, ids = [], []
    canonical_turns = 0
    for i, turn in enumerate(TURNS):
        before = nodes(cluster)["shard-1"]["batch_rows_total"]
        lines = json_lines(submit(cluster, turn, "--session", "conv", *(["--keep"] if i == 0 else [])).stdout)
        after = nodes(cluster)["shard-1"]["batch_rows_total"]
        done = lines[-1]
        # The context the session should hold: what came before, this turn
        # rendered as a continuation (its leading end-of-turn token dropped
        # when the previous answer ended with it).
        new = chat_tokens(turn, continuation=i > 0)
        if ids and ids[-1] == new[0] == IM_END:
            new = new[1:]
        cached = len(ids) - 1 if ids else 0
        ids += new
        expected, usage = whole_context(cluster, ids)
        assert answer(lines) == expected, f"turn {i + 1}: differs from one job holding the whole context"
        assert done["prompt_tokens"] == usage["prompt_tokens"] == len(ids)
        assert usage["prompt_tokens_details"]["cached_tokens"] == 0
        # Everything the earlier turns fed the model is reused: all but the
        # previous answer's last token, which no step had carried.
        assert done["cached_tokens"] == cached, f"turn {i + 1}"
        # The shard computed only the new tokens, then one row per decode step.
        assert after - before == done["prompt_tokens"] - done["cached_tokens"] + len(tokens(lines)) - 1
        history.append({"role": "user", "content": turn})
        text_answer, text_usage = whole_conversation(cluster, history)
        if text_usage["prompt_tokens"] == len(ids):  # the answers so far retokenize as generated
            canonical_turns += 1
            assert text_answer == expected, f"turn {i + 1}"
        history.append({"role": "assistant", "content": expected})
        ids += tokens(lines)
    assert canonical_turns >= 2
    head = nodes(cluster)["head"]
    assert head["prompt_tokens_reused_total"] > 0
    listed = json.loads(run("session", "list", "--endpoint", cluster.endpoint, "--json").stdout)["sessions"]
    assert [(s["name"], s["context_tokens"], s["jobs"]) for s in listed] == [("conv", len(ids), 3)]
    assert run("session", "close", "--endpoint", cluster.endpoint, "conv").returncode == 0


def test_unknown_closed_expired_and_busy_sessions_get_their_errors(cluster):
    p = submit(cluster, "Hi", "--session", "never-opened", check=False)
    assert p.returncode == 1 and "UNKNOWN_SESSION: no kept session 'never-opened'" in p.stderr
    submit(cluster, "Hi", "--session", "a", "--keep")
    p = submit(cluster, "Hi", "--session", "a", "--keep", check=False)
    assert p.returncode == 1 and "SESSION_EXISTS" in p.stderr
    # Busy: one job at a time per session.
    long_job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", cluster.endpoint, "--prompt", "Tell a story",
                                 "--session", "a", "--max-tokens", "300", "--min-tokens", "300", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert long_job.stdout.readline().startswith("{")  # it runs
        p = submit(cluster, "Hi", "--session", "a", check=False)
        assert p.returncode == 1 and "SESSION_BUSY: kept session 'a' is running job" in p.stderr
        # Closing it cancels its running job and frees the cache at once.
        assert run("session", "close", "--endpoint", cluster.endpoint, "a").returncode == 0
        out, err = long_job.communicate(timeout=60)
        assert long_job.returncode == 1 and "kept session 'a' was closed" in err
    finally:
        if long_job.poll() is None:
            long_job.kill()
    p = submit(cluster, "Hi", "--session", "a", check=False)
    assert p.returncode == 1 and "UNKNOWN_SESSION: kept session 'a' was closed" in p.stderr
    # Expired: this cluster's sessions live 10 s idle.
    submit(cluster, "Hi", "--session", "b", "--keep")
    time.sleep(11.5)
    p = submit(cluster, "Hi", "--session", "b", check=False)
    assert p.returncode == 1 and "UNKNOWN_SESSION: kept session 'b' expired after 10 s idle" in p.stderr
    # Too long for what it reserved.
    p = submit(cluster, "Hi " * 40, "--session", "c", "--keep", "--max-length", "20", check=False)
    assert p.returncode == 1 and "SESSION_FULL" in p.stderr
    # The service kept serving, and nothing is left holding cache.
    assert json_lines(submit(cluster, "Hi").stdout)[-1]["done"]
    deadline = time.time() + 10
    while any(v.get("cache_bytes_in_use") for k, v in nodes(cluster).items() if k.startswith("shard")):
        assert time.time() < deadline, nodes(cluster)
        time.sleep(0.2)


def test_a_shard_killed_during_turn_two_changes_nothing(troupe_bin, model_path):
    n = 120
    first, second = "Name a famous lighthouse.", "Tell me a long story about its keeper."
    c = Cluster(shards=2, extra=("--replicas", "2"))
    try:
        def turn_two(name, kill):
            submit(c, first, "--session", name, "--keep")
            route = json.loads(run("session", "list", "--endpoint", c.endpoint, "--json").stdout)["sessions"]
            route = [s for s in route if s["name"] == name][0]["route"]
            job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--chat", "--prompt", second,
                                    "--session", name, "--max-tokens", str(n), "--min-tokens", str(n), "--json"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            lines = [job.stdout.readline() for _ in range(8)]
            assert all(l.startswith("{") for l in lines), job.stderr.read()
            if kill:
                victim = [nd for nd in c.info["nodes"] if nd["id"] == route[0]][0]
                os.kill(victim["pid"], signal.SIGKILL)
            out, err = job.communicate(timeout=180)
            assert job.returncode == 0, err
            return json_lines("".join(lines) + out)

        disturbed = turn_two("killed", kill=True)
        assert disturbed[-1]["replays"] == 1
        calm = turn_two("calm", kill=False)
        assert calm[-1]["replays"] == 0 and calm[-1]["cached_tokens"] > 0
        assert tokens(disturbed) == tokens(calm)
        assert disturbed[-1]["prompt_tokens"] == calm[-1]["prompt_tokens"]
        # The session lives on over the replica: a third turn works.
        third = json_lines(submit(c, "Thanks!", "--session", "killed").stdout)
        assert third[-1]["done"] and third[-1]["cached_tokens"] > 0
    finally:
        c.stop()


def test_http_chat_in_a_kept_session_equals_the_cli_and_reports_cached_tokens(cluster):
    import openai
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{cluster.info['http_port']}/v1", api_key="unused",
                           max_retries=0, timeout=120)
    cli = [json_lines(submit(cluster, TURNS[0], "--session", "cli", "--keep").stdout),
           json_lines(submit(cluster, TURNS[1], "--session", "cli").stdout)]
    first = client.chat.completions.create(model="troupe", messages=[{"role": "user", "content": TURNS[0]}],
                                           temperature=0, max_tokens=N, extra_body={"session": "web", "keep": True})
    # The next turn sends only its new message.
    second = client.chat.completions.create(model="troupe", messages=[{"role": "user", "content": TURNS[1]}],
                                            temperature=0, max_tokens=N, extra_body={"session": "web"})
    assert [first.choices[0].message.content, second.choices[0].message.content] == [answer(t) for t in cli]
    assert second.usage.prompt_tokens == cli[1][-1]["prompt_tokens"]
    assert second.usage.prompt_tokens_details.cached_tokens == cli[1][-1]["cached_tokens"] > 0
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="troupe", messages=[{"role": "user", "content": "x"}],
                                       extra_body={"session": "nobody"})
    assert e.value.body["param"] == "session" and "no kept session 'nobody'" in e.value.body["message"]
    for name in ("cli", "web"):
        assert run("session", "close", "--endpoint", cluster.endpoint, name).returncode == 0

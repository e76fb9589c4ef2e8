"""The synchronous Client against a real cluster: its answers are those of
`troupe submit` and of the single-process `troupe generate`, token for token."""
import json
import threading
import time

import pytest

from conftest import DEFAULT_MODEL, generate_lines, run, submit_lines, text_of, token_ids

import troupe_client
from troupe_client import BadRequestError, Client, Result, Token

SAMPLED = dict(temperature=0.9, top_k=40, top_p=0.95, seed=1234, max_tokens=24)
SAMPLED_FLAGS = ("--temperature", "0.9", "--top-k", "40", "--top-p", "0.95", "--seed", "1234", "--max-tokens", "24")


def test_seeded_sampled_generate_equals_troupe_submit_and_generate(cluster, client):
    prompt = "Write one sentence about the sea."
    result = client.generate(prompt, **SAMPLED)
    assert isinstance(result, Result)
    via_cli = submit_lines(cluster, prompt, *SAMPLED_FLAGS)
    reference = generate_lines(prompt, *SAMPLED_FLAGS)
    assert result.tokens == token_ids(via_cli) == token_ids(reference)
    assert result.text == text_of(via_cli) == text_of(reference)
    done = via_cli[-1]
    assert result.finish_reason == done["finish_reason"]
    assert result.usage.prompt_tokens == done["prompt_tokens"]
    assert result.usage.completion_tokens == done["generated_tokens"] == len(result.tokens)
    assert result.usage.total_tokens == result.usage.prompt_tokens + result.usage.completion_tokens
    assert result.logprobs is None and result.sequences == []
    assert result.job_id > 0 and result.timings.total_seconds > 0


def test_greedy_generate_equals_generate_and_takes_token_ids(cluster, client):
    flags = ("--max-tokens", "12")
    reference = generate_lines("The capital of France is", *flags)
    assert client.generate("The capital of France is", max_tokens=12).tokens == token_ids(reference)
    # The same prompt as token ids (no BOS added; SmolLM2 adds none either).
    p = run("tokenize", "--text", "The capital of France is", "--model", DEFAULT_MODEL)
    assert p.returncode == 0, p.stderr
    ids = json.loads(p.stdout)
    assert client.generate(ids, max_tokens=12).tokens == token_ids(reference)


def test_stream_yields_tokens_one_by_one_and_ends_with_the_result(client):
    stream = client.stream("Count from one to twenty:", max_tokens=40, min_tokens=40)
    arrivals, tokens = [], []
    for token in stream:
        assert isinstance(token, Token)
        assert stream.result is None  # the job has not ended while tokens still come
        arrivals.append(time.monotonic())
        tokens.append(token)
    result = stream.result
    assert [t.index for t in tokens] == list(range(40))
    assert "".join(t.text for t in tokens) == result.text
    assert [t.token_id for t in tokens] == result.tokens
    assert stream.job_id == result.job_id
    assert stream.status is not None and stream.status.job_id == result.job_id
    # Each token came as it was sampled: the stream spans the decode time,
    # not one burst at the end.
    assert arrivals[-1] - arrivals[0] > 0.5 * result.timings.decode_seconds


def test_logprobs_top_alternatives_and_stop_strings(cluster, client):
    result = client.generate("The capital of France is", max_tokens=10, logprobs=3)
    lines = submit_lines(cluster, "The capital of France is", "--max-tokens", "10", "--logprobs", "3")
    assert result.logprobs is not None and len(result.logprobs) == len(result.tokens)
    for ours, theirs in zip(result.logprobs, [l for l in lines if "token" in l]):
        assert ours.logprob == pytest.approx(theirs["logprob"], abs=1e-6)
        assert [a.token_id for a in ours.top_logprobs] == [a["token"] for a in theirs["top_logprobs"]]
        assert ours.bytes  # the token's own bytes
    stopped = client.generate("The capital of France is", max_tokens=20, stop=[" is"])
    assert stopped.finish_reason in ("stop", "length", "eos")
    cli = submit_lines(cluster, "The capital of France is", "--max-tokens", "20", "--stop", " is")
    assert stopped.text == text_of(cli) and stopped.finish_reason == cli[-1]["finish_reason"]


def test_chat_equals_submit_chat_with_a_system_message(cluster, client):
    result = client.chat([{"role": "user", "content": "Name a colour."}], system="Answer in one word.", max_tokens=8)
    lines = submit_lines(cluster, "Name a colour.", "--chat", "--system", "Answer in one word.", "--max-tokens", "8")
    assert result.tokens == token_ids(lines) and result.text == text_of(lines)
    # A string is one user turn; a whole conversation goes as a list.
    assert client.chat("Name a colour.", system="Answer in one word.", max_tokens=8).tokens == result.tokens
    convo = client.chat(
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Bye"},
        ],
        max_tokens=6,
    )
    assert convo.usage.prompt_tokens > result.usage.prompt_tokens - 10 and convo.tokens


ODD = "Ünïcödé ✓ — 𝔘𝔫𝔦𝔠𝔬𝔡𝔢, 日本語のテキスト, עברית, 👩‍👩‍👧‍👦 and 🤖🔥 e\u0301\u200d:"


def test_odd_unicode_and_emoji_prompts_and_sampled_answers(cluster, client):
    # A hot sampler over emoji-heavy context often cuts characters between
    # tokens or samples stray bytes: the text must equal the CLI's (U+FFFD
    # for what never forms a character), token for token.
    for seed in (1, 2, 3):
        flags = dict(temperature=1.6, seed=seed, max_tokens=32)
        result = client.generate(ODD + " 🎉🎉", **flags)
        lines = submit_lines(cluster, ODD + " 🎉🎉", "--temperature", "1.6", "--seed", str(seed), "--max-tokens", "32")
        assert result.tokens == token_ids(lines)
        assert result.text == text_of(lines)
        result.text.encode("utf-8")  # valid UTF-8, always
    chat = client.chat("Reply with three emoji: 🍕🍣🌮", max_tokens=16)
    lines = submit_lines(cluster, "Reply with three emoji: 🍕🍣🌮", "--chat", "--max-tokens", "16")
    assert chat.text == text_of(lines)
    # A string Python cannot encode as UTF-8 never reaches the head.
    with pytest.raises(BadRequestError, match="the prompt is not valid UTF-8"):
        client.generate("broken \ud800 surrogate")


def test_beam_search_gives_every_returned_sequence_as_generate_does(client):
    flags = ("--num-beams", "3", "--num-return-sequences", "2", "--max-tokens", "10", "--length-penalty", "0.8")
    reference = [l for l in generate_lines("The best way to learn is", *flags) if "sequence" in l]
    result = client.generate("The best way to learn is", num_beams=3, num_return_sequences=2, max_tokens=10,
                             length_penalty=0.8, early_stopping=False)
    assert [s.tokens for s in result.sequences] == [r["tokens"] for r in reference]
    assert [s.text for s in result.sequences] == [r["text"] for r in reference]
    assert [s.score for s in result.sequences] == pytest.approx([r["score"] for r in reference], abs=1e-4)
    assert result.text == reference[0]["text"] and result.tokens == reference[0]["tokens"]
    never = client.generate("The best way to learn is", num_beams=2, max_tokens=6, early_stopping="never")
    assert len(never.sequences) == 1
    with pytest.raises(BadRequestError, match="temperature"):
        client.generate("x", num_beams=2, temperature=0.5)


def test_contrastive_without_an_amateur_model_is_refused_naming_it(client):
    # The shared cluster has no amateur model: the head refuses the option.
    with pytest.raises(BadRequestError) as e:
        client.generate("Hello", contrastive=True, contrastive_alpha=0.2, contrastive_beta=0.4, max_tokens=4)
    assert "amateur" in e.value.text and e.value.code == "BAD_REQUEST" and not e.value.retryable


def test_errors_are_typed_exceptions(client):
    with pytest.raises(BadRequestError) as e:
        client.generate("Hello", top_p=1.5)
    assert e.value.code == "BAD_REQUEST" and "top_p" in str(e.value) and e.value.retryable is False
    assert isinstance(e.value, troupe_client.TroupeError)
    with pytest.raises(troupe_client.UnknownSessionError, match="no kept session 'never-opened'"):
        client.generate("Hello", session="never-opened")
    with pytest.raises(TypeError, match="unknown generation option"):
        client.generate("Hello", temprature=0.5)
    with pytest.raises(troupe_client.UnknownJobError):
        client.status(123456789)


def test_a_malformed_endpoint_is_a_bad_request():
    with pytest.raises(BadRequestError, match="cannot connect to 'tcp://nohost'"):
        Client("tcp://nohost")


def test_no_cluster_is_a_timeout_not_a_hang():
    with Client("tcp://127.0.0.1:9", timeout=0.5, retries=1) as c:  # nothing listens on port 9
        start = time.monotonic()
        with pytest.raises(troupe_client.TimeoutError) as e:
            c.generate("Hello")
        assert isinstance(e.value, TimeoutError) and e.value.retryable
        assert "no answer from tcp://127.0.0.1:9" in str(e.value)
        assert time.monotonic() - start < 5


def test_one_client_shared_by_threads(client):
    prompts = ["One", "Two", "Three", "Four"]
    results = {}

    def work(p):
        results[p] = client.generate(p, max_tokens=6)

    threads = [threading.Thread(target=work, args=(p,)) for p in prompts]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    alone = {p: client.generate(p, max_tokens=6).tokens for p in prompts}
    assert {p: r.tokens for p, r in results.items()} == alone


def test_metrics_count_the_jobs(client):
    before = client.metrics()
    client.generate("Hi", max_tokens=2)
    after = client.metrics()
    assert any(k.startswith("head/") for k in after.counters)
    key = "head/prompt_tokens_prefilled_total"
    assert after.counters[key] > before.counters.get(key, 0)


def test_prompt_logprobs_equal_troupe_score(client):
    p = run("score", "--text", "The capital of France is", "--model", DEFAULT_MODEL)
    assert p.returncode == 0, p.stderr
    score = json.loads(p.stdout)
    result = client.generate("The capital of France is", max_tokens=1, prompt_logprobs=2)
    prompt = result.prompt_logprobs
    assert [t.token_id for t in prompt] == score["tokens"]
    assert prompt[0].logprob is None  # nothing before the first token
    assert [t.logprob for t in prompt[1:]] == pytest.approx(score["logprobs"], abs=1e-3)
    assert all(len(t.top_logprobs) == 2 for t in prompt[1:])
    assert [t.top_logprobs[0].token_id for t in prompt[1:]] == score["argmax"][:-1]

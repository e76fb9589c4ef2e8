"""Gemma 3 270M, the second real model family (issue 15, part 11): a
Q4_K_M GGUF with Q8_0, Q5_0, Q4_K and Q6_K tensors, GeGLU, q/k norms,
post-norms, sliding-window layers with their own RoPE base, a 262k-token
SentencePiece vocabulary and no chat template in the file. Installed by
scripts/setup.sh --with-test-deps into .deps/model-gemma3.

Against llama.cpp's one-token path (n_batch = n_ubatch = 1, no flash
attention), as test_conformance.py does for the default model:
- teacher-forced, 20 texts: the same tokens, the same argmax everywhere and
  every logprob equal to float rounding (the bar: bit-exact);
- greedy chat continuations identical for 32 tokens, the prompt rendered from
  Gemma 3's official template with jinja2 and tokenized by llama.cpp;
and through the ring (head + 3 shards): greedy and sampled answers equal the
single process's, also when a shard dies mid-answer and a replica takes over.
"""
import json
import os
import signal
import subprocess

import jinja2
import numpy as np
import pytest

from conftest import ROOT, TROUPE_BIN, llama_threads, run_troupe_json_lines, score_batch
from conformance_texts import CHAT_PROMPTS, TOPICS, make_text

GEMMA = ROOT / ".deps" / "model-gemma3" / "gemma-3-270m-q4_k_m.gguf"
GEMMA_TEMPLATE = ROOT / "tests" / "pipeline" / "text" / "testdata" / "chat_templates" / "gemma-3-it.jinja"

pytestmark = pytest.mark.skipif(not GEMMA.exists(), reason=f"scripts/setup.sh --with-test-deps installs {GEMMA}")
llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh --with-test-deps")


@pytest.fixture(scope="module")
def llm_one_token():
    return llama_cpp.Llama(model_path=str(GEMMA), n_ctx=1024, n_threads=llama_threads(), n_batch=1, n_ubatch=1,
                           logits_all=True, verbose=False)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def test_teacher_forced_logits_are_llama_cpps(troupe_bin, llm_one_token, tmp_path):
    agree = total = 0
    deltas = []
    texts = [make_text(i, topic) for i, topic in enumerate(TOPICS)]
    for text, ours in zip(texts, score_batch(tmp_path, texts, "--model", GEMMA), strict=True):
        tokens = ours["tokens"]
        assert tokens == llm_one_token.tokenize(text.encode(), add_bos=True, special=True)
        assert len(tokens) >= 64
        llm_one_token.reset()
        llm_one_token.eval(tokens)
        ref = log_softmax(np.array(llm_one_token.scores[: len(tokens)]))
        agree += int((np.array(ours["argmax"]) == ref.argmax(axis=-1)).sum())
        total += len(tokens)
        deltas.extend(np.abs(np.array(ours["logprobs"]) - ref[np.arange(len(tokens) - 1), tokens[1:]]).tolist())
    print(f"\nGemma 3 270M, troupe vs llama.cpp one-token path: top-1 agreement {agree / total:.4f} over {total} "
          f"positions, mean |Δ logprob| {np.mean(deltas):.2e}, max {np.max(deltas):.2e}")
    assert agree == total
    assert max(deltas) <= 1e-4  # float rounding of the log-softmax only: the logits are the same bits


def reference_chat_tokens(llm, prompt):
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    text = env.from_string(GEMMA_TEMPLATE.read_text()).render(
        messages=[{"role": "user", "content": prompt}], add_generation_prompt=True, bos_token="<bos>")
    return llm.tokenize(text.encode(), add_bos=False, special=True)


@pytest.mark.parametrize("prompt", CHAT_PROMPTS)
def test_greedy_chat_continuations_are_llama_cpps(troupe_bin, llm_one_token, prompt):
    lines = run_troupe_json_lines("generate", "--model", GEMMA, "--chat", "--prompt", prompt, "--max-tokens", 32,
                                  "--json")
    ours = [l["token"] for l in lines if "token" in l]
    prompt_tokens = reference_chat_tokens(llm_one_token, prompt)
    assert lines[-1]["prompt_tokens"] == len(prompt_tokens)
    llm = llm_one_token
    llm.reset()
    llm.eval(prompt_tokens)
    ref = []
    end = {llm.token_eos(), llm.tokenize(b"<end_of_turn>", add_bos=False, special=True)[0]}
    for _ in range(32):
        tok = int(np.argmax(np.array(llm.scores[llm.n_tokens - 1])))
        if tok in end:
            break
        ref.append(tok)
        llm.eval([tok])
    print(f"{prompt!r}: {len(ref)} tokens")
    assert len(ref) >= 8
    assert ours == ref


def _generate(prompt, *flags):
    return [l["token"] for l in run_troupe_json_lines("generate", "--model", GEMMA, "--prompt", prompt, "--threads",
                                                     "1", "--json", *flags) if "token" in l]


def _submit(endpoint, prompt, *flags):
    return [l["token"] for l in run_troupe_json_lines("submit", "--endpoint", endpoint, "--prompt", prompt, "--json",
                                                     *flags) if "token" in l]


def test_ring_answers_as_the_single_process(troupe_bin):
    from test_cluster import Cluster
    c = Cluster(shards=3, model=GEMMA)
    try:
        for prompt, flags in [("The capital of France is", ("--max-tokens", "24")),
                              ("Write a haiku about autumn leaves.", ("--chat", "--max-tokens", "32")),
                              ("Once upon a time", ("--max-tokens", "32", "--temperature", "0.9", "--seed", "5"))]:
            assert _submit(c.endpoint, prompt, *flags) == _generate(prompt, *flags), prompt
    finally:
        c.stop()


def test_a_dead_shard_loses_no_work(troupe_bin):
    from test_cluster import Cluster, _shard_status
    n = 96
    prompt = "Tell me a long story about a lighthouse keeper."
    flags = ("--max-tokens", str(n), "--min-tokens", str(n))
    expected = _generate(prompt, *flags)
    c = Cluster(shards=2, extra=("--replicas", "2"), model=GEMMA)
    try:
        job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", prompt, *flags,
                                "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = [job.stdout.readline() for _ in range(6)]
        assert all(l.startswith("{") for l in lines), job.stderr.read()
        busy = [k for k, v in _shard_status(c).items() if v["cache_bytes_in_use"] > 0]
        victim = next(nd for nd in c.info["nodes"][1:] if nd["id"] in busy)
        os.kill(victim["pid"], signal.SIGKILL)
        out, err = job.communicate(timeout=180)
        assert job.returncode == 0, err
        got = [json.loads(l) for l in ("".join(lines) + out).splitlines() if l.strip()]
        assert [l["token"] for l in got if "token" in l] == expected
        assert got[-1]["replays"] == 1
    finally:
        c.stop()

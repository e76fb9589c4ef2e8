"""Contrastive decoding (`troupe generate --amateur-model`) against an independent reference.

The amateur is real: the default model cut to its first AMATEUR_LAYERS layers,
written by the test as a GGUF (make_cut_model.py), which llama.cpp loads too.
The reference runs both models in llama.cpp (llama-cpp-python, one-token path
as in test_conformance.py), and at every step combines their logits as Li et
al. 2022 / x-transformers define it:

    keep     = p_e >= alpha * max p_e
    score    = (1 + beta) * log_softmax(expert) - beta * log_softmax(amateur) on kept tokens, else -inf

then picks argmax(score) (greedy) or draws from softmax(score / T) with the
documented draw of pipeline/sampling/sampler.h (inverse CDF over the kept
tokens in id order, u = UniformAt(seed, step), SplitMix64 as in
pipeline/sampling/counter_rng.h) — reimplemented here from those definitions.

The second half runs a cluster whose head holds the same amateur and checks
that it answers as `troupe generate` does: `submit` greedy and sampled, the
HTTP extra `contrastive`, a shard killed mid-answer (replica present), and a
head without an amateur refusing contrastive jobs.
"""
import functools
import math
import pathlib
import sys

import jinja2
import numpy as np
import pytest

from conftest import TROUPE_BIN, run_troupe_json_lines

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_cut_model import write_cut_model  # noqa: E402

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh --with-test-deps")

AMATEUR_LAYERS = 6
MAX_TOKENS = 24
PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Give me three tips for learning to cook.",
]
GREEDY_SETTINGS = [(0.1, 0.5), (0.02, 2.0), (0.5, 1.0)]  # (alpha, beta)


@pytest.fixture(scope="module")
def amateur_path(tmp_path_factory, model_path):
    path = tmp_path_factory.mktemp("amateur") / f"cut{AMATEUR_LAYERS}.gguf"
    write_cut_model(model_path, path, AMATEUR_LAYERS)
    return path


def one_token_llama(path):
    # One thread: on a busy 2-core machine llama.cpp's spinning thread barrier costs more than it gains.
    return llama_cpp.Llama(model_path=str(path), n_ctx=512, n_threads=1, n_batch=1, n_ubatch=1, logits_all=True,
                           verbose=False)


@pytest.fixture(scope="module")
def expert_llm(model_path):
    return one_token_llama(model_path)


@pytest.fixture(scope="module")
def amateur_llm(amateur_path):
    return one_token_llama(amateur_path)


@functools.lru_cache(maxsize=None)
def chat_template(model_path):
    from gguf import GGUFReader

    field = GGUFReader(str(model_path)).fields["tokenizer.chat_template"]
    return bytes(field.parts[field.data[0]]).decode()


def chat_tokens(llm, model_path, prompt):
    source = chat_template(model_path)
    text = jinja2.Environment().from_string(source).render(
        messages=[{"role": "user", "content": prompt}], add_generation_prompt=True)
    return llm.tokenize(text.encode(), add_bos=False, special=True)


def log_softmax(x):
    x = np.asarray(x, dtype=np.float64)
    m = x.max()
    return x - m - math.log(np.exp(x - m).sum())


def contrastive_scores(expert, amateur, alpha, beta):
    expert = np.asarray(expert, dtype=np.float64)
    keep = expert - expert.max() >= (math.log(alpha) if alpha > 0 else -math.inf)
    score = (1 + beta) * log_softmax(expert) - beta * log_softmax(amateur)
    return np.where(keep, score, -np.inf)


MASK64 = (1 << 64) - 1


def mix64(x):
    z = (x + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def uniform_at(seed, step):
    bits = mix64((mix64(seed) + step * 0x9E3779B97F4A7C15) & MASK64)
    return (bits >> 11) * 2.0**-53


def draw(scores, temperature, seed, step):
    kept = np.flatnonzero(np.isfinite(scores))  # id order
    z = (scores[kept] - scores[kept].max()) / temperature
    p = np.exp(z)
    cumulative = np.cumsum(p)
    target = uniform_at(seed, step) * cumulative[-1]
    return int(kept[min(np.searchsorted(cumulative, target, side="right"), len(kept) - 1)])


def reference(expert_llm, amateur_llm, prompt_tokens, alpha, beta, temperature=0.0, seed=0):
    """Tokens of contrastive decoding, step by step over llama.cpp's logits of both models; also the
    margin between the best and second-best score at each greedy step."""
    for llm in (expert_llm, amateur_llm):
        llm.reset()
        llm.eval(prompt_tokens)
    eos = expert_llm.token_eos()
    tokens, margins = [], []
    for step in range(MAX_TOKENS):
        scores = contrastive_scores(expert_llm.scores[expert_llm.n_tokens - 1],
                                    amateur_llm.scores[amateur_llm.n_tokens - 1], alpha, beta)
        if temperature > 0:
            tok = draw(scores, temperature, seed, step)
        else:
            tok = int(np.argmax(scores))
            top2 = np.sort(scores[np.isfinite(scores)])[-2:]
            margins.append(float(top2[-1] - top2[0]) if len(top2) == 2 else math.inf)
        if tok == eos:
            break
        tokens.append(tok)
        for llm in (expert_llm, amateur_llm):
            llm.eval([tok])
    return tokens, margins


def ours(*flags):
    lines = run_troupe_json_lines("generate", "--chat", "--max-tokens", MAX_TOKENS, "--json", "--threads", 1, *flags)
    assert lines[-1]["done"] is True
    return [l["token"] for l in lines if "token" in l], lines[-1]


@functools.lru_cache(maxsize=None)
def plain_greedy(prompt):
    return ours("--prompt", prompt)[0]


def first_split(a, b):
    split = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)
    if split is None and len(a) != len(b):
        split = min(len(a), len(b))
    return split


@pytest.mark.parametrize("alpha,beta", GREEDY_SETTINGS)
def test_greedy_contrastive_equals_the_reference(troupe_bin, model_path, amateur_path, expert_llm, amateur_llm,
                                                 alpha, beta):
    differs_from_plain = 0
    for prompt in PROMPTS:
        got, done = ours("--prompt", prompt, "--amateur-model", amateur_path, "--contrastive-alpha", alpha,
                         "--contrastive-beta", beta)
        prompt_tokens = chat_tokens(expert_llm, model_path, prompt)
        assert done["prompt_tokens"] == len(prompt_tokens)
        want, margins = reference(expert_llm, amateur_llm, prompt_tokens, alpha, beta)
        split = first_split(got, want)
        print(f"alpha {alpha} beta {beta} {prompt!r}: identical over "
              f"{split if split is not None else len(want)} tokens, smallest margin {min(margins):.2e}")
        assert len(want) >= 8, "the reference answer is too short to compare"
        assert split is None, f"diverged at token {split} (margin {margins[split]:.2e})\nours {got}\nref  {want}"
        differs_from_plain += plain_greedy(prompt) != got
    # The amateur must matter: contrastive answers are not the plain greedy ones.
    assert differs_from_plain > 0


@pytest.mark.parametrize("prompt", PROMPTS[:2])
def test_sampled_contrastive_equals_the_reference(troupe_bin, model_path, amateur_path, expert_llm, amateur_llm,
                                                  prompt):
    alpha, beta, temperature, seed = 0.05, 1.0, 0.9, 23
    got, _ = ours("--prompt", prompt, "--amateur-model", amateur_path, "--contrastive-alpha", alpha,
                  "--contrastive-beta", beta, "--temperature", temperature, "--seed", seed)
    want, _ = reference(expert_llm, amateur_llm, chat_tokens(expert_llm, model_path, prompt), alpha, beta,
                        temperature, seed)
    assert len(want) >= 8
    assert got == want, f"diverged at token {first_split(got, want)}\nours {got}\nref  {want}"


def test_amateur_equal_to_expert_is_plain_greedy(troupe_bin, model_path):
    prompt = PROMPTS[1]
    plain = plain_greedy(prompt)
    for alpha, beta in [(0.1, 0.5), (0.9, 5.0), (0.0, 100.0)]:
        got, _ = ours("--prompt", prompt, "--amateur-model", model_path, "--contrastive-alpha", alpha,
                      "--contrastive-beta", beta)
        assert got == plain, (alpha, beta)


def test_amateur_equal_to_expert_samples_like_min_p(troupe_bin, model_path):
    # Sampled, the expert as its own amateur keeps the expert's logits on the plausible set: min-p = alpha.
    flags = ["--prompt", PROMPTS[0], "--temperature", "1.0", "--seed", "5"]
    plain, _ = ours(*flags, "--min-p", "0.05")
    got, _ = ours(*flags, "--amateur-model", model_path, "--contrastive-alpha", "0.05", "--contrastive-beta", "3")
    assert got == plain


def failing_generate(*args):
    import subprocess

    proc = subprocess.run([str(TROUPE_BIN), "generate", "--max-tokens", "2", *map(str, args)], capture_output=True,
                          timeout=120)
    assert proc.returncode != 0
    return proc.stderr.decode(errors="replace")


def test_an_amateur_with_another_vocabulary_is_refused(troupe_bin, model_path, tmp_path):
    renamed = tmp_path / "renamed.gguf"
    write_cut_model(model_path, renamed, 2, rename_token=(1000, "not-the-same-token"))
    err = failing_generate("--prompt", "Hi", "--amateur-model", renamed)
    assert "vocabulary" in err and str(renamed) in err and model_path.name in err, err
    assert "different token bytes" in err, err

    import make_tiny_llama

    assert make_tiny_llama.main([str(tmp_path / "tiny"), "--seed", "1"]) == 0
    tiny = tmp_path / "tiny" / "tiny.gguf"
    err = failing_generate("--prompt", "Hi", "--amateur-model", tiny)
    assert "vocabulary" in err and str(tiny) in err and model_path.name in err and "different sizes" in err, err


def test_contrastive_without_an_amateur_is_refused(troupe_bin):
    err = failing_generate("--prompt", "Hi", "--contrastive")
    assert "amateur" in err, err
    err = failing_generate("--prompt", "Hi", "--contrastive-alpha", "1.5")
    assert "contrastive_alpha" in err, err


# ---------------------------------------------------------------- the cluster
# The amateur lives on the head (`cluster up --amateur-model`), beside the
# sampler, with its own cache per session; the cluster's answer must be
# `troupe generate`'s, also over HTTP and across a shard's death.

def cluster_generate(amateur_path, prompt, *flags):
    lines = run_troupe_json_lines("generate", "--prompt", prompt, "--json", "--threads", "1", "--amateur-model",
                                  amateur_path, *flags)
    return [l["token"] for l in lines if "token" in l], lines[-1]


@pytest.fixture(scope="module")
def amateur_cluster(troupe_bin, amateur_path):
    from test_cluster import Cluster

    c = Cluster(shards=2, extra=("--replicas", "2", "--amateur-model", str(amateur_path), "--http-port", "0"))
    yield c
    c.stop()


def submit_tokens(cluster, prompt, *flags):
    from test_cluster import json_lines, run

    p = run("submit", "--endpoint", cluster.endpoint, "--prompt", prompt, "--json", *flags)
    assert p.returncode == 0, f"submit failed: {p.stderr}"
    lines = json_lines(p.stdout)
    return [l["token"] for l in lines if "token" in l], lines[-1]


CLUSTER_FLAGS = [
    ("--max-tokens", "24", "--contrastive-alpha", "0.1", "--contrastive-beta", "1.0"),
    ("--max-tokens", "24", "--contrastive-alpha", "0.02", "--contrastive-beta", "0.5", "--temperature", "0.9",
     "--seed", "7"),
]


@pytest.mark.parametrize("flags", CLUSTER_FLAGS, ids=["greedy", "sampled"])
def test_cluster_contrastive_equals_generate(amateur_cluster, amateur_path, flags):
    for prompt in ["The capital of France is", "Once upon a time, in a small village,"]:
        want, _ = cluster_generate(amateur_path, prompt, *flags)
        got, done = submit_tokens(amateur_cluster, prompt, *flags)
        assert got == want, prompt
        assert done["done"] is True
    plain, _ = submit_tokens(amateur_cluster, "Once upon a time, in a small village,", *flags[:2])
    assert plain != got, "the cluster's contrastive answer must not be the plain one"


def test_http_contrastive_equals_generate(amateur_cluster, amateur_path):
    import json
    import urllib.request

    prompt = "Once upon a time, in a small village,"
    lines = run_troupe_json_lines("generate", "--prompt", prompt, "--json", "--threads", "1", "--amateur-model",
                                  amateur_path, "--max-tokens", "16", "--contrastive-alpha", "0.1",
                                  "--contrastive-beta", "1.0")
    want = [l["text"] for l in lines if "token" in l]
    body = {"prompt": prompt, "max_tokens": 16, "temperature": 0, "logprobs": 0,
            "contrastive": {"alpha": 0.1, "beta": 1.0}}
    req = urllib.request.Request(f"{amateur_cluster.info['http_url']}/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        answer = json.loads(resp.read())["choices"][0]
    assert answer["text"] == "".join(want)
    # Legacy logprobs list the answer token by token: the same tokens as generate's.
    assert len(answer["logprobs"]["tokens"]) == len(want)
    assert "".join(answer["logprobs"]["tokens"]) == answer["text"]


def test_cluster_contrastive_survives_a_dead_shard(amateur_cluster, amateur_path):
    # A replay re-prefills the shards; the head's amateur cache is asked for
    # the same history again and must give the same row.
    import os
    import signal
    import subprocess

    from test_cluster import _shard_status, json_lines

    n = 128
    prompt = "Tell me a long story about a lighthouse keeper."
    flags = ("--max-tokens", str(n), "--min-tokens", str(n), "--contrastive-alpha", "0.1", "--contrastive-beta", "0.5")
    want, _ = cluster_generate(amateur_path, prompt, *flags)
    assert len(want) == n  # min_tokens holds under contrastive decoding too
    c = amateur_cluster
    job = subprocess.Popen([str(TROUPE_BIN), "submit", "--endpoint", c.endpoint, "--prompt", prompt, "--json", *flags],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [job.stdout.readline() for _ in range(8)]
    assert all(l.startswith("{") for l in lines), job.stderr.read()
    busy = [k for k, v in _shard_status(c).items() if v.get("cache_bytes_in_use", 0) > 0]
    victims = [nd for nd in c.info["nodes"][1:] if nd["id"] in busy]
    assert victims, busy
    os.kill(victims[0]["pid"], signal.SIGKILL)
    out, err = job.communicate(timeout=120)
    assert job.returncode == 0, err
    got = json_lines("".join(lines) + out)
    assert [l["token"] for l in got if "token" in l] == want
    assert got[-1]["replays"] == 1


def test_a_head_without_an_amateur_refuses_contrastive_jobs(troupe_bin):
    from test_cluster import Cluster, run

    c = Cluster(shards=1)
    try:
        p = run("submit", "--endpoint", c.endpoint, "--prompt", "Hi", "--max-tokens", "2", "--contrastive")
        assert p.returncode != 0
        assert "BAD_REQUEST" in p.stderr and "amateur model" in p.stderr, p.stderr
        p = run("submit", "--endpoint", c.endpoint, "--prompt", "Hi", "--max-tokens", "2")
        assert p.returncode == 0, p.stderr  # the head keeps serving
    finally:
        c.stop()

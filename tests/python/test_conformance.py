"""Conformance with llama.cpp (llama-cpp-python) on the same GGUF file.

Teacher-forced: on 20 texts of >= 64 tokens, our per-position argmax agrees
with llama.cpp's on >= 99% of positions and the mean |Δ logprob| of the actual
next token is <= 0.05. Free-running: greedy continuations of 5 chat prompts are
identical for the first 32 tokens. The chat prompt for llama.cpp is rendered
from the GGUF's own Jinja template with jinja2 and tokenized by llama.cpp, so
our chat template and tokenizer are checked on the way.
"""
import json

import jinja2
import numpy as np
import pytest

from conftest import run_troupe, run_troupe_json_lines

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh --with-test-deps")

TOPICS = [
    "the history of the printing press", "how bees make honey", "the water cycle",
    "why the sky is blue", "the rules of chess", "how a compiler works", "the French Revolution",
    "photosynthesis in plants", "the life of a star", "how vaccines train the immune system",
    "the invention of the telephone", "plate tectonics", "the Roman aqueducts",
    "how the internet routes packets", "the migration of birds", "the structure of DNA",
    "coffee cultivation in Ethiopia", "the theory of evolution", "jazz music in New Orleans",
    "the first moon landing",
]


def make_text(i, topic):
    return (
        f"Chapter {i + 1}: {topic.capitalize()}.\n\n"
        f"People have long been curious about {topic}. In this short essay we look at where the idea "
        f"came from, what scientists and historians have learned about it, and why it still matters "
        f"today. First, we describe the basic facts in plain words. Then we look at three common "
        f"misunderstandings, and finally we explain what questions remain open for researchers. "
        f"By the end, the reader should be able to explain {topic} to a friend in a few sentences."
    )


@pytest.fixture(scope="module")
def llm(model_path):
    return llama_cpp.Llama(model_path=str(model_path), n_ctx=1024, n_threads=2, logits_all=True, verbose=False)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def test_teacher_forced_logits_match_llama_cpp(troupe_bin, llm):
    agree = total = 0
    deltas = []
    for i, topic in enumerate(TOPICS):
        ours = json.loads(run_troupe("score", "--text", make_text(i, topic)))
        tokens = ours["tokens"]
        assert len(tokens) >= 64, f"text {i} has only {len(tokens)} tokens"
        # Same tokenization as llama.cpp's own (no BOS for this model).
        assert llm.tokenize(make_text(i, topic).encode(), add_bos=False, special=True) == tokens
        llm.reset()
        llm.eval(tokens)
        ref = log_softmax(np.array(llm.scores[: len(tokens)]))
        ref_argmax = ref.argmax(axis=-1)
        agree += int((np.array(ours["argmax"]) == ref_argmax).sum())
        total += len(tokens)
        ref_lp = ref[np.arange(len(tokens) - 1), tokens[1:]]
        deltas.extend(np.abs(np.array(ours["logprobs"]) - ref_lp).tolist())
    agreement = agree / total
    mean_delta = float(np.mean(deltas))
    print(f"top-1 agreement {agreement:.4f} over {total} positions; mean |Δ logprob| {mean_delta:.4f}")
    assert agreement >= 0.99
    assert mean_delta <= 0.05


CHAT_PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain in two sentences what a CPU does.",
    "Give me three tips for learning to cook.",
    "What is 12 times 7?",
]


def reference_chat_tokens(llm, model_path, prompt):
    from gguf import GGUFReader

    reader = GGUFReader(str(model_path))
    field = reader.fields["tokenizer.chat_template"]
    source = bytes(field.parts[field.data[0]]).decode()
    text = jinja2.Environment().from_string(source).render(
        messages=[{"role": "user", "content": prompt}], add_generation_prompt=True)
    return llm.tokenize(text.encode(), add_bos=False, special=True)


@pytest.mark.parametrize("prompt", CHAT_PROMPTS)
def test_greedy_chat_continuations_match_llama_cpp(troupe_bin, llm, model_path, prompt):
    lines = run_troupe_json_lines("generate", "--chat", "--prompt", prompt, "--max-tokens", 32, "--json")
    ours = [l["token"] for l in lines if "token" in l]
    assert lines[-1]["done"] is True
    prompt_tokens = reference_chat_tokens(llm, model_path, prompt)
    assert lines[-1]["prompt_tokens"] == len(prompt_tokens)
    llm.reset()
    llm.eval(prompt_tokens)
    ref = []
    eos = llm.token_eos()
    for _ in range(32):
        tok = int(np.argmax(llm.scores[llm.n_tokens - 1]))
        if tok == eos:  # our stream ends here too (the end marker is not printed)
            break
        ref.append(tok)
        llm.eval([tok])
    assert len(ref) >= 8, "the reference answer is too short to compare"
    assert ours == ref, f"ours {ours}\nref  {ref}"

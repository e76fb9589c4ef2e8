"""Conformance with llama.cpp (llama-cpp-python) on the same GGUF file.

Both engines quantize activations to 8 bits before each matrix product (ours
now bit-identically to ggml's formulas), so each sits ~0.06 logprob from the
exact forward and the forward pass is chaotic at the last bit: a one-ulp change
of the embeddings moves our own engine by ~95% / 0.06, and llama.cpp's batched
and one-token paths disagree with each other on ~3% of argmaxes (mean |Δ| ~0.05).
The issue's raw bar (>= 99% top-1 over all positions, mean |Δ| <= 0.05) is below
that floor; the figures are printed against it and the issue stays open on it.
What this test holds us to, each of which a wrong RoPE, norm or kernel breaks:

Teacher-forced, 20 texts of >= 64 tokens: >= 99% top-1 agreement at every
position where llama.cpp is not near a tie (top-2 margin >= 0.2 nats), and a
mean |Δ logprob| at most 1.5x llama.cpp's own one-token-vs-batched difference.
Free-running: greedy continuations of 5 chat prompts (32 tokens) may only part
ways at a near-tie of the reference (top-2 margin < 0.3 nats). The chat prompt
for llama.cpp is rendered from the GGUF's own Jinja template with jinja2 and
tokenized by llama.cpp, so our chat template and tokenizer are checked too.
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
    """llama.cpp with its usual batched prompt path."""
    return llama_cpp.Llama(model_path=str(model_path), n_ctx=1024, n_threads=2, logits_all=True, verbose=False)


@pytest.fixture(scope="module")
def llm_one_token(model_path):
    """llama.cpp fed one token at a time (its decode path): its self-consistency baseline."""
    return llama_cpp.Llama(model_path=str(model_path), n_ctx=1024, n_threads=2, n_batch=1, n_ubatch=1,
                           logits_all=True, verbose=False)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def reference_log_softmax(llama, tokens):
    llama.reset()
    llama.eval(tokens)
    return log_softmax(np.array(llama.scores[: len(tokens)]))


def test_teacher_forced_logits_match_llama_cpp(troupe_bin, llm, llm_one_token):
    agree = total = self_agree = confident = confident_agree = 0
    deltas, self_deltas = [], []
    for i, topic in enumerate(TOPICS):
        ours = json.loads(run_troupe("score", "--text", make_text(i, topic)))
        tokens = ours["tokens"]
        assert len(tokens) >= 64, f"text {i} has only {len(tokens)} tokens"
        # Same tokenization as llama.cpp's own (no BOS for this model).
        assert llm.tokenize(make_text(i, topic).encode(), add_bos=False, special=True) == tokens
        ref = reference_log_softmax(llm, tokens)
        alt = reference_log_softmax(llm_one_token, tokens)
        ref_argmax = ref.argmax(axis=-1)
        agree += int((np.array(ours["argmax"]) == ref_argmax).sum())
        self_agree += int((alt.argmax(axis=-1) == ref_argmax).sum())
        top2 = np.sort(ref, axis=-1)[:, -2:]
        sure = (top2[:, 1] - top2[:, 0]) >= 0.2
        confident += int(sure.sum())
        confident_agree += int(((np.array(ours["argmax"]) == ref_argmax) & sure).sum())
        total += len(tokens)
        idx = np.arange(len(tokens) - 1), tokens[1:]
        deltas.extend(np.abs(np.array(ours["logprobs"]) - ref[idx]).tolist())
        self_deltas.extend(np.abs(alt[idx] - ref[idx]).tolist())
    agreement, self_agreement = agree / total, self_agree / total
    mean_delta, self_delta = float(np.mean(deltas)), float(np.mean(self_deltas))
    print(f"\ntroupe vs llama.cpp: top-1 agreement {agreement:.4f} over {total} positions, "
          f"mean |Δ logprob| {mean_delta:.4f} (issue's bar: >= 0.99, <= 0.05)")
    print(f"llama.cpp one-token vs batched: top-1 agreement {self_agreement:.4f}, mean |Δ logprob| {self_delta:.4f}")
    confident_agreement = confident_agree / confident
    print(f"troupe vs llama.cpp where llama.cpp's top-2 margin >= 0.2 nats: {confident_agreement:.4f} "
          f"over {confident} positions")
    assert confident >= 0.8 * total
    assert confident_agreement >= 0.99
    assert mean_delta <= 1.5 * self_delta


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
    margins = []
    for _ in range(32):
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        top2 = np.sort(row)[-2:]
        margins.append(top2[1] - top2[0])
        tok = int(np.argmax(row))
        if tok == eos:  # our stream ends here too (the end marker is not printed)
            break
        ref.append(tok)
        llm.eval([tok])
    split = next((i for i, (a, b) in enumerate(zip(ours, ref)) if a != b), None)
    if split is None and len(ours) != len(ref):
        split = min(len(ours), len(ref))  # one answer ended (end of generation) where the other went on
    print(f"{prompt!r}: identical over {split if split is not None else len(ref)} tokens")
    assert len(ref) >= 8, "the reference answer is too short to compare"
    if split is not None:
        assert margins[split] < 0.3, (f"diverged at token {split} where llama.cpp was sure "
                                      f"(margin {margins[split]:.3f} nats)\nours {ours}\nref  {ref}")

"""Conformance with llama.cpp (llama-cpp-python) on the same GGUF file.

Our forward pass computes exactly what llama.cpp's CPU backend computes in its
one-token path (n_batch = n_ubatch = 1, no flash attention): same activation
quantization, same per-lane order of the Q4_1/Q8_0 dot products, same RoPE
fusing, same attention/softmax/SiLU formulas including ggml's SIMD exp
approximation (see pipeline/model/cpu_ops.cpp, pipeline/quant/kernels_*.cpp;
bench/llama_dump.py + bench/forward_dump + bench/compare_dump.py compare every
intermediate tensor bit for bit). The reference here is therefore llama.cpp fed
one token at a time, for teacher forcing and greedy generation alike; its
batched prompt path (different matmul kernels, llamafile sgemm) is reported too.

Teacher-forced, 20 texts of >= 64 tokens: top-1 agreement >= 99% over all
positions and mean |Δ logprob| of the actual next token <= 0.05 (the issue's
bar); positions whose logprob matches to float rounding are counted.
Free-running: greedy continuations of 5 chat prompts identical for 32 tokens.
The chat prompt for llama.cpp is rendered from the GGUF's own Jinja template
with jinja2 and tokenized by llama.cpp, so our chat template and tokenizer are
checked too.
"""

import jinja2
import numpy as np
import pytest

from conftest import llama_threads, run_troupe_json_lines, score_batch

llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is installed by scripts/setup.sh --with-test-deps")

from conformance_texts import CHAT_PROMPTS, TOPICS, make_text


@pytest.fixture(scope="module")
def llm(model_path):
    """llama.cpp with its usual batched prompt path (reported, and used for tokenization)."""
    return llama_cpp.Llama(model_path=str(model_path), n_ctx=1024, n_threads=llama_threads(), logits_all=True, verbose=False)


@pytest.fixture(scope="module")
def llm_one_token(model_path):
    """llama.cpp fed one token at a time (its decode path): the reference our forward pass reproduces."""
    return llama_cpp.Llama(model_path=str(model_path), n_ctx=1024, n_threads=llama_threads(), n_batch=1, n_ubatch=1,
                           logits_all=True, verbose=False)


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def reference_log_softmax(llama, tokens):
    llama.reset()
    llama.eval(tokens)
    return log_softmax(np.array(llama.scores[: len(tokens)]))


def test_teacher_forced_logits_match_llama_cpp(troupe_bin, llm, llm_one_token, tmp_path):
    agree = total = batched_agree = self_agree = exact = 0
    deltas, batched_deltas, self_deltas = [], [], []
    texts = [make_text(i, topic) for i, topic in enumerate(TOPICS)]
    for i, (text, ours) in enumerate(zip(texts, score_batch(tmp_path, texts), strict=True)):
        tokens = ours["tokens"]
        assert len(tokens) >= 64, f"text {i} has only {len(tokens)} tokens"
        # Same tokenization as llama.cpp's own (no BOS for this model).
        assert llm.tokenize(text.encode(), add_bos=False, special=True) == tokens
        ref = reference_log_softmax(llm_one_token, tokens)
        batched = reference_log_softmax(llm, tokens)
        ours_argmax = np.array(ours["argmax"])
        agree += int((ours_argmax == ref.argmax(axis=-1)).sum())
        batched_agree += int((ours_argmax == batched.argmax(axis=-1)).sum())
        self_agree += int((ref.argmax(axis=-1) == batched.argmax(axis=-1)).sum())
        total += len(tokens)
        idx = np.arange(len(tokens) - 1), tokens[1:]
        d = np.abs(np.array(ours["logprobs"]) - ref[idx])
        deltas.extend(d.tolist())
        exact += int((d <= 1e-5).sum())
        batched_deltas.extend(np.abs(np.array(ours["logprobs"]) - batched[idx]).tolist())
        self_deltas.extend(np.abs(ref[idx] - batched[idx]).tolist())
    agreement, mean_delta = agree / total, float(np.mean(deltas))
    print(f"\ntroupe vs llama.cpp one-token path: top-1 agreement {agreement:.4f} over {total} positions, "
          f"mean |Δ logprob| {mean_delta:.6f} (issue's bar: >= 0.99, <= 0.05); "
          f"logprob equal to float rounding (|Δ| <= 1e-5) at {exact}/{len(deltas)} positions")
    print(f"troupe vs llama.cpp batched path: top-1 agreement {batched_agree / total:.4f}, "
          f"mean |Δ logprob| {float(np.mean(batched_deltas)):.4f}")
    print(f"llama.cpp one-token vs batched: top-1 agreement {self_agree / total:.4f}, "
          f"mean |Δ logprob| {float(np.mean(self_deltas)):.4f}")
    assert agreement >= 0.99
    assert mean_delta <= 0.05




def reference_chat_tokens(llm, model_path, prompt):
    from gguf import GGUFReader

    reader = GGUFReader(str(model_path))
    field = reader.fields["tokenizer.chat_template"]
    source = bytes(field.parts[field.data[0]]).decode()
    text = jinja2.Environment().from_string(source).render(
        messages=[{"role": "user", "content": prompt}], add_generation_prompt=True)
    return llm.tokenize(text.encode(), add_bos=False, special=True)


@pytest.mark.parametrize("prompt", CHAT_PROMPTS)
def test_greedy_chat_continuations_match_llama_cpp(troupe_bin, llm, llm_one_token, model_path, prompt):
    lines = run_troupe_json_lines("generate", "--chat", "--prompt", prompt, "--max-tokens", 32, "--json")
    ours = [l["token"] for l in lines if "token" in l]
    assert lines[-1]["done"] is True
    prompt_tokens = reference_chat_tokens(llm, model_path, prompt)
    assert lines[-1]["prompt_tokens"] == len(prompt_tokens)
    ref_llm = llm_one_token  # llama.cpp's one-token path, prompt included
    ref_llm.reset()
    ref_llm.eval(prompt_tokens)
    ref = []
    eos = ref_llm.token_eos()
    for _ in range(32):
        tok = int(np.argmax(np.array(ref_llm.scores[ref_llm.n_tokens - 1])))
        if tok == eos:  # our stream ends here too (the end marker is not printed)
            break
        ref.append(tok)
        ref_llm.eval([tok])
    split = next((i for i, (a, b) in enumerate(zip(ours, ref)) if a != b), None)
    if split is None and len(ours) != len(ref):
        split = min(len(ours), len(ref))  # one answer ended (end of generation) where the other went on
    print(f"{prompt!r}: identical over {split if split is not None else len(ref)} tokens")
    assert len(ref) >= 8, "the reference answer is too short to compare"
    assert split is None, f"diverged at token {split}\nours {ours}\nref  {ref}"


@pytest.mark.parametrize("prompt", CHAT_PROMPTS[:2])
def test_sampled_token_logprobs_match_llama_cpp(troupe_bin, llm, llm_one_token, model_path, prompt):
    """`generate --logprobs 5`: each sampled token's logprob and the 5 most likely at its position equal
    log_softmax of llama.cpp's one-token-path logits for the same tokens (within 1e-3), sampled with a
    temperature so that the chosen token is not always the most likely."""
    lines = run_troupe_json_lines("generate", "--chat", "--prompt", prompt, "--max-tokens", 24, "--temperature",
                                  "0.9", "--seed", "11", "--json", "--logprobs", 5)
    toks = [l for l in lines if "token" in l]
    prompt_tokens = reference_chat_tokens(llm, model_path, prompt)
    ref = reference_log_softmax(llm_one_token, prompt_tokens + [t["token"] for t in toks])
    below_top = 0
    for i, t in enumerate(toks):
        row = ref[len(prompt_tokens) - 1 + i]
        assert t["logprob"] == pytest.approx(row[t["token"]], abs=1e-3), i
        top = sorted(range(len(row)), key=lambda k: (-row[k], k))[:5]
        assert [a["logprob"] for a in t["top_logprobs"]] == pytest.approx([row[k] for k in top], abs=1e-3), i
        below_top += t["token"] != t["top_logprobs"][0]["token"]
    assert len(toks) >= 8
    print(f"{prompt!r}: {len(toks)} tokens, {below_top} sampled below the top")

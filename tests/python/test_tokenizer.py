"""Troupe's tokenizer against Hugging Face `tokenizers` on the same GGUF file.

Reference: a `tokenizers.Tokenizer` built directly from the GGUF metadata
(read with the `gguf` package): BPE(vocab, merges), the pre-tokenizer of the
file's `tokenizer.ggml.pre` family (SmolLM2: Digits(individual_digits) then
ByteLevel(use_regex)), a ByteLevel decoder, control tokens added as special
tokens and user-defined tokens as plain added tokens. No torch is needed.
(`transformers.AutoTokenizer.from_pretrained(..., gguf_file=...)` imports
torch, and its GGUF converter has no "smollm" digit splitting, so it is not
used.)

Checks, over the >= 500 strings of tokenizer_corpus.build_corpus():
  * `troupe tokenize --batch` gives exactly the reference's ids;
  * the reference decodes our ids back to the original string;
  * `troupe tokenize --text` agrees on a few strings;
  * the golden chat prompts in tests/pipeline/text/testdata (which the C++
    ChatTemplate must reproduce) are what jinja2 renders from the GGUF's own
    chat template, and they tokenize identically.
"""
import json
import pathlib

import pytest
from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

from conftest import ROOT, run_troupe, run_troupe_json_lines
from tokenizer_corpus import build_corpus

CHAT_CASES = ROOT / "tests" / "pipeline" / "text" / "testdata" / "smollm2_chat_cases.json"

GPT2_SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
                r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
CONTROL, USER_DEFINED = 3, 4


def _field(reader, key, default=None):
    field = reader.fields.get(key)
    if field is None:
        return default
    if len(field.data) == 1 and key not in ("tokenizer.ggml.tokens", "tokenizer.ggml.merges"):
        value = field.parts[field.data[0]]
        return bytes(value).decode("utf-8") if field.types[0].name == "STRING" else value.tolist()[0]
    if field.types[-1].name == "STRING":
        return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
    return [field.parts[i].tolist()[0] for i in field.data]


def _pre_tokenizer(family):
    def split_then_bytes(pattern):
        return pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(pattern), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    if family == "smollm":
        return pre_tokenizers.Sequence([
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ])
    if family in ("gpt2", "default"):
        return pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    if family in ("llama-bpe", "llama3", "llama-v3"):
        return split_then_bytes(LLAMA3_SPLIT)
    if family in ("qwen2", "deepseek-r1-qwen"):
        return split_then_bytes(QWEN2_SPLIT)
    raise AssertionError(f"no reference pre-tokenizer for family {family!r}")


class Reference:
    """The HF tokenizer for a GGUF file, plus the BOS rule troupe applies."""

    def __init__(self, gguf_path):
        reader = GGUFReader(str(gguf_path))
        assert _field(reader, "tokenizer.ggml.model") == "gpt2", "only byte-level BPE models are cross-checked"
        tokens = _field(reader, "tokenizer.ggml.tokens")
        types = _field(reader, "tokenizer.ggml.token_type", [1] * len(tokens))
        merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
        self.family = _field(reader, "tokenizer.ggml.pre", "default")
        self.chat_template = _field(reader, "tokenizer.chat_template", "")
        self.bos_id = _field(reader, "tokenizer.ggml.bos_token_id")
        self.eos_id = _field(reader, "tokenizer.ggml.eos_token_id")
        self.add_bos = bool(_field(reader, "tokenizer.ggml.add_bos_token", False))
        self.tokens = tokens
        vocab = {}
        for i, t in enumerate(tokens):
            vocab.setdefault(t, i)
        tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        tok.pre_tokenizer = _pre_tokenizer(self.family)
        tok.decoder = decoders.ByteLevel()
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                for t, ty in zip(tokens, types) if ty == CONTROL])
        tok.add_tokens([AddedToken(t, special=False, normalized=False)
                        for t, ty in zip(tokens, types) if ty == USER_DEFINED])
        self.tokenizer = tok

    def encode(self, text):
        ids = self.tokenizer.encode(text, add_special_tokens=False).ids
        return ([self.bos_id] if self.add_bos else []) + ids

    def decode(self, ids):
        return self.tokenizer.decode(ids, skip_special_tokens=False)


@pytest.fixture(scope="module")
def reference(model_path):
    return Reference(model_path)


@pytest.fixture(scope="module")
def corpus():
    return build_corpus()


def _troupe_batch(troupe_bin, model_path, strings, tmp_path):
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(s) + "\n" for s in strings), encoding="utf-8")
    lines = run_troupe_json_lines("tokenize", "--batch", batch, "--model", model_path)
    assert len(lines) == len(strings), f"troupe printed {len(lines)} id lists for {len(strings)} strings"
    return lines


def _report(mismatches, total):
    shown = "\n".join(f"  text: {s!r}\n  troupe: {ours}\n  hf:     {ref}\n" for s, ours, ref in mismatches[:15])
    return f"{len(mismatches)} of {total} strings tokenize differently (first {min(15, len(mismatches))}):\n{shown}"


def test_corpus_is_large_and_deterministic(corpus):
    assert len(corpus) >= 500
    assert corpus == build_corpus()
    assert len(set(corpus)) > 450


def test_batch_ids_match_reference(troupe_bin, model_path, reference, corpus, tmp_path):
    ours = _troupe_batch(troupe_bin, model_path, corpus, tmp_path)
    mismatches = [(s, o, reference.encode(s)) for s, o in zip(corpus, ours) if o != reference.encode(s)]
    assert not mismatches, _report(mismatches, len(corpus))


def test_reference_decodes_our_ids(troupe_bin, model_path, reference, corpus, tmp_path):
    ours = _troupe_batch(troupe_bin, model_path, corpus, tmp_path)
    bad = []
    for s, ids in zip(corpus, ours):
        body = ids[1:] if reference.add_bos else ids
        if reference.decode(body) != s:
            bad.append((s, ids, reference.decode(body)))
    assert not bad, "\n".join(f"text {s!r}: ids {i} decode to {d!r}" for s, i, d in bad[:15])


@pytest.mark.parametrize("text", ["Hello, world!", "x = 12345\n\ty  = 'abc'", "<|im_start|>user\nHi<|im_end|>",
                                  "naïve 😀👩\u200d💻 日本語"])
def test_single_text_matches_reference(troupe_bin, model_path, reference, text):
    ours = json.loads(run_troupe("tokenize", "--text", text, "--model", model_path))
    assert ours == reference.encode(text), f"text {text!r}: troupe {ours} vs hf {reference.encode(text)}"


def _render_jinja(source, messages, add_generation_prompt, reference):
    """Renders a chat template the way transformers' apply_chat_template does."""
    jinja2_sandbox = pytest.importorskip("jinja2.sandbox")

    def raise_exception(message):
        raise ValueError(message)

    env = jinja2_sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = raise_exception
    return env.from_string(source).render(
        messages=messages, add_generation_prompt=add_generation_prompt,
        bos_token=reference.tokens[reference.bos_id], eos_token=reference.tokens[reference.eos_id])


def test_golden_chat_prompts_are_jinja_renderings(reference):
    cases = json.loads(CHAT_CASES.read_text(encoding="utf-8"))["cases"]
    assert len(cases) >= 5
    assert reference.chat_template, "the model has no chat template"
    for case in cases:
        rendered = _render_jinja(reference.chat_template, case["messages"], case["add_generation_prompt"], reference)
        assert rendered == case["expected"], f"jinja2 renders {rendered!r}, golden file says {case['expected']!r}"


def test_chat_prompts_tokenize_like_reference(troupe_bin, model_path, reference, tmp_path):
    prompts = [c["expected"] for c in json.loads(CHAT_CASES.read_text(encoding="utf-8"))["cases"]]
    ours = _troupe_batch(troupe_bin, model_path, prompts, tmp_path)
    mismatches = [(s, o, reference.encode(s)) for s, o in zip(prompts, ours) if o != reference.encode(s)]
    assert not mismatches, _report(mismatches, len(prompts))
    # The chat prompt starts with <|im_start|>, which is SmolLM2's BOS: no second BOS.
    assert all(ids[0] == reference.bos_id and ids[1] != reference.bos_id for ids in ours)

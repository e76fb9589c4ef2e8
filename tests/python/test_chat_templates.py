"""Chat templates: our Jinja interpreter (pipeline/text/jinja, through
`troupe chat-template`) renders real models' chat templates byte for byte as
transformers' apply_chat_template does — jinja2's ImmutableSandboxedEnvironment
with trim_blocks, lstrip_blocks and loop controls, raise_exception,
strftime_now, tojson, namespace and dict, as transformers compiles it
(_compile_jinja_template) — over the conversations of chat_conversations.py;
a conversation the template refuses (raise_exception, an undefined message)
must fail in both. The templates are tests/pipeline/text/testdata/
chat_templates/*.jinja (README.md there says where each came from)."""
import json
import pathlib

import pytest

from chat_conversations import BASE, CASES
from conftest import ROOT, run_troupe, run_troupe_json_lines
import jinja_cases

TEMPLATES = ROOT / "tests" / "pipeline" / "text" / "testdata" / "chat_templates"
JINJA_CASES = ROOT / "tests" / "pipeline" / "text" / "testdata" / "jinja_cases.json"

# The special-token texts each family's tokenizer gives bos_token and eos_token.
TOKENS = {
    "smollm2": ("<|im_start|>", "<|im_end|>"),
    "qwen2.5": ("", "<|im_end|>"),
    "deepseek-r1": ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "gemma": ("<bos>", "<eos>"),
    "llama-3": ("<|begin_of_text|>", "<|eot_id|>"),
    "phi-3": ("<s>", "<|endoftext|>"),
}


def _tokens(name):
    return next((v for k, v in TOKENS.items() if name.startswith(k)), ("<s>", "</s>"))


def _compile(source):
    chat_template_utils = pytest.importorskip("transformers.utils.chat_template_utils")
    return chat_template_utils._compile_jinja_template(source)


def _reference(template, case, bos, eos):
    """jinja2's rendering as apply_chat_template calls it, or None when it raises."""
    try:
        return template.render(messages=case["messages"], tools=None, documents=None,
                               add_generation_prompt=case["add_generation_prompt"], bos_token=bos, eos_token=eos)
    except Exception:  # noqa: BLE001 - any refusal counts; ours must refuse too
        return None


def test_corpus_is_real_and_documented():
    files = sorted(TEMPLATES.glob("*.jinja"))
    assert len(files) >= 24, [f.name for f in files]
    readme = (TEMPLATES / "README.md").read_text(encoding="utf-8")
    for f in files:
        assert f.name in readme, f"{f.name} is not in README.md"
    assert len(BASE) >= 30 and len(CASES) == 2 * len(BASE)


@pytest.mark.parametrize("path", sorted(TEMPLATES.glob("*.jinja")), ids=lambda p: p.stem)
def test_template_renders_like_transformers(troupe_bin, tmp_path, path):
    bos, eos = _tokens(path.name)
    batch = tmp_path / "cases.jsonl"
    batch.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES), encoding="utf-8")
    ours = run_troupe_json_lines("chat-template", "--template-file", path, "--bos-token", bos, "--eos-token", eos,
                                 "--messages-json", batch, "--batch")
    assert len(ours) == len(CASES)
    template = _compile(path.read_text(encoding="utf-8"))
    mismatches, rendered = [], 0
    for case, got in zip(CASES, ours):
        want = _reference(template, case, bos, eos)
        if want is None:
            if "error" not in got:
                mismatches.append((case, "jinja2 raises", got))
        elif got.get("text") != want:
            mismatches.append((case, want, got))
        else:
            rendered += 1
    assert not mismatches, f"{len(mismatches)} of {len(CASES)} differ; first: {mismatches[0]!r}"
    # Not a comparison of refusals only: many conversations render (Gemma 2
    # and Mistral v0.2 refuse every system message, so not all).
    assert rendered >= len(CASES) // 2, f"only {rendered} of {len(CASES)} rendered"


def test_model_template_renders_like_transformers(troupe_bin, model_path, tmp_path):
    """--model: SmolLM2's own template from its GGUF, with its BOS and EOS texts."""
    from gguf import GGUFReader

    reader = GGUFReader(str(model_path))

    def field(key):
        f = reader.fields[key]
        return f.parts[f.data[0]]

    tokens = reader.fields["tokenizer.ggml.tokens"]
    token_text = lambda i: bytes(tokens.parts[tokens.data[i]]).decode()  # noqa: E731
    source = bytes(field("tokenizer.chat_template")).decode()
    bos, eos = token_text(int(field("tokenizer.ggml.bos_token_id")[0])), token_text(int(field("tokenizer.ggml.eos_token_id")[0]))
    template = _compile(source)
    for case in CASES[:20]:
        messages = tmp_path / "messages.json"
        messages.write_text(json.dumps(case["messages"], ensure_ascii=False), encoding="utf-8")
        args = ["chat-template", "--model", model_path, "--messages-json", messages]
        if case["add_generation_prompt"]:
            args.append("--add-generation-prompt")
        assert run_troupe(*args) == _reference(template, case, bos, eos), case


def test_jinja_cases_file_is_jinja2s_rendering():
    """The golden file jinja_test.cpp checks our interpreter against is what jinja2 renders today."""
    pytest.importorskip("transformers.utils.chat_template_utils")
    assert json.loads(JINJA_CASES.read_text(encoding="utf-8")) == jinja_cases.build()


GEMMA = ROOT / ".deps" / "model-gemma3" / "gemma-3-270m-q4_k_m.gguf"


@pytest.mark.skipif(not GEMMA.exists(), reason=f"{GEMMA} is missing: scripts/setup.sh --with-test-deps")
def test_gemma3_file_without_template_renders_the_official_one(troupe_bin, tmp_path):
    """Gemma 3's GGUF has no tokenizer.chat_template: troupe picks its built-in
    Gemma 3 template, which must render as jinja2 renders Google's template
    with the file's BOS and EOS texts."""
    from gguf import GGUFReader

    reader = GGUFReader(str(GEMMA))
    assert "tokenizer.chat_template" not in reader.fields
    template = _compile((TEMPLATES / "gemma-3-it.jinja").read_text(encoding="utf-8"))
    batch = tmp_path / "cases.jsonl"
    batch.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in CASES), encoding="utf-8")
    ours = run_troupe_json_lines("chat-template", "--model", GEMMA, "--messages-json", batch, "--batch")
    assert len(ours) == len(CASES)
    mismatches = []
    for case, got in zip(CASES, ours):
        want = _reference(template, case, "<bos>", "<eos>")
        if (want is None and "error" not in got) or (want is not None and got.get("text") != want):
            mismatches.append((case, want, got))
    assert not mismatches, f"{len(mismatches)} of {len(CASES)} differ; first: {mismatches[0]!r}"

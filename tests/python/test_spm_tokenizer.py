"""Troupe's SentencePiece tokenizer against llama.cpp and Hugging Face on the
real Gemma 3 270M GGUF (262144 tokens, tokenizer.ggml.model "llama",
add_space_prefix false).

References:
  * llama.cpp (our reference runtime): `llama_cpp.Llama(path, vocab_only=True)
    .tokenize(text, add_bos=True, special=True)` and `.detokenize`;
  * Hugging Face: transformers' own GGUF tokenizer conversion,
    `AutoTokenizer.from_pretrained(dir, gguf_file=...)` (a GemmaTokenizer),
    run in a subprocess by hf_gguf_tokenizer.py (it needs a stand-in torch).

Checks, over tokenizer_corpus.build_corpus() (>= 500 strings) plus control
characters:
  * `troupe tokenize --batch` gives exactly llama.cpp's ids, every string;
  * it gives exactly Hugging Face's ids on every string but those where the
    two references disagree with each other, which must all be of the two
    known kinds (hf_may_differ below) — and there troupe follows llama.cpp;
  * both references decode our ids back to the string ("▁" in the text comes
    back as a space, in all three);
  * `troupe tokenize --text` with invalid UTF-8 bytes matches llama.cpp.
  * with add_space_prefix flipped to true in a copy of the file (Llama 2 /
    Mistral v0.x style dummy prefix), troupe still gives llama.cpp's ids on
    every string.

Skipped only when the Gemma file (scripts/setup.sh --with-test-deps installs
it) or a reference package is absent.
"""
import json
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, TROUPE_BIN, run_troupe_json_lines
from tokenizer_corpus import build_corpus

GEMMA = ROOT / ".deps" / "model-gemma3" / "gemma-3-270m-q4_k_m.gguf"
HF_HELPER = ROOT / "tests" / "python" / "hf_gguf_tokenizer.py"
BOS = 2

pytestmark = pytest.mark.skipif(not GEMMA.exists(), reason=f"{GEMMA} is missing: scripts/setup.sh --with-test-deps")

# Strings only for this vocabulary: control characters (SmolLM2 has no token
# for some of them, so they are not in the shared corpus).
EXTRA = ["\x00", "a\x00b", "\x01\x02\x03", "\x7f", "\x1b[31mred\x1b[0m", "bell\x07", "\x1f\x1e"]


def hf_may_differ(text):
    """Where llama.cpp and Hugging Face tokenize Gemma differently.

    Gemma's multi-space tokens (ids 138..167, 2 to 31 spaces) are stored with
    real spaces and typed user-defined. llama.cpp matches them in the raw text
    before anything else, longest first; transformers' gemma converter instead
    respells them as "▁" runs and leaves them to BPE merges (ranked by file
    position). So the two differ (1) on a run of 32 or more spaces (llama.cpp:
    31 spaces then the rest; HF: e.g. 16 + 17 for 33), and (2) where the text
    itself holds "▁" (U+2581): HF merges "▁▁" into a space-run token,
    llama.cpp cannot (its "▁▁" tokens are spelled with spaces).
    """
    return "\u2581" in text or re.search(" {32,}", text) is not None


@pytest.fixture(scope="module")
def corpus():
    strings = build_corpus() + EXTRA
    assert len(strings) >= 500
    return strings


@pytest.fixture(scope="module")
def llama():
    llama_cpp = pytest.importorskip("llama_cpp")
    return llama_cpp.Llama(model_path=str(GEMMA), vocab_only=True, verbose=False)


def _hf(items):
    """Hugging Face's answer to each item: ids for a string, text for an id list."""
    pytest.importorskip("transformers")
    args = [sys.executable, str(HF_HELPER), str(GEMMA)]
    stdin = "".join(json.dumps(x) + "\n" for x in items)
    proc = subprocess.run(args, input=stdin.encode(), capture_output=True, timeout=600)
    assert proc.returncode == 0, f"hf_gguf_tokenizer.py failed: {proc.stderr.decode(errors='replace')[-3000:]}"
    lines = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    assert len(lines) == len(items)
    return lines


@pytest.fixture(scope="module")
def ours(corpus, tmp_path_factory):
    assert TROUPE_BIN.exists(), f"{TROUPE_BIN} is missing: run scripts/setup.sh first"
    batch = tmp_path_factory.mktemp("spm") / "batch.jsonl"
    batch.write_text("".join(json.dumps(s) + "\n" for s in corpus), encoding="utf-8")
    lines = run_troupe_json_lines("tokenize", "--batch", batch, "--model", GEMMA)
    assert len(lines) == len(corpus), f"troupe printed {len(lines)} id lists for {len(corpus)} strings"
    return lines


# The two kinds of HF/llama.cpp disagreement, pinned in test_known_differences_exactly.
PINNED = [" " * 33, "\u2581\u2581x"]


@pytest.fixture(scope="module")
def hf(corpus, ours):
    """One run of the HF helper (it takes ~15 s to load): the ids of corpus and
    PINNED, and the text of each of our id lists (without BOS)."""
    answers = _hf(corpus + PINNED + [ids[1:] for ids in ours])
    n = len(corpus)
    return {"ids": answers[:n], "pinned": answers[n:n + len(PINNED)], "decoded": answers[n + len(PINNED):]}


def _report(rows, what):
    shown = "\n".join(f"  text: {s!r}\n  troupe: {o}\n  {what}: {r}\n" for s, o, r in rows[:15])
    return f"{len(rows)} strings tokenize differently from {what} (first {min(15, len(rows))}):\n{shown}"


def test_batch_ids_match_llama_cpp(corpus, ours, llama):
    ref = [llama.tokenize(s.encode("utf-8"), add_bos=True, special=True) for s in corpus]
    mismatches = [(s, o, r) for s, o, r in zip(corpus, ours, ref) if o != r]
    assert not mismatches, _report(mismatches, "llama.cpp")
    assert all(ids[0] == BOS for ids in ours)


def test_batch_ids_match_hugging_face_except_known_differences(corpus, ours, hf, llama):
    mismatches = [(s, o, r) for s, o, r in zip(corpus, ours, hf["ids"]) if o != r]
    unexplained = [m for m in mismatches if not hf_may_differ(m[0])]
    assert not unexplained, _report(unexplained, "hf")
    # Where HF differs, llama.cpp disagrees with HF too (troupe == llama.cpp is
    # the test above); and the known kinds are really exercised.
    for s, _, r in mismatches:
        assert llama.tokenize(s.encode("utf-8"), add_bos=True, special=True) != r, s
    assert any("\u2581" in s for s, _, _ in mismatches) and any(" " * 32 in s for s, _, _ in mismatches)


def test_known_differences_exactly(llama, hf, tmp_path):
    """The two kinds of HF/llama.cpp disagreement, pinned."""
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(t) + "\n" for t in PINNED), encoding="utf-8")
    ours = run_troupe_json_lines("tokenize", "--batch", batch, "--model", GEMMA)
    lc = [llama.tokenize(t.encode(), add_bos=True, special=True) for t in PINNED]
    assert ours == lc == [[BOS, 167, 138], [BOS, 236743, 1123]]  # 31+2 spaces; ▁ + ▁x
    assert hf["pinned"] == [[BOS, 152, 153], [BOS, 138, 236781]]  # 16+17 spaces; "▁▁" + x


def test_references_decode_our_ids(corpus, ours, llama, hf):
    expected = [s.replace("\u2581", " ") for s in corpus]  # "▁" in the text decodes as a space, in all three
    bad = [(s, ids) for s, e, ids in zip(corpus, expected, ours)
           if llama.detokenize(ids[1:], special=True).decode("utf-8") != e]
    assert not bad, "\n".join(f"llama.cpp decodes {i} to something else than {s!r}" for s, i in bad[:10])
    bad = [(s, d) for s, e, d in zip(corpus, expected, hf["decoded"]) if d != e]
    assert not bad, "\n".join(f"hf decodes {s!r} as {d!r}" for s, d in bad[:10])


INVALID_UTF8 = [b"\xff", b"ab\xc3", b"\xf0 a", b"\xe2\x96", b"x\x80y", b"\xc3\xa9\xe9 caf\xc3", b"\xf0\x9f\x98"]


@pytest.mark.parametrize("raw", INVALID_UTF8)
def test_invalid_utf8_matches_llama_cpp(raw, llama):
    proc = subprocess.run([str(TROUPE_BIN), "tokenize", "--text", raw, "--model", str(GEMMA)], capture_output=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    assert json.loads(proc.stdout) == llama.tokenize(raw, add_bos=True, special=True)


@pytest.fixture(scope="module")
def gemma_with_prefix(tmp_path_factory):
    """A copy of the Gemma file with tokenizer.ggml.add_space_prefix flipped
    to true (one byte), as Llama 2 and Mistral v0.x vocabularies have it."""
    key = b"tokenizer.ggml.add_space_prefix"
    with open(GEMMA, "rb") as f:
        header = f.read(16 << 20)  # the metadata comes first
    at = header.find(len(key).to_bytes(8, "little") + key) + 8 + len(key)
    assert at > 8 + len(key), "no add_space_prefix key in the Gemma file"
    assert header[at:at + 5] == (7).to_bytes(4, "little") + b"\x00", "add_space_prefix is not a false boolean"
    path = tmp_path_factory.mktemp("prefix") / "gemma-prefix.gguf"
    shutil.copyfile(GEMMA, path)
    with open(path, "r+b") as f:
        f.seek(at + 4)  # past the value type (7: bool)
        f.write(b"\x01")
    yield path
    path.unlink()


def test_dummy_prefix_matches_llama_cpp(corpus, gemma_with_prefix, llama, tmp_path):
    llama_cpp = pytest.importorskip("llama_cpp")
    llama_prefix = llama_cpp.Llama(model_path=str(gemma_with_prefix), vocab_only=True, verbose=False)
    batch = tmp_path / "batch.jsonl"
    batch.write_text("".join(json.dumps(s) + "\n" for s in corpus), encoding="utf-8")
    ours = run_troupe_json_lines("tokenize", "--batch", batch, "--model", gemma_with_prefix)
    ref = [llama_prefix.tokenize(s.encode("utf-8"), add_bos=True, special=True) for s in corpus]
    mismatches = [(s, o, r) for s, o, r in zip(corpus, ours, ref) if o != r]
    assert not mismatches, _report(mismatches, "llama.cpp with add_space_prefix")
    # The prefix really is there, after a control token too: "user" -> "▁user".
    chat = ours[corpus.index("<start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n")]
    space_user = llama.tokenize(b" user", add_bos=False, special=False)  # the file without the prefix
    assert len(space_user) == 1 and chat[:3] == [BOS, 105, space_user[0]]

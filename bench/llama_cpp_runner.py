"""One llama.cpp run (through llama-cpp-python), for bench/bench_single.py.

Prints one JSON line: prefill/decode tokens per second, greedy decode of
--max-tokens tokens, and this process's peak RSS. Only the `eval` calls are
timed (llama_decode and llama-cpp-python's bookkeeping); reading the last
row of logits (llama_get_logits_ith) and its argmax between steps are not.
(llama-cpp-python 0.3.36 keeps no scores with logits_all=False: `_scores`
stays zero, so the logits are read from the context itself.)
"""
import argparse
import ctypes
import json
import resource
import time

import llama_cpp
import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--prompt-tokens", required=True, help="JSON array of token ids")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    prompt = json.loads(args.prompt_tokens)
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=len(prompt) + args.max_tokens + 8, n_threads=args.threads,
                          n_threads_batch=args.threads, n_batch=512, logits_all=False, verbose=False)
    ctx, n_vocab = llm._ctx.ctx, llm.n_vocab()

    def greedy():
        row = llama_cpp.llama_get_logits_ith(ctx, -1)
        return int(np.argmax(np.ctypeslib.as_array(ctypes.cast(row, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,))))

    t0 = time.perf_counter()
    llm.eval(prompt)
    prefill_s = time.perf_counter() - t0
    decode_s = 0.0
    tok = greedy()
    for _ in range(args.max_tokens - 1):  # greedy, ignoring EOS so every run decodes the same count
        t0 = time.perf_counter()
        llm.eval([tok])
        decode_s += time.perf_counter() - t0
        tok = greedy()
    print(json.dumps({
        "prompt_tokens": len(prompt),
        "generated_tokens": args.max_tokens,
        "prefill_tokens_per_s": len(prompt) / prefill_s,
        "decode_tokens_per_s": (args.max_tokens - 1) / decode_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }))


if __name__ == "__main__":
    main()

"""llama.cpp decoding K sequences in one batch: the peer for K concurrent sessions.

Through llama-cpp-python's low-level API (its parallel-slots path): one
context with n_seq_max = K, each sequence's prompt prefilled as its own
sequence, then every decode step is one `llama_decode` of a K-token batch
(`llama_batch_init(K, 0, K)`, token i with `seq_id = i`), greedy per
sequence. Prints one JSON line: the aggregate decode tokens/s (K x steps over
the time of the decode steps only), the aggregate prefill tokens/s and this
process's peak RSS.

    .venv/bin/python bench/llama_cpp_batch.py --model M --prompt-tokens '[[...], ...]' --max-tokens 128 --threads 2
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
    ap.add_argument("--prompt-tokens", required=True, help="JSON array of K token-id arrays, one per sequence")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    prompts = json.loads(args.prompt_tokens)
    k = len(prompts)
    longest = max(len(p) for p in prompts)

    quiet = llama_cpp.llama_log_callback(lambda level, text, user_data: None)
    llama_cpp.llama_log_set(quiet, ctypes.c_void_p(0))  # keep `quiet` alive: llama.cpp holds the pointer
    llama_cpp.llama_backend_init()
    mparams = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(args.model.encode(), mparams)
    assert model, f"cannot load {args.model}"
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_seq_max = k
    cparams.n_ctx = k * (longest + args.max_tokens + 16)  # each sequence gets n_ctx / n_seq_max cells
    cparams.n_batch = cparams.n_ubatch = max(512, k)
    cparams.n_threads = cparams.n_threads_batch = args.threads
    ctx = llama_cpp.llama_init_from_model(model, cparams)
    assert ctx, "cannot create the context"
    vocab = llama_cpp.llama_model_get_vocab(model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)

    def logits_row(i):
        ptr = llama_cpp.llama_get_logits_ith(ctx, i)
        return np.ctypeslib.as_array(ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(n_vocab,))

    batch = llama_cpp.llama_batch_init(max(longest, k), 0, k)
    nxt = []
    t0 = time.perf_counter()
    for s, prompt in enumerate(prompts):  # each prompt as its own sequence, as sessions arrive
        batch.n_tokens = len(prompt)
        for i, tok in enumerate(prompt):
            batch.token[i], batch.pos[i], batch.n_seq_id[i] = tok, i, 1
            batch.seq_id[i][0] = s
            batch.logits[i] = i == len(prompt) - 1
        assert llama_cpp.llama_decode(ctx, batch) == 0, "prefill failed"
        nxt.append(int(np.argmax(logits_row(len(prompt) - 1))))
    prefill_s = time.perf_counter() - t0

    pos = [len(p) for p in prompts]
    decode_s = 0.0
    for _ in range(args.max_tokens - 1):  # greedy, ignoring EOS so every sequence decodes the same count
        batch.n_tokens = k
        for s in range(k):
            batch.token[s], batch.pos[s], batch.n_seq_id[s] = nxt[s], pos[s], 1
            batch.seq_id[s][0] = s
            batch.logits[s] = True
        t0 = time.perf_counter()
        assert llama_cpp.llama_decode(ctx, batch) == 0, "decode failed"
        decode_s += time.perf_counter() - t0
        nxt = [int(np.argmax(logits_row(s))) for s in range(k)]
        pos = [p + 1 for p in pos]
    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
    llama_cpp.llama_model_free(model)
    print(json.dumps({
        "sequences": k,
        "prompt_tokens": sum(len(p) for p in prompts),
        "generated_tokens_per_sequence": args.max_tokens,
        "prefill_tokens_per_s": sum(len(p) for p in prompts) / prefill_s,
        "decode_tokens_per_s": k * (args.max_tokens - 1) / decode_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
    }))


if __name__ == "__main__":
    main()

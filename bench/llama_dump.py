"""Dump llama.cpp's intermediate tensors for a prompt fed one token at a time.

Usage: .venv/bin/python bench/llama_dump.py MODEL.gguf OUT.npz TOKEN [TOKEN ...]

Runs llama.cpp (llama-cpp-python's libllama) with n_batch = n_ubatch = 1 and
n_ctx = 1024 (the conformance test's settings), decoding the tokens one by
one, and records every graph tensor through the eval callback (cb_eval) as
"<step>/<name>" -> float32 array in logical ggml order (ne reversed into a
numpy shape). Used with bench/forward_dump (ours) to find the first op whose
output is not bit-identical.
"""
import ctypes
import sys

import numpy as np
import llama_cpp

GGML_MAX_DIMS, GGML_MAX_SRC, GGML_MAX_OP_PARAMS, GGML_MAX_NAME = 4, 10, 64, 64


class GgmlTensor(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("buffer", ctypes.c_void_p),
        ("ne", ctypes.c_int64 * GGML_MAX_DIMS),
        ("nb", ctypes.c_size_t * GGML_MAX_DIMS),
        ("op", ctypes.c_int),
        ("op_params", ctypes.c_int32 * (GGML_MAX_OP_PARAMS // 4)),
        ("flags", ctypes.c_int32),
        ("src", ctypes.c_void_p * GGML_MAX_SRC),
        ("view_src", ctypes.c_void_p),
        ("view_offs", ctypes.c_size_t),
        ("data", ctypes.c_void_p),
        ("name", ctypes.c_char * GGML_MAX_NAME),
        ("extra", ctypes.c_void_p),
        ("padding", ctypes.c_char * 8),
    ]


def main():
    model_path, out_path = sys.argv[1], sys.argv[2]
    tokens = [int(t) for t in sys.argv[3:]]
    dumps = {}
    step = [0]

    def cb(t_ptr, ask, user):
        t = ctypes.cast(t_ptr, ctypes.POINTER(GgmlTensor)).contents
        if ask:
            return True
        if t.type not in (0, 1) or not t.data:  # f32 / f16 only
            return True
        name = t.name.decode()
        itemsize = 4 if t.type == 0 else 2
        ne = list(t.ne)
        nb = list(t.nb)
        span = sum((n - 1) * b for n, b in zip(ne, nb)) + itemsize
        raw = (ctypes.c_uint8 * span).from_address(t.data)
        buf = np.frombuffer(bytes(raw), dtype=np.uint8)
        dt = np.float32 if t.type == 0 else np.float16
        a = np.ndarray(shape=tuple(reversed(ne)), dtype=dt, buffer=buf.tobytes(), offset=0,
                       strides=tuple(reversed(nb)))
        key = f"{step[0]}/{name}"
        k, i = key, 1
        while k in dumps:
            k = f"{key}#{i}"
            i += 1
        dumps[k] = np.array(a, dtype=np.float32)
        return True

    cb_type = llama_cpp.ggml_backend_sched_eval_callback
    cb_fn = cb_type(cb)
    llama_cpp.llama_backend_init()
    mparams = llama_cpp.llama_model_default_params()
    model = llama_cpp.llama_model_load_from_file(model_path.encode(), mparams)
    cparams = llama_cpp.llama_context_default_params()
    cparams.n_ctx = 1024
    cparams.n_batch = 1
    cparams.n_ubatch = 1
    cparams.n_threads = 2
    cparams.n_threads_batch = 2
    cparams.flash_attn_type = llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
    cparams.cb_eval = cb_fn
    cparams.cb_eval_user_data = None
    ctx = llama_cpp.llama_init_from_model(model, cparams)
    batch = llama_cpp.llama_batch_init(1, 0, 1)
    n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(model))
    for i, tok in enumerate(tokens):
        step[0] = i
        batch.n_tokens = 1
        batch.token[0] = tok
        batch.pos[0] = i
        batch.n_seq_id[0] = 1
        batch.seq_id[0][0] = 0
        batch.logits[0] = True
        assert llama_cpp.llama_decode(ctx, batch) == 0
        logits = llama_cpp.llama_get_logits_ith(ctx, 0)
        dumps[f"{i}/logits"] = np.ctypeslib.as_array(logits, shape=(n_vocab,)).copy()
    np.savez(out_path, **dumps)
    print(f"{len(dumps)} tensors -> {out_path}")


if __name__ == "__main__":
    main()

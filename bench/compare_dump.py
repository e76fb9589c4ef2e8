"""Compare our intermediate tensors (bench/forward_dump) with llama.cpp's
(bench/llama_dump.py), step by step, layer by layer, and report the first
tensor that is not bit-identical at each step.

Usage: .venv/bin/python bench/compare_dump.py OURS.bin REF.npz [--all]
"""
import struct
import sys

import numpy as np

# our probe name -> llama.cpp graph tensor name (layer appended as -N)
# (Gemma 3's graph names some of them differently: kqv_out, sa_out; its extra
# tensors are Qcur_normed, Kcur_normed, attn_post_norm, ffn_geglu, ffn_post_norm.)
NAMES = [("attn_norm", "attn_norm"), ("Qcur", "Qcur"), ("Kcur", "Kcur"), ("Vcur", "Vcur"),
         ("Qcur_normed", "Qcur_normed"), ("Kcur_normed", "Kcur_normed"),
         ("Qrope", "Qcur#2"), ("Krope", "Kcur#2"), ("kqv", "kqv-permuted"), ("kqv_out", "attn_out"),
         ("attn_post_norm", "attn_post_norm"), ("ffn_inp", "ffn_inp"),
         ("ffn_inp", "sa_out"), ("ffn_norm", "ffn_norm"), ("ffn_gate", "ffn_gate"), ("ffn_up", "ffn_up"),
         ("ffn_swiglu", "ffn_swiglu"), ("ffn_geglu", "ffn_geglu"), ("ffn_out", "ffn_out"),
         ("ffn_post_norm", "ffn_post_norm"), ("l_out", "l_out")]


def read_ours(path):
    out = {}
    with open(path, "rb") as f:
        while True:
            h = f.read(4)
            if not h:
                break
            (n,) = struct.unpack("<I", h)
            name = f.read(n).decode()
            (cnt,) = struct.unpack("<q", f.read(8))
            out[name] = np.frombuffer(f.read(4 * cnt), dtype=np.float32)
    return out


def ref_key(ref, step, rname, layer):
    base, _, suffix = rname.partition("#")
    if rname == "kqv-permuted":
        return f"{step}/kqv-{layer} (permuted)"
    key = f"{step}/{base}-{layer}"
    return key + (f"#{suffix}" if suffix else "")


def main():
    ours, ref = read_ours(sys.argv[1]), np.load(sys.argv[2])
    show_all = "--all" in sys.argv
    steps = sorted({int(k.split("/")[0]) for k in ours})
    exact_logits = 0
    for s in steps:
        first = None
        # Scaled embeddings (Gemma) are llama.cpp's inp_scaled.
        embd = f"{s}/inp_scaled" if f"{s}/inp_scaled" in ref.files else f"{s}/embd"
        seq = [("embd", f"{s}/embd", embd)]
        for layer in range(128):
            for o, r in NAMES:
                seq.append((f"{o}-{layer}", f"{s}/{o}-{layer}", ref_key(ref, s, r, layer)))
        seq.append(("logits", f"{s}/logits", f"{s}/logits"))
        for label, ok, rk in seq:
            if ok not in ours or rk not in ref.files:
                continue
            a, b = ours[ok], ref[rk].reshape(-1)
            nd = int((a.view(np.uint32) != b.view(np.uint32)).sum())
            if nd and first is None:
                first = label
            if show_all or (nd and label == first):
                print(f"step {s} {label}: {nd}/{a.size} differ, max |d| {np.abs(a - b).max():.3g}")
        if first is None:
            exact_logits += 1
        print(f"step {s}: first mismatch {first}")
    print(f"{exact_logits}/{len(steps)} steps bit-identical")


if __name__ == "__main__":
    main()
